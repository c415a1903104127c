"""Issue 41, item 5: an "always" answer is kept by this home for its session, read back
when the session is resumed (chat, `exec --resume`, an ACP client's session/load) and
shown by `info`; a session that came from elsewhere (an import) arrives with none."""

import json
import os
import subprocess
from pathlib import Path

import pytest

from gitsessions.agent.granted import Granted
from gitsessions.agent.shell_scope import Scope
from gitsessions.services.sessions import granted
from tests.conftest import exec_args, run_gitsessions
from tests.test_chat import PROMPT, leave, plain, sessions, spawn


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


def call(server, name: str, **arguments: str) -> None:
    server.reply(content=None, tool_calls=[{"name": name, "arguments": arguments}])


def granted_in_chat(server, ws: Path) -> str:
    """A chat whose user answers "always" for write_file and for `touch ...`; its id."""
    call(server, "write_file", path="a.txt", content="a\n")
    call(server, "run_shell", command="touch one.txt")
    server.reply(content="done")
    server.reply(content="Files")  # the list summary
    child = spawn(server.base_url, ws)
    child.sendline("make files")
    for _ in range(2):
        child.expect_exact("[y/N/a] ")
        child.sendline("a")
    child.expect(PROMPT)
    leave(child)
    return sessions()[0]["id"]


def granted_as_in_chat(server, ws: Path, home: Path) -> str:
    """A session (made by `exec` in this process) granted what `granted_in_chat`'s user
    answers "always" to, through the grants the chat's approver keeps; its id. Where the
    chat is not what is tested: `test_always_in_chat_holds_when_the_session_is_resumed`
    checks the chat grants exactly these."""
    server.reply(content="done")
    server.reply(content="Files")  # the list summary
    done = run_gitsessions(*exec_args(server, ws), "make files", "--json")
    assert done.returncode == 0, done.stderr
    sid = json.loads(done.stdout)["session"]
    grants = Granted()
    grants.bind(home, sid)
    grants.grant("write_file")
    grants.grant(Scope(("touch",)))
    assert info(sid)["approvals"] == ["write_file", "touch ..."]
    return sid


