"""Lifecycle hooks in $GITSESSIONS_HOME/hooks: run after what they are told about is
committed, given a JSON payload; a failing, hanging or broken hook is one line on stderr
and loses nothing; a hanging one is stopped by its timeout, children included."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gitsessions.services.hooks.hooks import EVENTS, Hooks
from gitsessions.services.sessions import manage
from tests.conftest import exec_args, git, run_gitsessions


def write_hook(home: Path, event: str, body: str, mode: int = 0o755) -> Path:
    path = home / "hooks" / event
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(mode)
    return path


def recorder(home: Path, event: str) -> Path:
    """A hook that keeps its payload and a few variables of its environment."""
    out = home / f"{event}.seen"
    write_hook(
        home,
        event,
        f'cat > "{out}.json"\n'
        f'printf "%s\\n" "$GITSESSIONS_EVENT" "$GITSESSIONS_SESSION" "$(pwd)" > "{out}.env"\n',
    )
    return out


def seen(out: Path) -> tuple[dict, list[str]]:
    return json.loads(Path(f"{out}.json").read_text()), Path(f"{out}.env").read_text().split()


def run_exec(server, workspace: Path, *args: str):
    server.reply(content="Done.")
    server.reply(content="A title")  # the list summary after the first turn
    return run_gitsessions(*exec_args(server, workspace), "do it", "--json", *args)


def hook_lines(stderr: str) -> list[str]:
    """What stderr says about hooks (exec also prints the session id and a price note)."""
    return [line for line in stderr.splitlines() if "hook" in line]


def alive(pid: int) -> bool:
    """Whether `pid` still runs (a zombie waiting for a reaper that does not come, as
    under a container's init, counts as gone)."""
    try:
        os.kill(pid, 0)
        status = Path(f"/proc/{pid}/status").read_text()
    except (ProcessLookupError, FileNotFoundError):
        return False
    state = next(line for line in status.splitlines() if line.startswith("State:"))
    return "zombie" not in state


def audit_lines(home: Path, operation: str) -> list[dict]:
    lines = [json.loads(x) for x in (home / "audit.jsonl").read_text().splitlines()]
    return [x for x in lines if x["operation"] == operation]


def test_post_turn_gets_the_committed_turn(server, workspace, home):
    out = recorder(home, "post-turn")
    done = run_exec(server, workspace)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    payload, env = seen(out)
    assert payload["event"] == "post-turn"
    assert payload["session"] == result["session"]
    assert payload["commit"] == result["commit"]  # the turn was committed before it ran
    assert payload["turn"] == 1 and payload["steps"] == 1 and payload["error"] is None
    assert payload["workspace"] == str(workspace)
    assert env == ["post-turn", result["session"], str(home)]
    assert "hook" not in done.stderr  # success is silent
    assert audit_lines(home, "hook")[-1]["outcome"] == "ok"


def test_failing_hook_is_one_line_and_the_turn_is_stored(server, workspace, home):
    write_hook(home, "post-turn", "echo starting\necho 'remote refused' >&2\nexit 3\n")
    done = run_exec(server, workspace)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)  # stdout holds only the data
    assert result["reply"] == "Done."
    lines = hook_lines(done.stderr)
    assert lines == [
        "hook post-turn failed (exit 3): remote refused; nothing was lost "
        "(see `gitsessions hooks list`)"
    ]
    branch = f"refs/heads/sessions/{result['session']}"
    stored = git(home / "store.git", "rev-parse", f"{branch}~1").stdout.strip()
    assert stored == result["commit"]  # the summary's own commit came after it
    info = json.loads(run_gitsessions("info", result["session"], "--json").stdout)
    assert info["messages"] == 3  # system, prompt, reply
    assert audit_lines(home, "hook")[-1]["outcome"] == "failed"


def test_hanging_hook_is_cut_off_by_its_timeout(server, workspace, home):
    write_hook(home, "pre-compact", "exit 0\n")  # makes the home
    (home / "config.toml").write_text("[hooks]\ntimeout = 0.5\n")
    pids = home / "pids"
    write_hook(
        home,
        "post-turn",
        f'sleep 300 &\necho "$$ $!" > "{pids}"\nwait\n',  # the hook and a child of its own
    )
    done = run_exec(server, workspace)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["reply"] == "Done."
    lines = hook_lines(done.stderr)
    assert len(lines) == 1 and lines[0].startswith("hook post-turn timed out after ")
    assert "and was stopped; nothing was lost" in lines[0]
    for pid in map(int, pids.read_text().split()):  # the whole group was stopped
        assert not alive(pid)
    record = audit_lines(home, "hook")[-1]
    assert record["outcome"] == "timeout" and record["event"] == "post-turn"


