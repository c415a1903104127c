"""Settings stick to the session (issue 10, item 14): the model, base URL and context
budget a session ran with are recorded in its header and reused by `--resume` and
`compact ID` unless a flag or the environment says otherwise; config.toml's unknown keys
are reported with the nearest known one; `--home` works after the command too."""

import json
import os
from pathlib import Path

from gitsessions.store import here
from gitsessions.store.sessions import Change, touch
from tests.conftest import exec_args, run_gitsessions
from tests.test_compact_cli import SUMMARIZER, big_session


def _exec(server, workspace, *args: str, env: dict[str, str] | None = None):
    done = run_gitsessions(*exec_args(server, workspace), *args, "--json", env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _info(session: str) -> dict:
    done = run_gitsessions("info", session, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_new_session_records_its_settings(server, workspace):
    sid = _exec(server, workspace, "hello", "--max-context-tokens", "30000")["session"]
    assert _info(sid)["settings"] == {
        "model": "fake-model",
        "base_url": server.base_url,
        "max_context_tokens": 30000,
    }
    shown = run_gitsessions("info", sid).stdout
    assert f"fake-model at {server.base_url}, 30,000 tokens" in shown


def test_resume_reuses_the_recorded_model_endpoint_and_budget(server, workspace):
    sid = _exec(server, workspace, "hello", "--max-context-tokens", "30000")["session"]
    before = len(server.requests)
    # no --base-url, no --model: without the recorded settings this would go to Ollama
    done = run_gitsessions("exec", "--resume", sid, "again", "--workspace", str(workspace))
    assert done.returncode == 0, done.stderr
    assert len(server.requests) > before
    assert {r["model"] for r in server.requests[before:]} == {"fake-model"}
    assert _info(sid)["settings"]["max_context_tokens"] == 30000


def test_a_flag_or_the_environment_overrides_and_is_recorded(server, workspace):
    sid = _exec(server, workspace, "hello")["session"]
    done = run_gitsessions(
        "exec", "--resume", sid, "again", "--workspace", str(workspace),
        "--max-context-tokens", "40000",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert _info(sid)["settings"]["max_context_tokens"] == 40000
    env = dict(os.environ, GITSESSIONS_MODEL="other-model")
    done = run_gitsessions("exec", "--resume", sid, "third", "--workspace", str(workspace), env=env)
    assert done.returncode == 0, done.stderr
    assert server.requests[-1]["model"] == "other-model"
    assert _info(sid)["settings"] == {
        "model": "other-model",
        "base_url": server.base_url,
        "max_context_tokens": 40000,
    }


def test_config_toml_does_not_override_what_the_session_recorded(server, workspace, home):
    sid = _exec(server, workspace, "hello")["session"]
    (home / "config.toml").write_text('model = "config-model"\n')
    done = run_gitsessions("exec", "--resume", sid, "again", "--workspace", str(workspace))
    assert done.returncode == 0, done.stderr
    assert server.requests[-1]["model"] == "fake-model"


def test_compact_id_uses_the_session_settings(server, store, make_session):
    head = big_session(store, make_session)
    here.remember_endpoint(store.home, server.base_url)  # this home ran with it before
    settings = {"model": "fake", "base_url": server.base_url, "max_context_tokens": 3000}
    store.commit(head, Change(header=touch(head.header, settings=settings)), event="rename",
                 subject="settings")  # fmt: skip
    server.responder = lambda request: "Summary: modules read."
    done = run_gitsessions("compact", head.id[:8], "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["outcome"] == "compacted", report
    assert any(SUMMARIZER in json.dumps(r) for r in server.requests)
    assert {r["model"] for r in server.requests} == {"fake"}


def test_unknown_config_keys_are_reported_with_the_nearest_known_key(home):
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text('modle = "x"\nbase_ulr = "http://a/v1"\nzzz = 1\n')
    done = run_gitsessions("gc")  # a command that reads the settings (`list` needs none)
    assert done.returncode == 0, done.stderr
    assert "unknown key 'modle' (did you mean 'model'?)" in done.stderr
    assert "unknown key 'base_ulr' (did you mean 'base_url'?)" in done.stderr
    assert "unknown key 'zzz' (known: model, base_url" in done.stderr
    assert done.stderr.count("modle") == 1  # once a command


def test_home_works_after_the_command(tmp_path: Path, server, workspace):
    other = tmp_path / "other-home"
    done = run_gitsessions(*exec_args(server, workspace), "hi", "--home", str(other))
    assert done.returncode == 0, done.stderr
    assert (other / "store.git").is_dir()
    listed = run_gitsessions("list", "--home", str(other), "--json")
    assert listed.returncode == 0, listed.stderr
    assert len(json.loads(listed.stdout)) == 1
    listed = run_gitsessions("list", f"--home={other}", "--json")
    assert len(json.loads(listed.stdout)) == 1
    assert json.loads(run_gitsessions("list", "--json").stdout) == []  # the default home
