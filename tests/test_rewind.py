"""`rewind` of the chat and of the code, and its refusal: never destructive."""

import json
import shlex
from pathlib import Path

from tests.conftest import exec_args, git, run_gitsessions
from tests.project_helpers import fsck_project, gitsessions, make_project, pgit, working_files


def tool(name: str, **arguments):
    return {"name": name, "arguments": arguments}


def turn(server, root: Path, calls: list, session: str | None = None) -> str:
    server.reply(content=None, tool_calls=calls)
    server.reply(content="done")
    args = [*exec_args(server, root), "do it", "--auto-approve", "--json"]
    done = run_gitsessions(*args, *(["--resume", session] if session else []))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["session"]


def show(home: Path, session: str, *args: str):
    done = run_gitsessions("show", session, "--json", *args)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def plan(home: Path, session: str) -> list:
    shown = git(home / "store.git", "show", f"refs/heads/sessions/{session}:plan.json")
    return json.loads(shown.stdout)["plan"]


def three_turns(server, root: Path) -> tuple[str, dict, list]:
    plan_one = [{"step": "write one", "status": "completed"}]
    sid = turn(
        server,
        root,
        [tool("write_file", path="one.txt", content="one\n"), tool("update_plan", items=plan_one)],
    )
    files_one = working_files(root)
    context_one = show(root, sid, "--context")
    turn(server, root, [tool("write_file", path="one.txt", content="one, edited\n")], sid)
    turn(
        server,
        root,
        [
            tool("write_file", path="three.txt", content="three\n"),
            tool("run_shell", command="rm notes.txt"),
            tool("update_plan", items=[{"step": "write three", "status": "completed"}]),
        ],
        sid,
    )
    return sid, files_one, context_one


