"""`gitsessions diff`: a fork and its parent, two forks of one parent, a session and its
own earlier turn, unrelated sessions, context changes, `--code`, colour only on a
terminal, and `\\diff` in chat. Sessions are written through the public write path or
made by `exec` against the fake model server."""

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pexpect

from gitsessions.services.sessions import manage
from gitsessions.services.sessions.revisions import resolve
from gitsessions.store.sessions import Change, touch
from gitsessions.values.records import empty_workspace
from tests.conftest import REPO, exec_args, run_gitsessions
from tests.diff_helpers import commit, new_session, turn
from tests.test_chat import leave, say, spawn

SIDE_KEYS = {"revision", "session", "state_session", "commit", "title", "changes"}
CHANGE_KEYS = {
    "commits",
    "events",
    "turns",
    "title",
    "summary",
    "archived",
    "messages",
    "context",
    "plan",
    "pins",
    "usage",
}


def test_a_fork_and_its_parent(cli, store):
    parent = new_session(store, "parent", turns=2)
    parent = commit(store, parent, Change(plan=[{"step": "old step", "status": "pending"}]), "turn")
    fork = manage.fork(store, parent.id, "the fork")
    fork = turn(
        store,
        fork,
        3,
        "fork",
        plan=[
            {"step": "old step", "status": "completed"},
            {"step": "new step", "status": "pending"},
        ],
    )
    manage.pin(store, fork.id, "keep the API stable")
    parent = turn(store, store.head(parent.id), 3, "parent", plan=[])
    manage.set_archived(store, parent.id, True)

    data = cli.json("diff", parent.id[:6], fork.id[:6])
    ancestor = data["ancestor"]
    assert ancestor["kind"] == "fork_point" and ancestor["note"] == "B is a fork of A"
    assert ancestor["commit"] == store.head(fork.id).header["fork_point"]
    assert ancestor["session"] == parent.id and ancestor["messages"] == 5
    a, b = data["a"]["changes"], data["b"]["changes"]
    assert a["turns"] == [3] and a["commits"] == 2 and a["events"] == {"turn": 1, "archive": 1}
    assert data["b"]["changes"]["events"] == {"fork": 1, "turn": 1, "pin": 1}
    assert a["archived"] == {"from": False, "to": True} and a["title"] is None
    assert [
        (m["index"], m["role"], m["first_line"], m["turn"]) for m in a["messages"]["appended"]
    ] == [
        (5, "user", "question 3 parent", 3),
        (6, "assistant", "answer 3 parent", 3),
    ]
    assert all(m["time"].endswith("Z") for m in a["messages"]["appended"])
    assert a["plan"] == {"added": [], "done": [], "removed": ["old step"]}
    assert a["usage"] == {
        "prompt_tokens": 10,
        "completion_tokens": 5,
        "requests": 1,
        "cost_usd": 0.001,
    }
    assert b["title"] == {"from": "parent", "to": "the fork"} and b["archived"] is None
    assert [m["first_line"] for m in b["messages"]["appended"]] == [
        "question 3 fork",
        "answer 3 fork",
    ]
    assert b["plan"] == {
        "added": [{"step": "new step", "status": "pending"}],
        "done": ["old step"],
        "removed": [],
    }
    assert b["pins"] == {"added": ["keep the API stable"], "removed": []}
    assert b["context"]["messages"] == {"from": 5, "to": 7}

    text = cli("diff", parent.id, fork.id).stdout
    assert "common ancestor: fork point" in text and "B is a fork of A" in text
    assert "archived   no -> yes" in text and "'parent' -> 'the fork'" in text
    assert "question 3 fork" in text and "second line" not in text
    assert "+ keep the API stable" in text and "x old step" in text and "- old step" in text
    assert "\x1b[" not in text  # not a terminal: no colour
    reverse = cli.json("diff", fork.id, parent.id)["ancestor"]
    assert reverse["kind"] == "fork_point" and reverse["note"] == "A is a fork of B"


