"""`fork --worktree`, `worktree list|remove|restore`, and resuming a fork in its
worktree: real project repositories, the real CLI, stock git to check."""

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import exec_args, git, run_gitsessions
from tests.project_helpers import (
    fsck_project,
    gitsessions,
    gitsessions_process,
    make_project,
    pgit,
    tool,
    user_state,
    working_files,
    write_turn,
)


def header(home: Path, session: str) -> dict:
    shown = git(home / "store.git", "show", f"refs/heads/sessions/{session}:session.json")
    return json.loads(shown.stdout)


def fork(home: Path, cwd: Path, session: str, *args: str) -> dict:
    done = gitsessions("fork", session, "--worktree", "--json", *args, cwd=cwd)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def worktree_paths(root: Path) -> list[str]:
    listed = pgit(root, "worktree", "list", "--porcelain").splitlines()
    return [line.removeprefix("worktree ") for line in listed if line.startswith("worktree ")]


def test_fork_with_worktree_at_the_current_turn(server, tmp_path, home):
    root = make_project(tmp_path / "project")
    sid = write_turn(server, root, "one.txt", "one\n")
    sid = write_turn(server, root, "two.txt", "two\n", sid)
    before = user_state(root)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    made = fork(home, elsewhere, sid[:8], "--title", "try another way")
    assert set(made) == {"id", "parent_id", "fork_point", "worktree"}
    assert set(made["worktree"]) == {"path", "branch", "base"}
    short = made["id"][:8]
    path = Path(made["worktree"]["path"])
    assert path == home / "worktrees" / f"project-{short}"
    assert made["worktree"]["branch"] == f"gitsessions/{short}"
    assert made["parent_id"] == sid
    # the worktree holds the turn's exact code: committed, staged, unstaged, untracked
    assert working_files(path) == working_files(root)
    assert not (path / "build").exists() and not (path / "debug.log").exists()
    # stock git sees it all
    assert str(path) in worktree_paths(root)
    log = pgit(root, "log", "--format=%s", f"gitsessions/{short}").splitlines()
    assert log[0].startswith("gitsessions: uncommitted work of session") and log[-1] == "initial"
    assert pgit(path, "status", "--porcelain") == ""
    assert user_state(root) == before  # the main checkout did not move
    mark = header(home, made["id"])["worktree"]
    assert mark == {
        "path": str(path),
        "branch": f"gitsessions/{short}",
        "base": made["worktree"]["base"],
        "repo": str(root),
        "removed_at": None,
    }
    assert header(home, made["id"])["title"] == "try another way"
    fork_log = git(
        home / "store.git", "log", "-1", "--format=%B", f"refs/heads/sessions/{made['id']}"
    )
    assert f"Code-Snapshot: {made['worktree']['base']}" in fork_log.stdout
    fsck_project(root)


def test_fork_at_an_earlier_turn_has_that_turns_files(server, tmp_path, home):
    root = make_project(tmp_path / "project")
    sid = write_turn(server, root, "one.txt", "one\n")
    at_turn_one = working_files(root)
    sid = write_turn(server, root, "two.txt", "two\n", sid)
    (root / "one.txt").write_text("changed by hand after turn 1\n")
    made = fork(home, tmp_path, sid, "--at", "turn:1")
    path = Path(made["worktree"]["path"])
    assert working_files(path) == at_turn_one
    assert not (path / "two.txt").exists()
    # the chat starts at turn 1's last commit
    turn_one = git(home / "store.git", "log", "--format=%H %s", f"refs/heads/sessions/{sid}")
    commits = [line.split(" ", 1) for line in turn_one.stdout.splitlines()]
    newest_of_turn_one = next(c for c, s in commits if s.startswith(("turn 1.", "turn 1:")))
    assert made["fork_point"] == newest_of_turn_one
    bad = gitsessions("fork", sid, "--worktree", "--at", "turn:9", cwd=tmp_path)
    assert bad.returncode == 1 and bad.stderr.startswith("error: ") and "no turn 9" in bad.stderr
    # a chat-only fork at turn 1: the same fork point, no worktree
    plain = json.loads(gitsessions("fork", sid, "--at", "turn:1", "--json", cwd=tmp_path).stdout)
    assert plain["fork_point"] == newest_of_turn_one and "worktree" not in plain
    assert plain["parent_id"] == sid
    bad = gitsessions("fork", sid, "--at", "turn:9", cwd=tmp_path)
    assert bad.returncode == 1 and "no turn 9" in bad.stderr


