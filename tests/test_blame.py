"""`gitsessions blame` (issue 34): every line of a scripted project attributed to the
session and turn that last wrote it, or to a person, from real code snapshots taken by
real `exec` turns against the fake model server, checked line by line."""

import hashlib
import json
import os
import subprocess
from pathlib import Path

import anyio
import pytest

from gitsessions.services.code.blame_history import Snapshot, in_order
from tests.agent_trace_rules import check_record
from tests.conftest import exec_args, run_gitsessions
from tests.project_helpers import pgit
from tests.test_chat import leave, say, spawn
from tests.test_mcp_server import serve


def tool(name: str, **arguments):
    return {"name": name, "arguments": arguments}


def turn(server, root: Path, prompt: str, *calls, resume: str | None = None) -> str:
    """One exec turn whose model makes `calls` (one step each), then replies."""
    for call in calls:
        server.reply(content=None, tool_calls=[call])
    server.reply(content=f"done: {prompt}")
    if resume is None:
        server.reply(content="A title")  # the one-line summary `list` shows, asked once
    args = [*exec_args(server, root), prompt, "--auto-approve", "--json"]
    if resume:
        args += ["--resume", resume]
    done = run_gitsessions(*args)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["session"]


def blamed(root: Path, path: str, *extra: str) -> list[dict]:
    done = run_gitsessions("blame", str(root / path), "--json", *extra)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def who(rows: list[dict]) -> list[tuple[str, str | None, int | None]]:
    return [(r["text"], r["session"], r["turn"]) for r in rows]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    pgit(root, "init", "-q", "-b", "main")
    (root / "app.py").write_text("first = 1\n")
    pgit(root, "add", "-A")
    pgit(root, "commit", "-q", "-m", "initial")
    return root


@pytest.mark.parametrize("one_second", [False, True])
def test_sessions_turns_and_a_persons_edits_each_line_right(
    server, project, home, monkeypatch, one_second
):
    """Also when every snapshot's commit has the same second (fast turns: git's times
    are whole seconds): the snapshots' own ns order them, not their turns (session b's
    first turn came after session a's second)."""
    if one_second:
        for name in ("GIT_COMMITTER_DATE", "GIT_AUTHOR_DATE"):
            monkeypatch.setenv(name, "2026-12-08T00:00:00+0000")
    a = turn(server, project, "add two", tool("write_file", path="app.py",
             content="first = 1\nsecond = 2\nthird = 3\n"))  # fmt: skip
    # a person edits between turns: a line of their own, and one of the agent's changed
    (project / "app.py").write_text("first = 1\nsecond = 22\nthird = 3\nmine = 4\n")
    turn(server, project, "add fifth", tool("write_file", path="app.py",
         content="first = 1\nsecond = 22\nthird = 3\nmine = 4\nfifth = 5\n"), resume=a)  # fmt: skip
    six = "zero = 0\nfirst = 1\nsecond = 22\nthird = 3\nmine = 4\nfifth = 5\n"
    b = turn(server, project, "another session", tool("write_file", path="app.py", content=six))
    (project / "app.py").write_text(
        "zero = 0\nfirst = 1\nsecond = 22\nthird = 3\nmine = 4\nfifth = 5\nlast = 6\n"
    )
    assert who(blamed(project, "app.py")) == [
        ("zero = 0", b, 1),
        ("first = 1", None, None),
        ("second = 22", None, None),
        ("third = 3", a, 1),
        ("mine = 4", None, None),
        ("fifth = 5", a, 2),
        ("last = 6", None, None),
    ]
    rows = blamed(project, "app.py")
    assert rows[0]["line"] == 1 and len(rows[0]["commit"]) == 40
    snapshot = pgit(project, "cat-file", "-p", f"{rows[0]['commit']}:app.py")
    assert snapshot.startswith("zero = 0\n")