def test_two_forks_of_one_parent_meet_at_the_older_fork_point(cli, store):
    parent = new_session(store, "parent", turns=1)
    first = manage.fork(store, parent.id, "first fork")
    parent = turn(store, parent, 2, "parent")
    second = manage.fork(store, parent.id, "second fork")
    first = turn(store, first, 2, "first")
    second = turn(store, second, 3, "second")

    data = cli.json("diff", first.id, second.id)
    ancestor = data["ancestor"]
    assert ancestor["kind"] == "merge_base" and ancestor["session"] == parent.id
    assert (
        ancestor["commit"] == store.head(first.id).header["fork_point"]
        and ancestor["messages"] == 3
    )
    a, b = data["a"]["changes"], data["b"]["changes"]
    assert a["messages"]["from"] == 3 and a["messages"]["to"] == 5
    assert [m["first_line"] for m in a["messages"]["appended"]] == [
        "question 2 first",
        "answer 2 first",
    ]
    # the second fork's side holds the parent's turn 2, then its own turn 3
    assert [m["first_line"] for m in b["messages"]["appended"]] == [
        "question 2 parent",
        "answer 2 parent",
        "question 3 second",
        "answer 3 second",
    ]
    assert b["turns"] == [2, 3] and b["usage"]["requests"] == 2
    assert a["title"] == {"from": "parent", "to": "first fork"}


def test_a_session_and_its_own_earlier_turn(cli, store):
    head = new_session(store, "three turns", turns=3)
    data = cli.json("diff", f"{head.id}@turn:1", head.id)
    assert data["ancestor"]["kind"] == "merge_base"
    assert data["ancestor"]["commit"] == data["a"]["commit"]
    assert data["ancestor"]["note"] == "A is an earlier state of B"
    assert data["a"]["changes"]["commits"] == 0
    b = data["b"]["changes"]
    assert b["turns"] == [2, 3] and [m["index"] for m in b["messages"]["appended"]] == [3, 4, 5, 6]
    text = cli("diff", f"{head.id}@turn:1", head.id[:5]).stdout
    assert "A since the ancestor: no changes" in text and "2 commits (turn x2), turns 2-3" in text
    backwards = cli.json("diff", head.id, f"{head.id}~1")
    assert backwards["ancestor"]["note"] == "B is an earlier state of A"
    assert backwards["a"]["changes"]["turns"] == [3]
    same = cli.json("diff", head.id, head.id)
    assert same["ancestor"]["note"] == "A and B are the same state"
    assert same["a"]["changes"]["commits"] == same["b"]["changes"]["commits"] == 0


def test_unrelated_sessions_are_compared_from_empty(cli, store):
    one = new_session(store, "one", turns=1)
    two = new_session(store, "two", turns=2)
    data = cli.json("diff", one.id, two.id)
    assert data["ancestor"] == {
        "kind": "none",
        "commit": None,
        "session": None,
        "title": None,
        "messages": 0,
        "note": "unrelated sessions: no common history, "
        "each side is compared with an empty session",
    }
    a, b = data["a"]["changes"], data["b"]["changes"]
    assert a["title"] == {"from": "", "to": "one"} and a["commits"] == 2
    assert a["messages"]["from"] == 0 and [m["role"] for m in a["messages"]["appended"]] == [
        "system",
        "user",
        "assistant",
    ]
    assert b["usage"]["requests"] == 2
    assert "no common ancestor: unrelated sessions" in cli("diff", one.id, two.id).stdout


def test_json_shape(cli, store):
    parent = new_session(store, "parent", turns=1)
    fork = manage.fork(store, parent.id)
    data = cli.json("diff", parent.id, fork.id)
    assert set(data) == {"ancestor", "a", "b"}
    assert set(data["ancestor"]) == {"kind", "commit", "session", "title", "messages", "note"}
    for side in ("a", "b"):
        assert set(data[side]) == SIDE_KEYS
        changes = data[side]["changes"]
        assert set(changes) == CHANGE_KEYS
        assert set(changes["messages"]) == {"from", "to", "appended"}
        assert set(changes["context"]) == {"messages", "compactions", "cleared", "events"}
        assert set(changes["plan"]) == {"added", "done", "removed"}
        assert set(changes["pins"]) == {"added", "removed"}
        assert set(changes["usage"]) == {
            "prompt_tokens",
            "completion_tokens",
            "requests",
            "cost_usd",
        }
    assert data["b"]["changes"]["commits"] == 1 and data["b"]["changes"]["turns"] == []
    assert "code" in cli.json("diff", parent.id, fork.id, "--code")