def test_two_forks_have_separate_worktrees_without_cross_talk(server, tmp_path, home):
    root = make_project(tmp_path / "project")
    sid = write_turn(server, root, "one.txt", "one\n")
    before = user_state(root)
    a = fork(home, tmp_path, sid)
    b = fork(home, tmp_path, sid)
    path_a, path_b = Path(a["worktree"]["path"]), Path(b["worktree"]["path"])
    assert path_a != path_b and a["worktree"]["branch"] != b["worktree"]["branch"]
    files_b = working_files(path_b)
    (path_a / "only-in-a.txt").write_text("a's work\n")
    pgit(path_a, "add", "-A")
    pgit(path_a, "commit", "-q", "-m", "work in fork a")
    assert working_files(path_b) == files_b
    assert not (root / "only-in-a.txt").exists()
    assert user_state(root) == before
    assert (
        pgit(root, "log", "-1", "--format=%s", a["worktree"]["branch"]).strip() == "work in fork a"
    )
    assert "work in fork a" not in pgit(root, "log", "--format=%s", b["worktree"]["branch"])
    assert "work in fork a" not in pgit(root, "log", "--format=%s", "main")
    fsck_project(root)


def test_resume_of_a_worktree_fork_works_in_it_from_anywhere(server, tmp_path, home):
    root = make_project(tmp_path / "project")
    sid = write_turn(server, root, "one.txt", "one\n")
    made = fork(home, tmp_path, sid)
    path = Path(made["worktree"]["path"])
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    server.reply(content=None, tool_calls=[tool("run_shell", command="pwd > where.txt")])
    server.reply(content="done")
    done = gitsessions(
        "exec", "where am I", "--resume", made["id"][:8], "--base-url", server.base_url,
        "--model", "fake-model", "--auto-approve", cwd=elsewhere,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert f"working in the worktree of session {made['id'][:8]}" in done.stderr
    # its prompt is ours, for the worktree instead of the project: nothing to say
    assert "system prompt stored with this session is not sent" not in done.stderr
    assert (path / "where.txt").read_text().strip() == str(path)
    assert not (elsewhere / "where.txt").exists() and not (root / "where.txt").exists()
    # its snapshots are its own
    assert pgit(root, "rev-parse", f"refs/gitsessions/snapshots/{made['id']}").strip()
    # a plain fork of the fork, and an import, never carry the worktree mark
    plain = gitsessions("fork", made["id"], "--json", cwd=tmp_path)
    assert "worktree" not in header(home, json.loads(plain.stdout)["id"])
    exported = gitsessions("export", made["id"], cwd=tmp_path)
    doc = json.loads(exported.stdout)
    assert "worktree" not in doc
    doc["worktree"] = {"path": str(path), "branch": "x", "base": "y", "repo": str(root)}
    imported = gitsessions("import", "-", "--new-id", input=json.dumps(doc), cwd=tmp_path)
    assert imported.returncode == 0, imported.stderr
    assert "worktree" not in header(home, imported.stdout.strip())


def test_list_remove_refuses_dirty_then_force_restore(server, tmp_path, home):
    root = make_project(tmp_path / "project")
    sid = write_turn(server, root, "one.txt", "one\n")
    made = fork(home, tmp_path, sid)
    fid, path = made["id"], Path(made["worktree"]["path"])
    rows = json.loads(gitsessions("worktree", "list", "--json", cwd=tmp_path).stdout)
    assert [(r["session"], r["path"], r["branch"], r["state"]) for r in rows] == [
        (fid, str(path), f"gitsessions/{fid[:8]}", "clean")
    ]
    (path / "scratch.txt").write_text("untracked work\n")
    rows = json.loads(gitsessions("worktree", "list", "--json", cwd=tmp_path).stdout)
    assert rows[0]["state"] == "dirty"
    piped = gitsessions("worktree", "list", cwd=tmp_path).stdout  # one record a line
    assert piped.splitlines() == [f"{fid}\tdirty\tgitsessions/{fid[:8]}\t{path}"]
    refused = gitsessions("worktree", "remove", fid[:8], cwd=tmp_path)
    assert refused.returncode == 1
    assert refused.stderr.startswith("error: ") and "untracked" in refused.stderr
    assert path.is_dir() and (path / "scratch.txt").exists()
    removed = gitsessions("worktree", "remove", fid[:8], "--force", cwd=tmp_path)
    assert removed.returncode == 0, removed.stderr
    assert not path.exists() and str(path) not in worktree_paths(root)
    assert pgit(root, "rev-parse", "--verify", f"gitsessions/{fid[:8]}").strip()  # branch kept
    saved = pgit(root, "rev-parse", f"refs/gitsessions/snapshots/{fid}").strip()
    assert pgit(root, "show", f"{saved}:scratch.txt") == "untracked work\n"
    assert header(home, fid)["worktree"]["removed_at"]
    events = git(home / "store.git", "log", "-1", "--format=%B", f"refs/heads/sessions/{fid}")
    assert "Event: worktree-remove" in events.stdout
    rows = json.loads(gitsessions("worktree", "list", "--json", cwd=tmp_path).stdout)
    assert rows[0]["state"] == "missing"
    # the session keeps working; resuming says in one line how to bring the worktree back
    here = tmp_path / "here"
    here.mkdir()
    done = gitsessions(
        "exec", "hi", "--resume", fid, "--base-url", server.base_url, "--model", "fake-model",
        cwd=here,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    notes = [line for line in done.stderr.splitlines() if "worktree restore" in line]
    assert notes == [
        f"note: the worktree of session {fid[:8]} is gone ({path}); the tools work in "
        f"{here}; `gitsessions worktree restore {fid[:8]}` brings it back"
    ]
    restored = gitsessions("worktree", "restore", fid[:8], cwd=tmp_path)
    assert restored.returncode == 0, restored.stderr
    assert path.is_dir() and str(path) in worktree_paths(root)
    assert (path / "one.txt").read_text() == "one\n"
    assert header(home, fid)["worktree"]["removed_at"] is None
    again = gitsessions("worktree", "restore", fid[:8], cwd=tmp_path)
    assert again.returncode == 1 and "is there" in again.stderr
    no_mark = gitsessions("worktree", "remove", sid[:8], cwd=tmp_path)
    assert no_mark.returncode == 1 and "has no worktree" in no_mark.stderr
    fsck_project(root)
    assert subprocess.run(["git", "-C", str(root), "worktree", "prune", "-n"]).returncode == 0


def test_fork_worktree_of_a_session_outside_a_repository_is_refused(server, tmp_path, home):
    plain = tmp_path / "plain"
    plain.mkdir()
    done = run_gitsessions(*exec_args(server, plain), "hi", "--json")
    sid = json.loads(done.stdout)["session"]
    refused = gitsessions("fork", sid, "--worktree", cwd=tmp_path)
    assert refused.returncode == 1 and "not a git repository" in refused.stderr
    assert not (home / "worktrees").exists() or not any((home / "worktrees").iterdir())
    assert len(json.loads(gitsessions("list", "--json", cwd=tmp_path).stdout)) == 1


def test_a_commit_in_a_worktree_fork_names_the_fork(server, tmp_path, home):
    from tests.test_git_hooks import hook_env

    root = make_project(tmp_path / "project")
    sid = write_turn(server, root, "one.txt", "one\n")
    made = fork(home, tmp_path, sid)
    path = Path(made["worktree"]["path"])
    env = hook_env()
    installed = subprocess.run(
        [sys.executable, "-m", "gitsessions", "hooks", "install", "--workspace", str(root)],
        capture_output=True, text=True, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr
    (path / "one.txt").write_text("one, in the fork\n")
    for args in (["add", "-A"], ["commit", "-q", "-m", "fork work"]):
        done = subprocess.run(
            ["git", "-C", str(path), "-c", "user.name=T", "-c", "user.email=t@t", *args],
            capture_output=True, text=True, env=env,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
    message = pgit(path, "log", "-1", "--format=%B")
    assert f"Gitsessions-Session: {made['id']}" in message
    assert pgit(root, "log", "-1", "--format=%s", "main").strip() == "initial"


def test_a_mark_whose_project_is_not_here_is_said_and_ignored(server, tmp_path, home):
    root = make_project(tmp_path / "project")
    server.reply(content="ok")
    server.reply(content="A title")
    done = run_gitsessions(*exec_args(server, root), "hello", "--json")
    assert done.returncode == 0, done.stderr
    fid = fork(home, tmp_path, json.loads(done.stdout)["session"])["id"]
    root.rename(tmp_path / "moved")  # as on another machine: no project at `repo`
    here = tmp_path / "here"
    here.mkdir()
    server.reply(content="still fine")
    resumed = gitsessions(
        "exec", "hi", "--resume", fid, "--base-url", server.base_url, "--model", "fake-model",
        cwd=here,
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    notes = [line for line in resumed.stderr.splitlines() if "not on this machine" in line]
    assert len(notes) == 1 and f"the tools work in {here}" in notes[0]


def test_worktree_forks_stay_here_after_their_parent_is_deleted(server, tmp_path, home):
    root = make_project(tmp_path / "project")
    sid = write_turn(server, root, "one.txt", "one\n")
    made = fork(home, root, sid[:8], "--title", "the worktree fork")
    plain = gitsessions("fork", sid[:8], cwd=root).stdout.strip()
    assert gitsessions("delete", sid[:8], "--yes", cwd=root).returncode == 0
    listed = gitsessions("list", "--here", "--json", cwd=root)
    assert {r["id"] for r in json.loads(listed.stdout)} == {made["id"], plain}
    done = gitsessions_process("chat", "--resume", "--workspace", str(root), cwd=root, input="")
    assert made["id"][:8] in done.stderr and "the worktree fork" in done.stderr  # the picker
    # another project: not one made of the same files in the same second, whose root
    # commit (so identity) would be this one's
    elsewhere = tmp_path / "other"
    elsewhere.mkdir()
    pgit(elsewhere, "init", "-q", "-b", "main")
    pgit(elsewhere, "commit", "-q", "--allow-empty", "-m", "another project")
    assert json.loads(gitsessions("list", "--here", "--json", cwd=elsewhere).stdout) == []


def test_worktree_remove_force_prints_the_command_that_brings_the_changes_back(
    server, tmp_path, home
):
    from tests.test_rewind import restore_with

    root = make_project(tmp_path / "project")
    sid = write_turn(server, root, "one.txt", "one\n")
    made = fork(home, tmp_path, sid)
    path = Path(made["worktree"]["path"])
    (path / "scratch.txt").write_text("untracked work\n")
    (path / "one.txt").write_text("one, edited in the worktree\n")
    before = working_files(path)
    removed = gitsessions("worktree", "remove", made["id"][:8], "--force", cwd=tmp_path)
    assert removed.returncode == 0, removed.stderr
    assert not path.exists()
    assert f"gitsessions worktree restore {made['id'][:8]} && gitsessions snapshot restore" in (
        removed.stderr
    )
    restore_with(removed.stderr, tmp_path)
    assert working_files(path) == before
    assert (path / "scratch.txt").read_text() == "untracked work\n"


def test_restore_after_its_branch_was_deleted_is_at_the_forks_newest_turn(server, tmp_path, home):
    """The worktree removed and its branch deleted by hand: `worktree restore` makes both
    again at the code of the fork's latest turn, not at its fork point, and says so."""
    root = make_project(tmp_path / "project")
    sid = write_turn(server, root, "one.txt", "one\n")
    made = fork(home, tmp_path, sid)
    fid, path = made["id"], Path(made["worktree"]["path"])
    write_turn(server, path, "two.txt", "two\n", fid)
    removed = gitsessions("worktree", "remove", fid[:8], "--force", cwd=tmp_path)
    assert removed.returncode == 0, removed.stderr
    pgit(root, "branch", "-D", f"gitsessions/{fid[:8]}")
    restored = gitsessions("worktree", "restore", fid[:8], cwd=tmp_path)
    assert restored.returncode == 0, restored.stderr
    assert "made again at the code of turn 2" in restored.stderr, restored.stderr
    assert (path / "two.txt").read_text() == "two\n"
    assert (path / "one.txt").read_text() == "one\n"
    assert pgit(path, "status", "--porcelain") == ""
    fsck_project(root)