def test_snapshots_of_one_second_are_ordered_by_when_they_were_taken():
    """Session a's second turn, then session b's first, in one second: a's come first
    (by turn, b's turn 1 came before a's turn 2, and a line a wrote was b's person's);
    a snapshot without its ns (an older one, or forged) never goes before its line's
    previous one."""
    second = 1_796_688_000
    ns = second * 1_000_000_000

    def snap(sid: str, turn: int, step: int, after: int | None) -> Snapshot:
        nanos = 0 if after is None else ns + after
        return Snapshot(f"{sid}{turn}{step}", sid, "t", second, turn, step, None, nanos)

    a = [snap("a", 1, 0, 10), snap("a", 1, 1, 20), snap("a", 2, 0, 30), snap("a", 2, 1, 40)]
    b = [snap("b", 1, 0, 50), snap("b", 1, 1, 60), snap("b", 2, 0, None)]
    order = [s.commit for s in in_order({"b": b, "a": a})]
    assert order == ["a10", "a11", "a20", "a21", "b10", "b11", "b20"]


def test_a_file_renamed_by_a_turn_keeps_its_lines_turns(server, project, home):
    body = "".join(f"line {i} of a body long enough to be a rename\n" for i in range(12))
    a = turn(server, project, "write", tool("write_file", path="old.py", content=body))
    turn(server, project, "rename", tool("run_shell", command="git mv -f old.py new.py || "
         "mv old.py new.py"), tool("edit_file", path="new.py", old="line 3 of",
         new="LINE 3 of"), resume=a)  # fmt: skip
    rows = who(blamed(project, "new.py"))
    assert len(rows) == 12
    assert rows[3] == (body.splitlines()[3].replace("line 3", "LINE 3"), a, 2)
    assert all(r[1:] == (a, 1) for i, r in enumerate(rows) if i != 3)


def test_at_a_revision_and_outside_a_project(server, project, home, tmp_path):
    a = turn(server, project, "two", tool("write_file", path="app.py",
             content="first = 1\nsecond = 2\n"))  # fmt: skip
    pgit(project, "commit", "-q", "-am", "the agent's line")
    (project / "app.py").write_text("changed after\n")
    assert who(blamed(project, "app.py", "--at", "HEAD")) == [
        ("first = 1", None, None),
        ("second = 2", a, 1),
    ]
    assert who(blamed(project, "app.py")) == [("changed after", None, None)]
    done = run_gitsessions("blame", str(tmp_path))
    assert done.returncode != 0 and "not in a git working tree" in done.stderr
    done = run_gitsessions("blame", str(project / "app.py"), "--at", "nosuchrev")
    assert done.returncode != 0 and "no commit 'nosuchrev'" in done.stderr


def test_a_file_no_session_touched_is_all_a_persons(project, home):
    (project / "app.py").write_text("a\nb\n")
    assert who(blamed(project, "app.py")) == [("a", None, None), ("b", None, None)]
    done = run_gitsessions("blame", str(project / "app.py"))
    assert done.stdout.splitlines()[0].split("\t")[3:] == ["a person", "1", "a"]


def test_agent_trace_record_of_a_file_and_of_a_commit(server, project, home):
    a = turn(server, project, "two", tool("write_file", path="app.py",
             content="first = 1\nsecond = 2\nthird = 3\n"))  # fmt: skip
    (project / "notes.txt").write_text("a person's file\n")
    done = run_gitsessions("blame", str(project / "app.py"), "--format", "agent-trace")
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    check_record(record)
    head = pgit(project, "rev-parse", "HEAD").strip()
    assert record["vcs"] == {"type": "git", "revision": head}
    assert record["tool"]["name"] == "gitsessions"
    [file] = record["files"]
    assert file["path"] == "app.py"
    [conversation] = file["conversations"]
    assert conversation["url"] == f"gitsessions:{a}@turn:1"
    assert conversation["contributor"] == {"type": "ai", "model_id": "fake-model"}
    assert conversation["related"] == [{"type": "session", "url": f"gitsessions:{a}"}]
    digest = hashlib.sha256(b"second = 2\nthird = 3\n").hexdigest()
    assert conversation["ranges"] == [
        {"start_line": 2, "end_line": 3, "content_hash": f"sha256:{digest}"}
    ]
    # the commit that takes the agent's lines, and a person's file: only the former
    pgit(project, "add", "-A")
    pgit(project, "commit", "-q", "-m", "take it")
    done = run_gitsessions("trace", "--project", str(project))
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    check_record(record)
    assert [f["path"] for f in record["files"]] == ["app.py"]
    assert record["files"][0]["conversations"][0]["ranges"][0]["start_line"] == 2
    # a commit no turn wrote: a record with no files
    (project / "notes.txt").write_text("more\n")
    pgit(project, "commit", "-q", "-am", "by hand")
    record = json.loads(run_gitsessions("trace", "--project", str(project)).stdout)
    check_record(record)
    assert record["files"] == []