def test_compactions_cleared_outputs_and_undo_are_context_changes(cli, store):
    head = new_session(store, "compacted", turns=2)
    base = head
    record = {
        "time": "2026-12-01T10:00:00Z",
        "trigger": "auto",
        "stages": ["clear", "summarize"],
        "before_tokens": 21034,
        "after_tokens": 3120,
        "summary": "note",
        "summarizer": None,
        "cleared": [2, 4],
    }
    note = {"role": "user", "content": "[continuation note] earlier"}
    head = commit(
        store,
        head,
        Change(header=touch(head.header), context=[note], compactions=[record]),
        "compact",
        **{"Tokens-Before": 21034, "Tokens-After": 3120},
    )
    head = turn(store, head, 3)
    head = commit(
        store,
        head,
        Change(header=touch(head.header), context=[note]),
        "undo",
        **{"Turn": 3, "Undone-Turn": 3},  # the agent names the current turn on every commit
    )
    assert resolve(store, f"{head.id}@turn:3").head.commit != head.commit  # the turn's end
    context = cli.json("diff", base.id + "@" + base.commit.decode(), head.id)["b"]["changes"][
        "context"
    ]
    assert context["messages"] == {"from": 5, "to": 1}
    assert context["compactions"] == [
        {
            "time": "2026-12-01T10:00:00Z",
            "trigger": "auto",
            "stages": ["clear", "summarize"],
            "before_tokens": 21034,
            "after_tokens": 3120,
            "cleared": 2,
        }
    ]
    assert context["cleared"] == 2
    assert [(e["event"], e["subject"], e["trailers"]) for e in context["events"]] == [
        ("undo", "undo", {"Turn": "3", "Undone-Turn": "3"})
    ]
    assert cli.json("diff", f"{head.id}~1", head.id)["b"]["changes"]["turns"] == []
    text = cli("diff", f"{head.id}~3", head.id).stdout
    assert "compaction (auto, clear+summarize) 21034 -> 3120 tokens, 2 outputs cleared" in text
    assert "    undo  (" in text and "context    5 -> 1 message" in text


def _project(tmp_path: Path) -> tuple[Path, list[str]]:
    """A project repository with three commits; their ids, oldest first."""
    root = tmp_path / "project"
    root.mkdir()
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
    }
    env["GIT_COMMITTER_EMAIL"] = "t@t"

    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, env=env
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    git("init", "-q")
    shas = []
    for n, name in enumerate(("a.txt", "b.txt", "c.txt")):
        (root / name).write_text(f"file {n}\n" * (n + 1))
        git("add", "-A")
        git("commit", "-qm", f"commit {n}")
        shas.append(git("rev-parse", "HEAD"))
    return root, shas


def test_code_adds_the_diffstat_between_the_two_snapshots(cli, store, tmp_path):
    root, shas = _project(tmp_path)
    workspace = {**empty_workspace(str(root)), "repo_root": str(root)}
    parent = new_session(store, "parent", workspace=workspace)
    parent = turn(store, parent, 1, trailers={"Code-Snapshot": shas[0]})
    fork = manage.fork(store, parent.id, "fork")
    fork = turn(store, fork, 2, trailers={"Code-Snapshot": shas[2]})
    manage.rename(store, fork.id, "renamed after the turn")  # the snapshot is still turn 2's
    parent = turn(store, parent, 2, trailers={"Code-Snapshot": shas[1]})

    code = cli.json("diff", parent.id, fork.id, "--code")["code"]
    assert code["a"] == shas[1] and code["b"] == shas[2] and code["repo"] == str(root)
    assert code["note"] is None
    assert any("c.txt" in line for line in code["stat"])
    assert code["stat"][-1].strip().startswith("1 file changed, 3 insertions")
    text = cli("diff", parent.id, fork.id, "--code").stdout
    assert "c.txt" in text and "1 file changed" in text
    # issue 41, item 10: a stat only, said so, with the stock git command for the patch
    assert "code (diffstat)" in text
    shown = [line.strip() for line in text.splitlines() if "the whole patch: " in line]
    command = shlex.split(shown[0].partition("the whole patch: ")[2])
    assert command == shlex.split(code["full_diff"]) and command[:2] == ["git", "-C"]
    patch = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    assert "+++ b/c.txt" in patch and patch.count("\n+file 2") == 3

    plain = new_session(store, "no snapshots", turns=1, workspace=workspace)
    one_side = cli.json("diff", plain.id, fork.id, "--code")["code"]
    assert one_side["note"] == "side A has no code snapshot: no code diff"
    assert one_side["stat"] == [] and one_side["b"] == shas[2] and one_side["full_diff"] is None
    text = cli("diff", plain.id, plain.id, "--code").stdout
    assert "neither side has a code snapshot: no code diff" in text
    # a stored value that is not an object id never reaches git's command line
    hostile = turn(store, plain, 2, trailers={"Code-Snapshot": "--output=/tmp/x"})
    assert cli.json("diff", hostile.id, fork.id, "--code")["code"]["a"] is None


