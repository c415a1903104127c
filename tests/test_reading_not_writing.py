"""Reading is not writing: a chat that opens a session (`--resume ID`, `--continue`, the
picker, `\\sessions`) and is left without a prompt commits nothing, on a real pty; the
workspace's system prompt is recorded with the first turn that uses it."""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pexpect
import pytest

from tests.conftest import exec_args, git, run_gitsessions
from tests.test_chat import PROMPT, leave, plain, spawn, spawn_picker


def refs(home: Path) -> str:
    """Every branch of the store with its commit: what a write would change."""
    return git(home / "store.git", "for-each-ref", "refs/heads").stdout


def made(server, where: Path, prompt: str = "first work") -> str:
    server.reply(content="ok")
    server.reply(content=f"about {prompt}")  # the list summary
    done = run_gitsessions(*exec_args(server, where), prompt, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["session"]


@pytest.fixture
def two_places(tmp_path: Path) -> tuple[Path, Path]:
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir()
    there.mkdir()
    return here, there


def test_resuming_elsewhere_and_leaving_commits_nothing(server, home, two_places):
    here, there = two_places
    sid = made(server, here)
    before = refs(home)
    child = spawn(server.base_url, there, "--resume", sid[:8])  # another workspace
    opened = " ".join(plain(child.before).split())  # wrapped at words, as wide as the pty
    assert "the tools now work in" in opened and "is not sent" not in opened
    leave(child)
    assert refs(home) == before
    child = spawn(server.base_url, here, "--continue")
    leave(child)
    assert refs(home) == before
    info = json.loads(run_gitsessions("info", sid, "--json").stdout)
    listed = json.loads(run_gitsessions("list", "--json").stdout)
    assert [r["active_at"] for r in listed if r["id"] == sid] == [info["active_at"]]
    # the first prompt there records the workspace's system prompt with its turn
    server.reply(content="done there")
    child = spawn(server.base_url, there, "--resume", sid[:8])
    child.sendline("now here")
    child.expect(PROMPT)
    leave(child)
    log = git(home / "store.git", "log", "--format=%s", f"refs/heads/sessions/{sid}").stdout
    assert "checkpoint" not in log and log.splitlines()[0].startswith("turn 2")
    request = server.requests[-1]["messages"]
    assert request[0]["role"] == "system" and str(there) in request[0]["content"]
    context = json.loads(run_gitsessions("show", sid, "--context", "--json").stdout)
    assert str(there) in context[0]["content"]


def test_the_picker_and_sessions_open_without_writing(server, home, two_places):
    here, _there = two_places
    made(server, here, "older")
    made(server, here, "newer")
    # instructions written since: the prompt sent now differs from each one stored
    (here / "AGENTS.md").write_text("Run the tests before you answer.\n")
    before = refs(home)
    child = spawn_picker(server.base_url, here, "--resume")
    child.expect_exact("Esc cancels")
    child.send("1")
    child.expect(PROMPT)
    child.sendline("\\sessions")
    child.expect_exact("Esc cancels")
    child.send("\x1b[B")
    child.send("\r")
    child.expect(PROMPT)
    assert "(resumed)" in plain(child.before)
    leave(child)
    assert refs(home) == before


def test_a_session_only_opened_on_one_home_makes_no_fork(server, home, two_places, tmp_path):
    here, there = two_places
    bare = tmp_path / "server" / "sessions.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    other = tmp_path / "home-b"
    sid = made(server, here)
    assert run_gitsessions("remote", "add", "origin", str(bare)).returncode == 0
    assert run_gitsessions("sync").returncode == 0
    env_b = dict(os.environ, GITSESSIONS_HOME=str(other))
    assert run_gitsessions("remote", "add", "origin", str(bare), env=env_b).returncode == 0
    pulled = run_gitsessions("sync", env=env_b)
    assert pulled.returncode == 0, pulled.stderr
    # home B only opens it (in another folder) and leaves, then both sync
    child = pexpect.spawn(
        sys.executable,
        ["-m", "gitsessions", "chat", "--base-url", server.base_url, "--model", "fake-model",
         "--workspace", str(there), "--resume", sid[:8]],
        env=dict(env_b, TERM="xterm", COLUMNS="120", LINES="50"), encoding="utf-8", timeout=30,
        dimensions=(50, 120),
    )  # fmt: skip
    child.expect(PROMPT)
    leave(child)
    assert run_gitsessions("sync", env=env_b).returncode == 0
    server.reply(content="went on")
    server.reply(content="summary")
    went_on = run_gitsessions(*exec_args(server, here), "--resume", sid, "go on")
    assert went_on.returncode == 0, went_on.stderr
    assert run_gitsessions("sync").returncode == 0
    synced = run_gitsessions("sync", env=env_b)
    assert synced.returncode == 0, synced.stderr
    assert "fork" not in synced.stdout + synced.stderr
    listed = json.loads(run_gitsessions("list", "--json", env=env_b).stdout)
    assert [r["id"] for r in listed] == [sid]


def test_diff_names_an_undo_once(server, home, two_places):
    here, _there = two_places
    sid = made(server, here)
    child = spawn(server.base_url, here, "--resume", sid[:8])
    child.sendline("\\undo")
    child.expect(PROMPT)
    leave(child)
    shown = run_gitsessions("diff", f"{sid}~1", sid)
    assert shown.returncode == 0, shown.stderr
    assert "undo: undo" not in shown.stdout
    lines = [line.strip() for line in shown.stdout.splitlines() if "turn 1" in line]
    assert len(lines) == 1 and lines[0].startswith("undo: turn 1  ("), shown.stdout


def test_start_up_notes_wrap_at_words_at_80_columns(server, home):
    with tempfile.TemporaryDirectory(prefix="gs") as short:  # paths shorter than a line
        wrapped_at_words(server, Path(short))


def wrapped_at_words(server, root: Path) -> None:
    here = root / "a-project-folder-with-a-rather-long-name"
    there = root / "another-folder-whose-name-is-long-enough-to-wrap"
    here.mkdir()
    there.mkdir()
    sid = made(server, here)
    env = dict(os.environ, TERM="xterm", COLUMNS="80", LINES="50")
    child = pexpect.spawn(
        sys.executable,
        ["-m", "gitsessions", "chat", "--base-url", server.base_url, "--model", "fake-model",
         "--workspace", str(there), "--resume", sid[:8]],
        env=env, encoding="utf-8", timeout=30, dimensions=(50, 80),
    )  # fmt: skip
    child.expect(PROMPT)
    shown = plain(child.before).replace("\r", "")
    leave(child)
    start = shown.index("note: this session was recorded")
    note = shown[start : shown.index("\n", shown.index(str(there)[-20:], start))]
    lines = note.split("\n")
    assert len(lines) > 1 and all(len(line) <= 80 for line in lines), lines
    words = note.split()
    said = f"note: this session was recorded in {here}; the tools now work in {there}"
    assert words == said.split()  # no word was cut in two