def test_the_rules_catch_a_broken_record():
    good = {"version": "0.1.0", "id": "550e8400-e29b-41d4-a716-446655440000",
            "timestamp": "2026-01-23T14:30:00Z", "files": []}  # fmt: skip
    check_record(good)
    for broken in ({**good, "version": "1.0"}, {**good, "extra": 1}, {**good, "id": "x"},
                   {**good, "files": [{"path": "a", "conversations": [{"ranges": [
                       {"start_line": 0, "end_line": 1}]}]}]}):  # fmt: skip
        with pytest.raises((AssertionError, ValueError)):
            check_record(broken)


def test_forks_a_worktree_fork_and_a_rewind(server, project, home):
    a = turn(server, project, "three", tool("write_file", path="app.py",
             content="one = 1\ntwo = 2\nthree = 3\n"))  # fmt: skip
    turn(server, project, "change two", tool("edit_file", path="app.py", old="two = 2",
         new="two = 22"), resume=a)  # fmt: skip
    # a fork of it, working in the same tree
    done = run_gitsessions("fork", a, "--json")
    assert done.returncode == 0, done.stderr
    b = json.loads(done.stdout)["id"]
    turn(server, project, "four", tool("edit_file", path="app.py", old="three = 3\n",
         new="three = 3\nfour = 4\n"), resume=b)  # fmt: skip
    # a worktree fork of the first session: its own tree, its own line
    done = run_gitsessions("fork", a, "--worktree", "--json")
    assert done.returncode == 0, done.stderr
    c = json.loads(done.stdout)["id"]
    [tree] = (home / "worktrees").iterdir()
    turn(server, tree, "zero", tool("edit_file", path="app.py", old="one = 1",
         new="zero = 0\none = 1"), resume=c)  # fmt: skip
    assert who(blamed(tree, "app.py")) == [
        ("zero = 0", c, 3),
        ("one = 1", a, 1),
        ("two = 22", a, 2),
        ("three = 3", a, 1),
    ]
    assert who(blamed(project, "app.py")) == [
        ("one = 1", a, 1),
        ("two = 22", a, 2),
        ("three = 3", a, 1),
        ("four = 4", b, 3),  # a fork goes on counting its parent's turns
    ]
    # the first session's code back to its turn 1: the second line is turn 1's again
    done = run_gitsessions("rewind", a, "--to", "turn:1", "--code", "--force",
                           "--workspace", str(project))  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert who(blamed(project, "app.py")) == [
        ("one = 1", a, 1),
        ("two = 2", a, 1),
        ("three = 3", a, 1),
    ]


def test_from_a_line_to_its_turn_in_the_transcript(server, project, home):
    a = turn(server, project, "write one", tool("write_file", path="app.py", content="x = 1\n"))
    turn(server, project, "write two", tool("write_file", path="app.py",
         content="x = 1\ny = 2\n"), resume=a)  # fmt: skip
    row = blamed(project, "app.py")[1]
    done = run_gitsessions("show", f"{row['session'][:8]}@turn:{row['turn']}", "--json")
    assert done.returncode == 0, done.stderr
    messages = json.loads(done.stdout)
    assert messages[0] == {"role": "user", "content": "write two"}
    calls = [m for m in messages if m.get("tool_calls")]
    assert json.loads(calls[0]["tool_calls"][0]["function"]["arguments"])["content"].endswith(
        "y = 2\n"
    )
    assert messages[-1]["content"] == "done: write two"
    assert not any(m.get("content") == "write one" for m in messages)
    done = run_gitsessions("show", f"{a[:8]}@turn:x")
    assert done.returncode != 0 and "ID@turn:N" in done.stderr