def info(session_id: str, home: Path | None = None) -> dict:
    env = None
    if home is not None:
        env = dict(os.environ, GITSESSIONS_HOME=str(home))
    done = run_gitsessions("info", session_id, "--json", env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_always_in_chat_holds_when_the_session_is_resumed(server, ws):
    sid = granted_in_chat(server, ws)
    assert info(sid)["approvals"] == ["write_file", "touch ..."]
    piped = dict(line.split("\t") for line in run_gitsessions("info", sid).stdout.splitlines())
    assert piped["approvals"] == "write_file, touch ..."
    call(server, "write_file", path="b.txt", content="b\n")
    call(server, "run_shell", command="touch two.txt")
    call(server, "run_shell", command="ls")  # not granted: asked
    server.reply(content="more done")
    child = spawn(server.base_url, ws, "--resume", sid[:8])
    child.sendline("more files")
    child.expect_exact("[y/N/a] ")
    asked = plain(child.before)
    assert "$ ls" in asked and "allow write_file?" not in asked and "$ touch" not in asked
    child.sendline("n")
    child.expect(PROMPT)
    leave(child)
    assert (ws / "b.txt").exists() and (ws / "two.txt").exists()


def test_exec_resume_runs_what_always_allowed_and_nothing_else(server, ws, home):
    sid = granted_as_in_chat(server, ws, home)
    call(server, "write_file", path="c.txt", content="c\n")
    server.reply(content="wrote c")
    done = run_gitsessions(*exec_args(server, ws), "--resume", sid, "write c")
    assert done.returncode == 0, done.stderr
    assert (ws / "c.txt").read_text() == "c\n"
    call(server, "edit_file", path="c.txt", old="c", new="d")
    server.reply(content="no edit")
    done = run_gitsessions(*exec_args(server, ws), "--resume", sid, "edit c")
    assert done.returncode == 3 and (ws / "c.txt").read_text() == "c\n"


def test_an_imported_session_brings_no_approvals(server, ws, tmp_path, home):
    sid = granted_as_in_chat(server, ws, home)
    exported = tmp_path / "s.json"
    assert run_gitsessions("export", sid, "-o", str(exported)).returncode == 0
    other = tmp_path / "other-home"
    env = dict(os.environ, GITSESSIONS_HOME=str(other))
    assert run_gitsessions("import", str(exported), env=env).returncode == 0
    assert info(sid, other)["approvals"] == []
    call(server, "write_file", path="d.txt", content="d\n")
    server.reply(content="not written")
    done = run_gitsessions(*exec_args(server, ws), "--resume", sid, "write d", env=env)
    assert done.returncode == 3 and not (ws / "d.txt").exists()
    # deleting the session here drops what this home granted it
    assert run_gitsessions("delete", sid, "--yes").returncode == 0
    assert granted.load(home, sid) == granted.NONE
    assert not (home / "store.git" / "gitsessions" / "approvals" / sid).exists()


def test_a_record_naming_another_session_or_unsound_grants_nothing(home):
    sid, other = "a" * 32, "b" * 32
    granted.save(home, sid, granted.Grants(("write_file",), ((("git", "log"), False),)))
    assert granted.load(home, sid).tools == ("write_file",)
    path = home / "store.git" / "gitsessions" / "approvals"
    (path / other).write_bytes((path / sid).read_bytes())  # copied under another id
    assert granted.load(home, other) == granted.NONE
    for bad in (b"{", b"[]", b'{"format": "x"}', b" " * (granted.MAX_RECORD + 1)):
        (path / sid).write_bytes(bad)
        assert granted.load(home, sid) == granted.NONE
    record = {"format": granted.RECORD_FORMAT, "session": sid, "tools": ["write_file"],
              "commands": [{"words": [1], "exact": False}]}  # fmt: skip
    (path / sid).write_text(json.dumps(record))
    assert granted.load(home, sid) == granted.NONE
    assert granted.load(home, "../" + sid) == granted.NONE


def test_an_acp_session_load_goes_on_with_what_chat_granted(server, ws, tmp_path, home):
    from tests.test_acp import Editor, drive, prompt

    sid = granted_as_in_chat(server, ws, home)
    call(server, "write_file", path="e.txt", content="e\n")
    server.reply(content="wrote e")
    editor = Editor("reject_once")

    async def steps(conn) -> None:
        await conn.load_session(cwd=str(ws), session_id=sid, mcp_servers=[])
        assert await prompt(conn, sid, "write e") == "end_turn"

    drive(server, editor, tmp_path, steps)
    assert editor.asked == [] and (ws / "e.txt").exists()


def test_a_pulled_session_brings_no_approvals(server, ws, tmp_path, home):
    sid = granted_as_in_chat(server, ws, home)
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    assert run_gitsessions("remote", "add", "origin", str(bare)).returncode == 0
    assert run_gitsessions("push", "--all").returncode == 0
    sent = subprocess.run(
        ["git", "-C", str(bare), "ls-tree", "-r", "--name-only", f"refs/heads/sessions/{sid}"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert sent and "approvals" not in sent and "write_file" not in json.dumps(sent)
    other = tmp_path / "home-b"
    b = ["--home", str(other)]
    assert run_gitsessions(*b, "remote", "add", "origin", str(bare)).returncode == 0
    assert run_gitsessions(*b, "pull").returncode == 0
    assert info(sid, other)["approvals"] == []
    call(server, "write_file", path="f.txt", content="f\n")
    server.reply(content="not written")
    done = run_gitsessions(*b, *exec_args(server, ws), "--resume", sid, "write f")
    assert done.returncode == 3 and not (ws / "f.txt").exists()
