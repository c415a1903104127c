"""`merge FORK`: a worktree fork's code and conclusion joined back into its parent, with
real project repositories, the real CLI, the fake model server, and stock git to check."""

import json
from pathlib import Path

from tests.conftest import git
from tests.project_helpers import gitsessions, make_project, pgit, tool, user_state, write_turn
from tests.test_chat import leave, say, spawn


def fork_worktree(cwd: Path, session: str) -> dict:
    done = gitsessions("fork", session, "--worktree", "--json", "--title", "try B", cwd=cwd)
    assert done.returncode == 0, done.stderr
    made: dict = json.loads(done.stdout)
    return made


def turn(server, cwd: Path, session: str, prompt: str, calls: list, reply: str) -> None:  # type: ignore[no-untyped-def]
    for call in calls:
        server.reply(content=None, tool_calls=[call])
    server.reply(content=reply)
    done = gitsessions(
        "exec",
        prompt,
        "--resume",
        session,
        "--base-url",
        server.base_url,
        "--model",
        "fake-model",
        "--auto-approve",
        cwd=cwd,
    )
    assert done.returncode == 0, done.stderr


def parents(home: Path, session: str) -> list[str]:
    ref = f"refs/heads/sessions/{session}"
    return git(home / "store.git", "rev-list", "--parents", "-n", "1", ref).stdout.split()


def fork_that_adds_two(server, tmp_path: Path) -> tuple[Path, str, str]:  # type: ignore[no-untyped-def]
    """A project with one turn, and a worktree fork of it whose own turn writes two.txt:
    the project, the session and the fork."""
    root = make_project(tmp_path / "project")
    sid = write_turn(server, root, "one.txt", "one\n")
    fid = fork_worktree(tmp_path, sid)["id"]
    turn(server, tmp_path, fid[:8], "change",
         [tool("write_file", path="two.txt", content="two\n")], "two added")  # fmt: skip
    return root, sid, fid


