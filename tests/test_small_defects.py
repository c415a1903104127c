"""The smaller defects of issue 31 (item 6), each on a real process, and of issue 41
(item 10): what a user saw, then what they see now."""

import json
import os
from pathlib import Path

import pytest

from gitsessions.cli.agent_setup import cost_function
from gitsessions.services.settings.config import ModelSettings
from tests.conftest import exec_args, run_gitsessions


def test_a_malformed_config_does_not_break_list_which_needs_no_settings(server, home, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    server.reply(content="ok")
    server.reply(content="a summary")
    made = run_gitsessions(*exec_args(server, ws), "hello", "--json")
    assert made.returncode == 0, made.stderr
    sid = json.loads(made.stdout)["session"]
    (home / "config.toml").write_text("model = [\n")
    listed = run_gitsessions("list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert [row["id"] for row in json.loads(listed.stdout)] == [sid]
    for reading in (("info", sid), ("show", sid, "--no-pager"), ("log", sid)):
        done = run_gitsessions(*reading)
        assert done.returncode == 0, (reading, done.stderr)
    # what needs settings still says the file is malformed, in one line
    refused = run_gitsessions(*exec_args(server, ws), "again")
    assert refused.returncode != 0 and "malformed config file" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1


def test_a_home_that_is_not_a_directory_is_said_so(tmp_path):
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    for home in (os.devnull, str(a_file)):
        done = run_gitsessions("--home", home, "list")
        assert done.returncode == 1
        assert done.stderr.strip() == (
            f"error: cannot use {home} as the gitsessions home: it is not a directory"
        ), done.stderr
    assert Path(a_file).read_text() == "x"


def answering(body: bytes, kind: str) -> bytes:
    head = (
        f"HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nContent-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    )
    return head.encode() + body


def test_a_reply_body_of_html_or_text_says_what_came(tmp_path):
    from tests.hostile_servers import raw_answer

    ws = tmp_path / "ws"
    ws.mkdir()
    page = b"<!DOCTYPE html><html><body><h1>Welcome to nginx!</h1></body></html>"
    cases = [
        (answering(page, "text/html"), "the model server answered with HTML, not JSON "
         "(is --base-url right? it should end in /v1)"),
        (answering(b"Ollama is running", "text/plain"),
         "the model server answered with text, not JSON: 'Ollama is running'"),
    ]  # fmt: skip
    for data, said in cases:
        with raw_answer(data) as url:
            done = run_gitsessions("exec", "--base-url", url, "--model", "m", "--workspace",
                                   str(ws), "hi")  # fmt: skip
        assert done.returncode == 1
        assert done.stderr.strip().splitlines()[-1] == f"error: {said}", done.stderr


def test_sync_says_nothing_moved_for_a_session_deleted_here(server, home, tmp_path):
    import subprocess

    ws = tmp_path / "ws"
    ws.mkdir()
    bare = tmp_path / "sessions.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    assert run_gitsessions("remote", "add", "origin", str(bare)).returncode == 0
    made = []
    for prompt in ("kept", "deleted"):
        server.reply(content="ok")
        server.reply(content=f"about {prompt}")
        done = run_gitsessions(*exec_args(server, ws), prompt, "--json")
        made.append(json.loads(done.stdout)["session"])
    assert run_gitsessions("sync").returncode == 0
    assert run_gitsessions("delete", made[1], "--yes").returncode == 0
    for _ in range(2):
        synced = run_gitsessions("sync")
        assert synced.returncode == 0, synced.stderr
        assert synced.stderr.strip().splitlines()[-1] == (
            f"synced {bare}: pulled nothing; pushed nothing"
        ), synced.stderr


def test_info_shows_the_model_last_used(server, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    server.reply(content="ok")
    server.reply(content="a summary")
    done = run_gitsessions(*exec_args(server, ws), "hello", "--json")
    sid = json.loads(done.stdout)["session"]
    doc = json.loads(run_gitsessions("export", sid).stdout)
    imported = run_gitsessions("import", "-", "--new-id", input=json.dumps(doc))
    assert imported.returncode == 0, imported.stderr
    copy = imported.stdout.strip()
    server.reply(content="went on")
    args = [a if a != "fake-model" else "other-model" for a in exec_args(server, ws)]
    went_on = run_gitsessions(*args, "--resume", copy, "more")
    assert went_on.returncode == 0, went_on.stderr
    assert server.requests[-1]["model"] == "other-model"
    info = json.loads(run_gitsessions("info", copy, "--json").stdout)
    assert info["model"] == "other-model"
    fields = dict(line.split("\t", 1) for line in run_gitsessions("info", copy).stdout.splitlines())
    assert fields["model"] == "other-model"


@pytest.mark.parametrize(
    ("base_url", "said"),
    [
        ("https://models.example.com/v1", True),
        ("http://127.0.0.1:8080/v1", False),
        ("http://localhost:11434/v1", False),
        ("http://[::1]:8000/v1", False),
    ],
)
def test_no_price_known_is_said_once_and_never_for_a_model_on_this_machine(
    base_url: str, said: bool, home: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """Issue 41, item 10: "no price known" was said for a local model, which nobody bills.
    In process: `cost_function` only prices tokens (nothing is sent)."""
    settings = ModelSettings(model="m", base_url=base_url, api_key="", summary_model="m")
    home.mkdir(parents=True, exist_ok=True)  # where the note is remembered as said
    for _ in range(2):  # two commands in the same home
        assert cost_function(settings, home)("m", 1000, 100) == 0.0
    notes = capfd.readouterr().err
    assert notes.count("no price known for model m") == (1 if said else 0), notes
