"""Delete means gone: after `delete`, no file under the home (store objects decompressed,
caches, chat history, leases, audit log) holds any text of the deleted session."""

import json
import os
import subprocess
from pathlib import Path

from gitsessions.services.hooks.audit import audit
from gitsessions.services.sessions import chat_history
from gitsessions.store.lease import Lease
from tests.conftest import exec_args
from tests.test_chat import leave, say, spawn

GONE = "okapi-marker-5517"  # in the deleted session's prompt, title, pin, tool output, chat
KEPT = "narwhal-marker-2093"  # in a session that stays: proves the scan can find text


def exec_(cli, server, workspace: Path, *args: str) -> str:
    done = cli(
        *exec_args(server, workspace),
        "--json",
        *args,
    )
    return json.loads(done.stdout)["session"]


def make(cli, server, workspace: Path, marker: str, chat: bool = True) -> str:
    """A session whose prompt, tool output, reply, title, pin and chat history hold
    `marker`, and which the list and search caches have seen; typed in a chat on a
    real pty (whatever a chat writes under the home is scanned), or with `chat` False
    a resumed `exec` turn and the history line added as a chat adds it."""
    (workspace / f"{marker}.txt").write_text(f"the file says {marker} twice: {marker}\n")
    server.reply(
        content=None, tool_calls=[{"name": "read_file", "arguments": {"path": f"{marker}.txt"}}]
    )
    server.reply(content=f"the file holds {marker}")
    server.reply(content=f"about {marker}")
    sid = exec_(cli, server, workspace, f"read the {marker} file")
    cli("rename", sid, f"title {marker}")
    cli("pin", sid, f"pinned {marker}")
    server.reply(content="ok")
    if chat:
        child = spawn(server.base_url, workspace, "--resume", sid)
        say(child, f"typed in the chat {marker}")
        leave(child)
    else:
        exec_(cli, server, workspace, "--resume", sid, f"typed in the chat {marker}")
        chat_history.append(
            Path(os.environ["GITSESSIONS_HOME"]), sid, [f"typed in the chat {marker}"]
        )
    assert marker in cli("search", marker).stdout
    assert cli.json("list")
    return sid


def everything(home: Path) -> bytes:
    """Every byte under `home`, plus every object of the store decompressed."""
    blobs = [path.read_bytes() for path in home.rglob("*") if path.is_file()]
    objects = subprocess.run(
        ["git", "--git-dir", str(home / "store.git"), "cat-file", "--batch-all-objects", "--batch"],
        capture_output=True,
        check=True,
    ).stdout
    return b"\n".join([*blobs, objects])


def test_delete_leaves_no_trace_of_the_session(cli, server, tmp_path, home):
    ws = tmp_path / "project"
    ws.mkdir()
    gone = make(cli, server, ws, GONE)
    kept = make(cli, server, ws, KEPT, chat=False)  # what the delete must leave
    before = everything(home)
    assert GONE.encode() in before and KEPT.encode() in before
    assert [s for s, line in chat_history.load(home) if GONE in line] == [gone]
    assert (home / "leases" / f"{gone}.lock").exists()

    cli("delete", gone, "--yes")

    after = everything(home)
    assert GONE.encode() not in after
    assert KEPT.encode() in after
    for path in home.rglob("*"):
        assert gone not in str(path), path
    assert (home / "leases" / f"{kept}.lock").exists()
    assert {s for s, _line in chat_history.load(home)} == {kept}
    assert KEPT in cli("search", KEPT).stdout and not cli("search", GONE).stdout.strip()
    lines = [json.loads(x) for x in (home / "audit.jsonl").read_text().splitlines()]
    assert lines[-1]["operation"] == "delete" and lines[-1]["session"] == gone
    assert any(x["session"] == gone and x["operation"] == "rename" for x in lines)


def test_chat_history_drops_untagged_and_stale_files(home):
    home.mkdir(parents=True, exist_ok=True)
    a, b = "a" * 32, "b" * 32
    (home / "chat_history").write_text("an old plain readline line\n")
    (home / "chat_history.999.tmp").write_text(json.dumps({"session": a, "line": "crashed"}))
    chat_history.append(home, a, ["first", "  ", "second"])
    chat_history.append(home, b, ["third"])
    assert chat_history.load(home) == [(a, "first"), (a, "second"), (b, "third")]
    assert not list(home.glob("chat_history.*.tmp"))
    assert chat_history.forget(home, a) == 2
    assert chat_history.load(home) == [(b, "third")]
    assert os.stat(home / "chat_history").st_mode & 0o777 == 0o600
    chat_history.append(home, b, [f"line {n}" for n in range(chat_history.LIMIT + 5)])
    kept = chat_history.load(home)
    assert len(kept) == chat_history.LIMIT and kept[-1] == (b, f"line {chat_history.LIMIT + 4}")


def test_audit_lines_hold_no_free_text(home):
    home.mkdir(parents=True, exist_ok=True)
    audit(
        home,
        "rename",
        "c" * 32,
        "error",
        error="title 'my secret plan' is too long",
        tool="read_file",
        rules=["aws-key", "a b"],
        code=3,
    )
    line = json.loads((home / "audit.jsonl").read_text())
    assert "secret" not in json.dumps(line)
    assert line["error"].startswith("sha256:") and len(line["error"]) == 7 + 64
    assert line["tool"] == "read_file" and line["code"] == 3
    assert line["rules"][0] == "aws-key" and line["rules"][1].startswith("sha256:")


def test_a_failed_delete_keeps_the_lease_file_and_the_history(cli, server, tmp_path, home):
    ws = tmp_path / "project"
    ws.mkdir()
    server.reply(content="hi")
    server.reply(content="title")
    sid = exec_(cli, server, ws, "hello")
    chat_history.append(home, sid, ["hello"])
    with Lease(home, sid):  # as a chat holds it (a lock of its own open file)
        result = cli("delete", sid, "--yes", code=1)
        assert "in use" in result.stderr
        assert chat_history.load(home) == [(sid, "hello")]
        assert (home / "leases" / f"{sid}.lock").exists()
    last = json.loads((home / "audit.jsonl").read_text().splitlines()[-1])
    assert last["operation"] == "delete" and last["error"] == "SessionInUse"