def test_a_worktree_fork_merged_back_brings_its_code_and_its_conclusion(server, tmp_path, home):
    root = make_project(tmp_path / "project")
    sid = write_turn(server, root, "one.txt", "one\n")
    made = fork_worktree(tmp_path, sid)
    fid = made["id"]
    worktree = Path(made["worktree"]["path"])
    turn(
        server,
        tmp_path,
        fid[:8],
        "add the feature",
        [tool("write_file", path="feature.py", content="FEATURE = 'B'\n")],
        "added feature.py",
    )
    turn(
        server,
        tmp_path,
        fid[:8],
        "use it in the app",
        [tool("write_file", path="src/app.py", content="from feature import FEATURE\n")],
        "Approach B works: feature.py holds it and src/app.py uses it.",
    )
    assert (worktree / "feature.py").exists() and not (root / "feature.py").exists()
    parent_head = git(home / "store.git", "rev-parse", f"refs/heads/sessions/{sid}").stdout.strip()
    fork_head = git(home / "store.git", "rev-parse", f"refs/heads/sessions/{fid}").stdout.strip()
    before = user_state(root)

    done = gitsessions("merge", fid[:8], "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["into"] == sid and answer["committed"] and answer["code"]["conflicts"] == []
    # the code: the fork's changes in the parent's workspace; HEAD, index, stash untouched
    assert (root / "feature.py").read_text() == "FEATURE = 'B'\n"
    assert (root / "src" / "app.py").read_text() == "from feature import FEATURE\n"
    assert (root / "one.txt").read_text() == "one\n"
    after = user_state(root)
    assert {k: after[k] for k in ("head", "index", "stash", "refs")} == {
        k: before[k] for k in ("head", "index", "stash", "refs")
    }
    # the conversation: a two-parent commit, as stock git sees it
    merge, first, second = parents(home, sid)
    assert (first, second) == (parent_head, fork_head)
    graph = git(home / "store.git", "log", "--graph", "--format=%s", f"refs/heads/sessions/{sid}")
    assert "merge: fork" in graph.stdout and "|\\" in graph.stdout
    body = git(home / "store.git", "log", "-1", "--format=%B", merge).stdout
    assert f"Merged-Session: {fid}" in body and "Code-Snapshot: " in body
    # the fork stays as it is
    assert git(home / "store.git", "rev-parse", f"refs/heads/sessions/{fid}").stdout.strip() == (
        fork_head
    )
    # the parent's next request carries the fork's conclusion, as data, naming the fork
    server.requests.clear()
    turn(server, root, sid[:8], "what did the fork find?", [], "it found B")
    sent = server.requests[-1]["messages"]
    carrying = [m for m in sent if "Approach B works" in json.dumps(m)]
    assert carrying and all(m["role"] == "user" for m in carrying)
    assert fid in carrying[0]["content"] and "try B" in carrying[0]["content"]
    assert "<merged_fork_data>" in carrying[0]["content"]
    assert not any(m["role"] == "system" and fid in json.dumps(m) for m in sent)
    # the transcript records the merge
    shown = gitsessions("show", sid[:8], cwd=tmp_path)
    assert f"[merge] fork {fid}" in shown.stdout
    # list marks the fork merged
    listed = gitsessions("list", "--json", cwd=tmp_path)
    rows = {r["id"]: r for r in json.loads(listed.stdout)}
    assert rows[fid]["merged_into"] == sid and rows[sid]["merged_into"] is None
    # merging the same fork head again changes nothing
    again = gitsessions("merge", fid[:8], "--chat", cwd=tmp_path)
    assert again.returncode == 0 and "already merged" in again.stderr


def test_a_conflicting_merge_keeps_both_sides(server, tmp_path, home):
    root = make_project(tmp_path / "project")
    sid = write_turn(server, root, "one.txt", "one\n")
    fid = fork_worktree(tmp_path, sid)["id"]
    turn(
        server,
        tmp_path,
        fid[:8],
        "fork's way",
        [tool("write_file", path="one.txt", content="the fork's line\n")],
        "fork done",
    )
    turn(
        server,
        root,
        sid[:8],
        "parent's way",
        [tool("write_file", path="one.txt", content="the parent's line\n")],
        "parent done",
    )
    done = gitsessions("merge", fid[:8], "--json", cwd=tmp_path)
    assert done.returncode == 1, done.stderr  # as git merge says a conflict
    answer = json.loads(done.stdout)
    assert answer["code"]["conflicts"] == ["one.txt"]
    text = (root / "one.txt").read_text()
    assert "<<<<<<< " in text and "the parent's line" in text and "the fork's line" in text
    assert "git add" in done.stderr and "one.txt" in done.stderr
    # git sees the conflict as git merge leaves one: three stages in the index
    stages = pgit(root, "ls-files", "-u", "--", "one.txt").split("\n")
    assert sorted(line.split()[2] for line in stages if line) == ["1", "2", "3"]
    assert "UU one.txt" in pgit(root, "status", "--porcelain")
    # both sides stay whole in git
    ours, theirs = answer["code"]["ours"], answer["code"]["theirs"]
    assert pgit(root, "show", f"{ours}:one.txt") == "the parent's line\n"
    assert pgit(root, "show", f"{theirs}:one.txt") == "the fork's line\n"
    assert pgit(root, "show", ":3:one.txt") == "the fork's line\n"
    # the conversation is merged all the same
    assert len(parents(home, sid)) == 3
    # take the fork's side and finish as git says
    pgit(root, "checkout", "--theirs", "one.txt")
    pgit(root, "add", "one.txt")
    assert (root / "one.txt").read_text() == "the fork's line\n"


def test_merge_refuses_work_no_snapshot_holds_unless_forced(server, tmp_path, home):
    root, sid, fid = fork_that_adds_two(server, tmp_path)
    (root / "mine.txt").write_text("typed by hand, in no snapshot\n")
    head = parents(home, sid)[0]
    refused = gitsessions("merge", fid[:8], cwd=tmp_path)
    assert refused.returncode != 0 and "mine.txt" in refused.stderr and "--force" in refused.stderr
    assert parents(home, sid)[0] == head and not (root / "two.txt").exists()
    forced = gitsessions("merge", fid[:8], "--force", "--json", cwd=tmp_path)
    assert forced.returncode == 0, forced.stderr
    saved = json.loads(forced.stdout)["code"]["saved"]
    assert pgit(root, "show", f"{saved}:mine.txt") == "typed by hand, in no snapshot\n"
    assert (root / "two.txt").read_text() == "two\n" and (root / "mine.txt").exists()
    assert "snapshot restore" in forced.stderr


def test_chat_only_and_code_only(server, tmp_path, home):
    root, sid, fid = fork_that_adds_two(server, tmp_path)
    head = parents(home, sid)[0]
    code_only = gitsessions("merge", fid[:8], "--code", cwd=tmp_path)
    assert code_only.returncode == 0, code_only.stderr
    assert (root / "two.txt").exists() and parents(home, sid)[0] == head
    chat_only = gitsessions("merge", fid[:8], "--chat", cwd=tmp_path)
    assert chat_only.returncode == 0, chat_only.stderr
    assert len(parents(home, sid)) == 3
    # the chat merge after the code one leaves the files as they are
    assert (root / "two.txt").read_text() == "two\n"
    assert "code:" not in chat_only.stderr  # --chat: the code side is not touched


def test_a_session_that_is_no_fork_needs_into(server, tmp_path, home):
    root = make_project(tmp_path / "project")
    sid = write_turn(server, root, "one.txt", "one\n")
    done = gitsessions("merge", sid[:8], cwd=tmp_path)
    assert done.returncode != 0 and "--into" in done.stderr
    itself = gitsessions("merge", sid[:8], "--into", sid[:8], "--chat", cwd=tmp_path)
    assert itself.returncode != 0 and "into itself" in itself.stderr


def test_merge_in_the_chat_says_how_to_finish_a_conflict(server, tmp_path, home):
    root = make_project(tmp_path / "project")
    sid = write_turn(server, root, "one.txt", "one\n")
    fid = fork_worktree(tmp_path, sid)["id"]
    turn(server, tmp_path, fid[:8], "fork's way",
         [tool("write_file", path="one.txt", content="the fork's line\n")],
         "The fork's way is better.")  # fmt: skip
    parents_line = [tool("write_file", path="one.txt", content="the parent's line\n")]
    turn(server, root, sid[:8], "parent's way", parents_line, "parent done")
    child = spawn(server.base_url, root, "--resume", sid[:8])
    said = " ".join(say(child, f"\\merge {fid[:8]}").split())
    assert "C one.txt" in said and "git add FILE" in said and "--theirs" in said, said
    assert f"fork {fid[:8]}" in said and "merged into" in said
    server.reply(content="I will take the fork's way")
    say(child, "which way now?")
    leave(child)
    sent = server.requests[-1]["messages"]
    assert any(
        "The fork's way is better." in str(m["content"]) for m in sent if m["role"] == "user"
    )
    assert "<<<<<<< " in (root / "one.txt").read_text()
    merges = git(home / "store.git", "rev-list", "--merges", f"refs/heads/sessions/{sid}")
    assert len(merges.stdout.split()) == 1  # the turn after it goes on from the merge