def test_rewind_chat_and_code_to_a_turn(server, tmp_path, home):
    root = make_project(tmp_path / "project")
    sid, files_one, context_one = three_turns(server, root)
    head_before = pgit(root, "rev-parse", "HEAD")
    staged_before = pgit(root, "diff", "--cached")
    transcript_before = show(home, sid)
    done = gitsessions("rewind", sid[:8], "--to", "turn:1", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert working_files(root) == files_one  # three.txt gone, notes.txt back, one.txt as it was
    assert "  M one.txt" in done.stderr and "  D three.txt" in done.stderr
    assert "  A notes.txt" in done.stderr
    assert "working context goes from" in done.stderr
    # the chat: turn 1's context and plan; the transcript keeps everything, plus the record
    assert show(home, sid, "--context") == context_one
    assert plan(home, sid) == [{"step": "write one", "status": "completed"}]
    transcript = show(home, sid)
    assert transcript[: len(transcript_before)] == transcript_before
    assert len(transcript) == len(transcript_before) + 1
    assert transcript[-1]["role"] == "system" and transcript[-1]["content"].startswith("[rewind]")
    message = git(home / "store.git", "log", "-1", "--format=%B", f"refs/heads/sessions/{sid}")
    assert "Event: rewind" in message.stdout and "Rewind-To: 1" in message.stdout
    assert "Code-Snapshot: " in message.stdout
    # the user's HEAD and index did not move; stock git is happy
    assert pgit(root, "rev-parse", "HEAD") == head_before
    assert pgit(root, "diff", "--cached") == staged_before
    assert pgit(root, "stash", "list") == ""
    fsck_project(root)
    # the next turn goes on numbering after the newest turn
    turn(server, root, [tool("read_file", path="one.txt")], sid)
    subjects = git(home / "store.git", "log", "--format=%s", f"refs/heads/sessions/{sid}")
    assert subjects.stdout.splitlines()[-3].startswith("turn 1")
    assert subjects.stdout.splitlines()[0].startswith("turn 4.")


def test_rewind_code_refuses_changes_no_snapshot_holds_unless_forced(server, tmp_path, home):
    root = make_project(tmp_path / "project")
    sid, files_one, _context = three_turns(server, root)
    (root / "three.txt").write_text("edited by hand, in no snapshot\n")
    head_before = git(home / "store.git", "rev-parse", f"refs/heads/sessions/{sid}").stdout
    refused = gitsessions("rewind", sid, "--to", "turn:1", "--code", cwd=tmp_path)
    assert refused.returncode == 1
    assert refused.stderr.startswith("error: the workspace has changes no snapshot")
    assert "three.txt" in refused.stderr and "--force" in refused.stderr
    assert (root / "three.txt").read_text() == "edited by hand, in no snapshot\n"
    assert git(home / "store.git", "rev-parse", f"refs/heads/sessions/{sid}").stdout == head_before
    forced = gitsessions("rewind", sid, "--to", "turn:1", "--code", "--force", cwd=tmp_path)
    assert forced.returncode == 0, forced.stderr
    assert working_files(root) == files_one
    saved = forced.stderr.split("snapshot ")[1].split()[0].rstrip(";")
    assert pgit(root, "show", f"{saved}:three.txt") == "edited by hand, in no snapshot\n"
    # --code alone left the working context as it was
    context = show(home, sid, "--context")
    assert any("three" in json.dumps(m) for m in context)
    # and the code can go forward again: turn 3's snapshot is held
    again = gitsessions("rewind", sid, "--to", "turn:3", "--code", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert (root / "three.txt").read_text() == "three\n" and not (root / "notes.txt").exists()
    fsck_project(root)


def test_rewind_chat_only_and_bad_turns(server, tmp_path, home):
    root = make_project(tmp_path / "project")
    sid, _files_one, context_one = three_turns(server, root)
    files_now = working_files(root)
    done = gitsessions("rewind", sid, "--to", "turn:1", "--chat", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert working_files(root) == files_now and "code:" not in done.stderr
    assert show(home, sid, "--context") == context_one
    bad = gitsessions("rewind", sid, "--to", "turn:7", cwd=tmp_path)
    assert bad.returncode == 1 and "no turn 7 (its last turn is 3)" in bad.stderr
    bad = gitsessions("rewind", sid, "--to", "yesterday", cwd=tmp_path)
    assert bad.returncode == 2 and bad.stderr.startswith("error: expected turn:N")


def test_chat_slash_fork_worktree_and_rewind(server, tmp_path, home):
    from tests.test_chat import PROMPT, leave, plain, say, spawn

    root = make_project(tmp_path / "project")
    child = spawn(server.base_url, root, "--auto-approve")
    server.reply(content=None, tool_calls=[tool("write_file", path="one.txt", content="1\n")])
    server.reply(content="wrote one")
    server.reply(content="A title")
    say(child, "write one")
    files_one = working_files(root)
    server.reply(content=None, tool_calls=[tool("write_file", path="two.txt", content="2\n")])
    server.reply(content="wrote two")
    say(child, "write two")
    forked = say(child, "\\fork --worktree second try")
    assert "forked: " in forked and "gitsessions/" in forked
    fork_id = forked.split("forked: ")[1].split()[0]
    path = home / "worktrees" / f"project-{fork_id[:8]}"
    assert (path / "two.txt").read_text() == "2\n"
    assert "usage: \\rewind N" in say(child, "\\rewind abc")
    # \rewind shows what it would change and asks; no (Enter) changes nothing
    child.sendline("\\rewind 1")
    child.expect_exact("rewind to turn 1? [y/N] ")
    preview = plain(child.before)
    assert "D two.txt" in preview and "1 file would change" in preview
    assert "working context would go from" in preview
    assert (root / "two.txt").exists()
    child.sendline("")
    child.expect(PROMPT)
    assert "not rewound; nothing changed" in plain(child.before)
    assert (root / "two.txt").exists()
    child.sendline("\\rewind 1")
    child.expect_exact("[y/N] ")
    child.sendline("y")
    child.expect(PROMPT)
    assert "rewound to turn 1" in plain(child.before)
    assert working_files(root) == files_one
    assert "already at turn 1: nothing to change" in say(child, "\\rewind 1")
    (root / "scratch.txt").write_text("mine\n")  # in no snapshot: refused, unless --force
    refused = " ".join(say(child, "\\rewind 1").split())
    assert "holds (scratch.txt); nothing was changed. --force snapshots them first" in refused
    child.sendline("\\rewind 1 --force")
    child.expect_exact("[y/N] ")
    assert "would be saved as a snapshot first" in plain(child.before)
    child.sendline("y")
    child.expect(PROMPT)
    assert not (root / "scratch.txt").exists()
    restore_with(plain(child.before).replace("\r", ""), tmp_path)
    assert (root / "scratch.txt").read_text() == "mine\n"
    assert (path / "two.txt").exists()  # the fork's worktree is its own
    server.reply(content="still here")
    assert "still here" in say(child, "what now")
    leave(child)
    # the next request after the rewind held turn 1's context, not turn 2's
    last = server.requests[-1]["messages"]
    assert not any("write two" in (m.get("content") or "") for m in last)
    assert any("write one" in (m.get("content") or "") for m in last)
    fsck_project(root)


def test_ctrl_c_while_the_prompts_snapshot_is_taken_keeps_everything(server, tmp_path, home):
    from tests.test_chat import PROMPT, leave, say, spawn

    root = make_project(tmp_path / "project")
    child = spawn(server.base_url, root)
    server.delay(20)
    child.sendline("slow question")
    child.expect_exact("thinking")
    server.reply(content="second answer")
    child.sendintr()
    child.expect_exact("cancelled; the session is saved")  # the first Ctrl-C is enough
    child.expect(PROMPT)
    out = say(child, "next question")
    assert "second answer" in out and "no code snapshot" not in child.before
    leave(child)
    sid = json.loads(run_gitsessions("list", "--json").stdout)[0]["id"]
    snaps = [s for s in trailers_of(home, sid) if s]
    assert snaps and all(len(s) == 40 for s in snaps)
    assert tree_files_equal(root, snaps[0])
    fsck_project(root)


def trailers_of(home: Path, session: str) -> list[str]:
    from tests.project_helpers import trailers

    return trailers(home, session, "Code-Snapshot")


def tree_files_equal(root: Path, rev: str) -> bool:
    from tests.project_helpers import tree_files

    return tree_files(root, rev) == working_files(root)


def test_undo_after_a_rewind_names_the_turn_the_context_ends_with(server, tmp_path, home):
    from tests.test_chat import leave, say, spawn

    root = make_project(tmp_path / "project")
    sid, _files_one, _context_one = three_turns(server, root)
    code_only = gitsessions("rewind", sid, "--to", "turn:2", "--code", "--force", cwd=tmp_path)
    assert code_only.returncode == 0, code_only.stderr  # the chat keeps turn 3
    done = gitsessions("rewind", sid, "--to", "turn:1", "--chat", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    child = spawn(server.base_url, root, "--resume", sid[:8])
    assert "undone: turn 1" in say(child, "\\undo")  # not turn 3: the rewind dropped 2 and 3
    leave(child)
    log = json.loads(run_gitsessions("log", sid, "--json").stdout)
    assert [e["subject"] for e in log if e["event"] == "undo"] == ["undo: turn 1"]


def restore_with(printed: str, cwd: Path) -> None:
    """Run the command line on the line after "to get them back:" in `printed` (its
    `gitsessions` as this checkout's), each part of a `&&` chain in turn."""
    line = printed.split("to get them back:\n")[1].splitlines()[0]
    for part in line.split(" && "):
        words = shlex.split(part)
        assert words[0] == "gitsessions"
        done = gitsessions(*words[1:], cwd=cwd)
        assert done.returncode == 0, done.stderr


def test_rewind_force_prints_the_command_that_brings_the_changes_back(server, tmp_path, home):
    root = make_project(tmp_path / "project")
    sid, files_one, _context = three_turns(server, root)
    (root / "scratch.txt").write_text("an untracked file, in no snapshot\n")
    before = working_files(root)
    forced = gitsessions("rewind", sid, "--to", "turn:1", "--code", "--force", cwd=tmp_path)
    assert forced.returncode == 0, forced.stderr
    assert not (root / "scratch.txt").exists() and working_files(root) == files_one
    assert "to get them back:\ngitsessions snapshot restore " in forced.stderr
    restore_with(forced.stderr, tmp_path)
    assert working_files(root) == before  # the untracked file and the rest, as they were
    assert (root / "scratch.txt").read_text() == "an untracked file, in no snapshot\n"
    assert pgit(root, "status", "--porcelain").count("?? scratch.txt") == 1  # untracked again
    fsck_project(root)


def test_rewinding_twice_to_the_same_turn_commits_nothing(server, tmp_path, home):
    root = make_project(tmp_path / "project")
    sid, _files_one, _context = three_turns(server, root)
    assert gitsessions("rewind", sid, "--to", "turn:1", cwd=tmp_path).returncode == 0
    ref = f"refs/heads/sessions/{sid}"
    head = git(home / "store.git", "rev-parse", ref).stdout
    again = gitsessions("rewind", sid, "--to", "turn:1", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "already at turn 1: nothing to change" in again.stderr
    assert "rewound" not in again.stderr
    assert git(home / "store.git", "rev-parse", ref).stdout == head  # no empty commit
    chat = gitsessions("rewind", sid, "--to", "turn:1", "--chat", cwd=tmp_path)
    assert "already at turn 1" in chat.stderr
    assert git(home / "store.git", "rev-parse", ref).stdout == head


def test_snapshot_restore_refuses_what_no_snapshot_holds_and_non_snapshots(server, tmp_path, home):
    root = make_project(tmp_path / "project")
    sid, _files_one, _context = three_turns(server, root)
    snap = [s for s in trailers_of(home, sid) if s][-1]
    (root / "three.txt").write_text("by hand\n")
    refused = gitsessions("snapshot", "restore", snap, cwd=root)
    assert refused.returncode == 1 and "no snapshot holds (three.txt" in refused.stderr
    assert (root / "three.txt").read_text() == "by hand\n"
    head = pgit(root, "rev-parse", "HEAD").strip()
    other = gitsessions("snapshot", "restore", head[:12], cwd=root)
    assert other.returncode == 1 and "is not a gitsessions snapshot" in other.stderr
    bad = gitsessions("snapshot", "restore", "--", "-x", cwd=root)
    assert bad.returncode == 2 and "hex id" in bad.stderr