def test_sessions_made_by_exec(server, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    server.reply(content="first answer")
    server.reply(content="A summary")  # the list summary after the first turn
    first = run_gitsessions(*exec_args(server, ws), "first question", "--json")
    assert first.returncode == 0, first.stderr
    parent = json.loads(first.stdout)["session"]
    fork = json.loads(run_gitsessions("fork", parent, "--json").stdout)["id"]
    server.reply(content="fork answer\nwith more")
    done = run_gitsessions(*exec_args(server, ws), "--resume", fork, "fork question", "--json")
    assert done.returncode == 0, done.stderr
    shown = run_gitsessions("diff", parent, fork)
    assert shown.returncode == 0 and "\x1b[" not in shown.stdout
    data = json.loads(run_gitsessions("diff", parent, fork, "--json").stdout)
    assert data["ancestor"]["kind"] == "fork_point"
    b = data["b"]["changes"]
    assert [(m["role"], m["first_line"]) for m in b["messages"]["appended"]] == [
        ("user", "fork question"),
        ("assistant", "fork answer"),
    ]
    assert b["turns"] == [2] and b["usage"]["requests"] == 1
    assert data["a"]["changes"]["commits"] == 0


def test_colour_on_a_terminal(store):
    one = new_session(store, "one", turns=1)
    fork = manage.fork(store, one.id, "fork")
    turn(store, fork, 2)
    env = dict(os.environ, TERM="xterm", COLUMNS="120")
    child = pexpect.spawn(
        sys.executable,
        ["-m", "gitsessions", "diff", one.id, fork.id],
        env=env,
        encoding="utf-8",
        timeout=60,
        cwd=str(REPO),
    )
    child.expect(pexpect.EOF)
    child.wait()
    assert child.exitstatus == 0
    assert "\x1b[" in child.before and "B is a fork of A" in child.before


def test_diff_in_chat(server, tmp_path):
    ws = tmp_path / "project"
    ws.mkdir()
    child = spawn(server.base_url, ws)
    say(child, "first question")
    forked = say(child, "\\fork")
    fork = forked.split("forked: ")[1].split()[0]
    say(child, "second question")
    shown = say(child, f"\\diff {fork[:5]}")
    assert "B is a fork of A" in shown and "second question" in shown
    sides = [line.split()[:2] for line in shown.splitlines() if line[:3] in ("A  ", "B  ")]
    here = forked.split("you are still in ")[1][:8]
    assert sides == [["A", here], ["B", fork[:8]]]  # both ids alike, however typed
    back = say(child, f"\\diff {fork}~1")
    assert [line.split()[1] for line in back.splitlines() if line[:3] == "B  "] == [f"{fork[:8]}~1"]
    assert "B since the ancestor: 1 commit (fork)" in shown
    assert "title      '' -> 'ok (fork)'" in shown  # a fork is "<parent title> (fork)"
    assert "error: bad revision" in say(child, f"\\diff {fork[:8]}@turn:x")
    assert "usage: \\diff ID" in say(child, "\\diff")
    leave(child)


def test_a_long_side_shows_its_first_and_last_messages(cli, store):
    head = new_session(store, "long", turns=25)  # 51 messages
    text = cli("diff", f"{head.id}@turn:1", head.id).stdout
    assert "[3] user" in text and "[22] assistant" in text and "[31] user" in text
    assert "[50] assistant" in text and "... 8 more (--json lists all)" in text
    assert "[23] user" not in text and "[30] assistant" not in text
    data = cli.json("diff", f"{head.id}@turn:1", head.id)
    assert len(data["b"]["changes"]["messages"]["appended"]) == 48