def test_fork_compact_and_delete_hooks_through_the_cli(cli, make_session, home):
    outs = {event: recorder(home, event) for event in EVENTS if event != "post-turn"}
    head = make_session(turns=2)
    # a failing pre-compact cannot stop (or corrupt) the compaction
    write_hook(home, "pre-compact", f'cat > "{outs["pre-compact"]}.json"\nexit 1\n')
    done = cli("compact", head.id, "--clear-only")
    assert "hook pre-compact failed (exit 1)" in done.stderr
    pre = json.loads(Path(f"{outs['pre-compact']}.json").read_text())
    assert (pre["session"], pre["commit"]) == (head.id, head.commit.decode())
    assert pre["trigger"] == "manual"
    post, _ = seen(outs["post-compact"])
    assert post["outcome"] == "nothing_to_compact" and post["commit"] is None

    fork_id = cli("fork", head.id).stdout.strip()
    forked, env = seen(outs["post-fork"])
    assert forked["session"] == fork_id and env[1] == fork_id
    assert forked["parent_id"] == head.id and forked["fork_point"] == head.commit.decode()
    assert forked["worktree"] is None  # a chat-only fork

    cli("delete", fork_id, "--yes")
    deleted, _ = seen(outs["post-delete"])
    assert deleted["session"] == fork_id and deleted["commit"] == forked["commit"]


def test_dry_run_runs_no_hook(cli, make_session, home):
    out = recorder(home, "pre-compact")
    head = make_session(turns=1)
    cli("compact", head.id, "--clear-only", "--dry-run")
    assert not Path(f"{out}.json").exists()


def test_a_hook_that_is_not_executable_is_reported(store, make_session, home):
    write_hook(home, "post-fork", "exit 0\n", mode=0o644)
    reported: list[str] = []
    head = make_session(turns=1)
    fork = manage.fork(store, head.id, hooks=Hooks(home, {}, 5, reported.append))
    assert store.exists(fork.id)
    assert len(reported) == 1 and "is not executable" in reported[0]


def test_no_hooks_folder_costs_nothing_and_says_nothing(store, make_session, home):
    reported: list[str] = []
    head = make_session(turns=1)
    manage.fork(store, head.id, hooks=Hooks(home, {}, 5, reported.append))
    assert reported == [] and not (home / "hooks").exists()


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('timeout = "soon"', "timeout must be a number of seconds"),
        ("timeout = 0", "timeout must be a number of seconds"),
        ("tiemout = 3", "unknown key 'tiemout'"),
    ],
)
def test_a_bad_hooks_setting_is_one_line(cli, make_session, home, table, message):
    head = make_session(turns=1)
    (home / "config.toml").write_text(f"[hooks]\n{table}\n")
    done = cli("fork", head.id, code=2)
    assert done.stderr.count("\n") == 1 and message in done.stderr


def test_hooks_list_shows_the_lifecycle_hooks(cli, home, tmp_path):
    write_hook(home, "post-turn", "exit 0\n")
    write_hook(home, "post-fork", "exit 0\n", mode=0o644)
    listed = json.loads(cli("hooks", "list", "--workspace", str(tmp_path), "--json").stdout)
    states = {row["event"]: row["state"] for row in listed["lifecycle"]}
    assert states == {
        "post-turn": "executable",
        "pre-compact": "absent",
        "post-compact": "absent",
        "post-fork": "not executable",
        "post-delete": "absent",
    }
    assert listed["git"] == [] and listed["timeout"] == 5.0
    assert (Path(listed["shipped"]) / "post-turn-push").is_file()


def test_post_turn_push_example_exits_0_until_push_exists(home, tmp_path):
    from gitsessions.services.code.git_hooks import shipped

    env = dict(os.environ, GITSESSIONS_SESSION="0" * 32, GITSESSIONS_PUSH_REMOTE="nowhere")
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    (home / "hooks").mkdir(parents=True)
    done = subprocess.run(
        [str(shipped("post-turn-push"))], env=env, capture_output=True, text=True,
        stdin=subprocess.DEVNULL, cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    has_push = subprocess.run(
        [sys.executable, "-m", "gitsessions", "push", "--help"], env=env, capture_output=True
    )
    if has_push.returncode != 0:
        assert "no 'push' command yet; nothing pushed" in done.stderr


def test_shell_metacharacters_in_a_payload_stay_data(server, tmp_path, home):
    """A workspace whose name is built to break out of a shell (the one text of the
    user's in the payload) reaches the hook as JSON on stdin, and runs nothing."""
    out = recorder(home, "post-turn")
    workspace = tmp_path / "ws $(touch pwned) `touch pwned`; touch pwned | \" ' \\"
    workspace.mkdir()
    done = run_exec(server, workspace)
    assert done.returncode == 0, done.stderr
    payload, _env = seen(out)
    assert payload["workspace"] == str(workspace)
    assert not [p for p in tmp_path.rglob("pwned")]  # the hook runs in the home, under tmp_path


def test_hooks_list_into_a_pipe_is_one_tab_separated_record_a_hook(home, tmp_path):
    """Issue 31: into a pipe, as every other listing, no padded table and no cut path."""
    from tests.conftest import run_gitsessions

    deep = home / ("a-long-folder-name-" * 6)
    write_hook(deep, "post-turn", "exit 0\n")
    done = run_gitsessions("--home", str(deep), "hooks", "list", "--workspace", str(tmp_path))
    assert done.returncode == 0, done.stderr
    rows = [line.split("\t") for line in done.stdout.splitlines()]
    assert [row[0] for row in rows] == [
        "post-turn", "pre-compact", "post-compact", "post-fork", "post-delete"
    ]  # fmt: skip
    assert all(len(row) == 3 for row in rows)
    assert rows[0][1:] == ["executable", str(deep / "hooks" / "post-turn")]