def test_the_chat_blames_a_file_and_a_line(server, project, home):
    a = turn(server, project, "write the constants", tool("write_file", path="app.py",
             content="first = 1\nsecond = 2\n"))  # fmt: skip
    child = spawn(server.base_url, project)
    shown = say(child, "\\blame app.py:2")
    assert "app.py:2: second = 2" in shown
    assert f"written by {a[:8]} turn 1: A title" in shown
    assert "prompt: write the constants" in shown
    assert f"gitsessions show {a[:8]}@turn:1" in shown
    shown = say(child, "\\blame app.py")
    assert "app.py: 2 lines" in shown and f"1 line by {a[:8]} turn 1" in shown
    assert "1 line by a person" in shown
    shown = say(child, "\\blame app.py:9")
    assert "app.py has 2 lines: no line 9" in shown
    leave(child)


def test_the_mcp_server_answers_why_a_line_is_there(server, project, home, tmp_path):
    a = turn(server, project, "write the constants", tool("write_file", path="app.py",
             content="first = 1\nsecond = 2\n"))  # fmt: skip
    (tmp_path / "secret.txt").write_text("not the project's\n")
    (project / "link.txt").symlink_to(tmp_path / "secret.txt")
    served = anyio.run(serve, project, [
        ("blame", {"file": "app.py", "line": 2}),
        ("blame", {"file": "app.py", "line": 1}),
        ("blame", {"file": str(tmp_path / "secret.txt"), "line": 1}),
        ("blame", {"file": "link.txt", "line": 1}),
    ])  # fmt: skip
    assert served.tools["blame"].annotations.read_only_hint is True
    by_turn, by_person, outside, linked = served.results
    assert not by_turn.error
    assert by_turn.data["session"] == a and by_turn.data["turn"] == 1
    assert by_turn.data["text"] == "second = 2"
    assert by_turn.data["prompt"] == "write the constants"
    assert by_turn.data["show"] == f"gitsessions show {a}@turn:1"
    assert by_person.data["session"] is None and by_person.data["text"] == "first = 1"
    for refused in (outside, linked):
        assert refused.error and "only a file of this project" in refused.text
        assert "not the project's" not in refused.text


def test_a_fifo_is_one_error_line_never_waited_on(project, home):
    """Issue 42, item 8: `blame` of a FIFO in the project opened it for reading and waited
    for a writer for ever; now only a regular file is read."""
    os.mkfifo(project / "pipe")
    done = run_gitsessions("blame", str(project / "pipe"), timeout=60)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.splitlines() == [f"error: {project / 'pipe'} is a FIFO: only a regular "
                                        "file is read"]  # fmt: skip


def test_a_forged_snapshot_ref_claims_no_turn_its_session_lacks(server, project, home):
    """Issue 42, item 10: a snapshot ref anyone can push (and `pull --code` brings)
    whose commit claims turn 77 of a one-turn session was believed by blame and trace."""
    a = turn(server, project, "two", tool("write_file", path="app.py",
             content="first = 1\nsecond = 2\n"))  # fmt: skip
    ref = f"refs/gitsessions/snapshots/{a}"
    real = pgit(project, "log", "-1", "--format=%s", f"{ref}^1").strip()
    assert real.endswith(" turn 1.1"), real
    forged_text = "first = 1\nsecond = 2\nforged = 3\n"
    blob = subprocess.run(["git", "-C", str(project), "hash-object", "-w", "--stdin"],
                          input=forged_text, capture_output=True, text=True)  # fmt: skip
    tree = subprocess.run(["git", "-C", str(project), "mktree"], capture_output=True, text=True,
                          input=f"100644 blob {blob.stdout.strip()}\tapp.py\n")  # fmt: skip
    old = pgit(project, "rev-parse", ref).strip()
    forged = pgit(project, "commit-tree", tree.stdout.strip(), "-p", old, "-m",
                  real.replace(" turn 1.1", " turn 77.1")).strip()  # fmt: skip
    pgit(project, "update-ref", ref, forged, old)
    (project / "app.py").write_text(forged_text)
    assert who(blamed(project, "app.py")) == [
        ("first = 1", None, None),
        ("second = 2", a, 1),  # the real turn's line stays its own
        ("forged = 3", None, None),  # a person's: the session has no turn 77
    ]
    pgit(project, "commit", "-q", "-am", "with the forged line")
    traced = run_gitsessions("trace", "HEAD", "--project", str(project))
    assert traced.returncode == 0, traced.stderr
    assert "turn:77" not in traced.stdout and f"{a}@turn:1" in traced.stdout
