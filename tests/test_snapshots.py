"""Code snapshots per turn, in real project repositories checked with stock git."""

import json
import os
from pathlib import Path

from gitsessions.services.code import snapshots, snapshotter
from gitsessions.values.ids import new_id
from tests.conftest import exec_args, run_gitsessions
from tests.project_helpers import (
    fsck_project,
    make_project,
    pgit,
    trailers,
    tree_files,
    user_state,
    working_files,
)


def tool(name: str, **arguments):
    return {"name": name, "arguments": arguments}


def test_snapshot_is_the_working_tree_minus_ignored_files_and_touches_nothing(tmp_path):
    root = make_project(tmp_path / "project")
    before = user_state(root)
    index_bytes = (root / ".git" / "index").read_bytes()
    project = snapshots.find_project(root / "src", os.environ)
    assert project is not None and project.root == root
    sid = new_id()
    snap = snapshotter.take(project, os.environ, sid, "gitsessions snapshot: test")
    # the user's index file is byte for byte the same, and so is everything they see
    assert (root / ".git" / "index").read_bytes() == index_bytes
    assert user_state(root) == before
    files = tree_files(root, snap.commit)
    assert files == working_files(root)
    assert "src/old.py" not in files and "notes.txt" in files  # deleted out, untracked in
    assert files["README.md"] == b"readme, staged edit\n"
    assert files["src/app.py"] == b"print('v2, unstaged')\n"
    assert not any(name.startswith("build/") or name.endswith(".log") for name in files)
    ref = f"refs/gitsessions/snapshots/{sid}"
    assert pgit(root, "rev-parse", ref).strip() == snap.commit
    assert pgit(root, "rev-parse", f"{snap.commit}^1").strip() == before["head"].strip()
    # an unchanged tree on the same HEAD reuses the snapshot: no new commit
    again = snapshotter.take(project, os.environ, sid, "gitsessions snapshot: again")
    assert again.commit == snap.commit and not again.new
    # a change makes a new one on HEAD alone; a keep commit on the ref holds both
    (root / "notes.txt").write_text("more notes\n")
    third = snapshotter.take(project, os.environ, sid, "gitsessions snapshot: third")
    assert third.new and third.commit != snap.commit
    assert pgit(root, "rev-parse", f"{third.commit}^@").split() == [before["head"].strip()]
    assert pgit(root, "rev-parse", f"{ref}^1", f"{ref}^2").split() == [third.commit, snap.commit]
    assert pgit(root, "log", "-1", "--format=%s", ref).startswith("gitsessions keep: session ")
    assert snapshots.newest(project, os.environ, sid).commit == third.commit
    assert tree_files(root, third.commit)["notes.txt"] == b"more notes\n"
    assert pgit(root, "stash", "list") == ""
    pgit(root, "gc", "-q", "--prune=now")  # git gc keeps every snapshot
    assert pgit(root, "cat-file", "-t", snap.commit).strip() == "commit"
    fsck_project(root)


def test_large_files_are_left_out_and_named(tmp_path):
    root = make_project(tmp_path / "project")
    (root / "big.dat").write_bytes(b"x" * 5000)
    project = snapshots.find_project(root, os.environ)
    assert project is not None
    snap = snapshotter.take(project, os.environ, new_id(), "gitsessions snapshot: big", 1000)
    assert snap.left_out == ("big.dat",)
    assert "big.dat" not in tree_files(root, snap.commit)
    message = pgit(root, "log", "-1", "--format=%B", snap.commit)
    assert "big.dat" in message
    taker = snapshotter.Snapshotter(root, os.environ, new_id(), max_file_bytes=1000)
    taker("gitsessions snapshot: one")
    taker("gitsessions snapshot: two")
    assert taker.notes == ["note: left out of the code snapshot (over 1,000 bytes): big.dat"]


def test_a_repository_without_commits_is_snapshotted(tmp_path):
    root = tmp_path / "fresh"
    root.mkdir()
    pgit(root, "init", "-q")
    (root / "a.txt").write_text("a\n")
    project = snapshots.find_project(root, os.environ)
    assert project is not None
    snap = snapshotter.take(project, os.environ, new_id(), "gitsessions snapshot: unborn")
    assert snap.head is None and tree_files(root, snap.commit) == {"a.txt": b"a\n"}
    assert pgit(root, "status", "--porcelain") == "?? a.txt\n"


def test_each_turn_commit_names_its_code_snapshot(server, tmp_path, home):
    root = make_project(tmp_path / "project")
    before = user_state(root)
    server.reply(content=None, tool_calls=[tool("write_file", path="made.txt", content="new\n")])
    server.reply(content="Wrote made.txt.")
    server.reply(content="A title")
    done = run_gitsessions(*exec_args(server, root), "write it", "--auto-approve", "--json")
    assert done.returncode == 0, done.stderr
    sid = json.loads(done.stdout)["session"]
    snaps = trailers(home, sid, "Code-Snapshot")
    # the summary, turn 1.2 (reply), 1.1 (write_file), 1 (prompt), create: the prompt's
    # snapshot is taken while the model answers; a step that ran tools takes its own; a
    # reply alone (and the summary after it) changes no file and names the one before it
    assert len(snaps) == 5 and snaps[3:] == ["", ""] and snaps[0] == snaps[1] == snaps[2] != ""
    ref_name = f"refs/gitsessions/snapshots/{sid}"
    newest, before_tools = pgit(root, "rev-parse", f"{ref_name}^1", f"{ref_name}^2").split()
    assert newest == snaps[2]  # the keep commit's first parent; the prompt's below it
    assert tree_files(root, before_tools) == {
        k: v for k, v in working_files(root).items() if k != "made.txt"
    }
    assert tree_files(root, snaps[1]) == working_files(root)
    # a turn of one reply names the snapshot taken while the model answered
    server.reply(content="nothing to do")
    done = run_gitsessions(*exec_args(server, root), "look", "--resume", sid)
    assert done.returncode == 0, done.stderr
    assert trailers(home, sid, "Code-Snapshot")[:2] == [snaps[0], ""]
    assert pgit(root, "rev-parse", f"{ref_name}^1").strip() == snaps[0]
    after = user_state(root)
    assert sorted(after["status"].splitlines()) == sorted(
        [*before["status"].splitlines(), "?? made.txt"]
    )
    assert {k: v for k, v in after.items() if k != "status"} == {
        k: v for k, v in before.items() if k != "status"
    }
    fsck_project(root)


def test_no_snapshots_flag_and_config_key_turn_them_off(server, tmp_path, home):
    root = make_project(tmp_path / "project")
    done = run_gitsessions(*exec_args(server, root), "hi", "--no-snapshots", "--json")
    assert done.returncode == 0, done.stderr
    sid = json.loads(done.stdout)["session"]
    assert not any(trailers(home, sid, "Code-Snapshot"))
    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text("[snapshots]\nenabled = false\n")
    done = run_gitsessions(*exec_args(server, root), "hi again", "--resume", sid)
    assert done.returncode == 0, done.stderr
    assert not any(trailers(home, sid, "Code-Snapshot"))
    assert pgit(root, "for-each-ref", "refs/gitsessions") == ""
    (home / "config.toml").write_text("[snapshots]\nenabeld = false\n")
    done = run_gitsessions(*exec_args(server, root), "typo", "--resume", sid)
    assert done.returncode == 2 and "unknown key 'enabeld'" in done.stderr


def test_outside_a_repository_one_note_and_no_snapshot(server, tmp_path, home):
    plain = tmp_path / "plain"
    plain.mkdir()
    server.reply(content=None, tool_calls=[tool("write_file", path="a.txt", content="a")])
    server.reply(content="done")
    done = run_gitsessions(*exec_args(server, plain), "go", "--auto-approve", "--json")
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("not in a git repository; no code snapshots") == 1
    sid = json.loads(done.stdout)["session"]
    assert not any(trailers(home, sid, "Code-Snapshot"))


def test_large_file_note_from_exec(server, tmp_path, home):
    root = make_project(tmp_path / "project")
    (root / "huge.bin").write_bytes(b"y" * 4096)
    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text("[snapshots]\nmax_file_bytes = 1024\n")
    server.reply(content=None, tool_calls=[tool("read_file", path="README.md")])
    server.reply(content="read it")
    done = run_gitsessions(*exec_args(server, root), "read", "--json")
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("left out of the code snapshot (over 1 KiB): huge.bin") == 1
    sid = json.loads(done.stdout)["session"]
    newest = trailers(home, sid, "Code-Snapshot")[0]
    assert "huge.bin" not in tree_files(root, newest)
    assert Path(root / "huge.bin").exists()


def test_delete_takes_the_snapshot_ref_and_names_the_kept_worktree(server, tmp_path, home):
    root = make_project(tmp_path / "project")
    server.reply(content=None, tool_calls=[tool("write_file", path="made.txt", content="new\n")])
    server.reply(content="Wrote made.txt.")
    server.reply(content="A title")
    done = run_gitsessions(*exec_args(server, root), "write it", "--auto-approve", "--json")
    assert done.returncode == 0, done.stderr
    sid = json.loads(done.stdout)["session"]
    fork = run_gitsessions("fork", sid, "--worktree", "--json")
    assert fork.returncode == 0, fork.stderr
    made = json.loads(fork.stdout)
    fid, path = made["id"], made["worktree"]["path"]
    named = set(trailers(home, fid, "Code-Snapshot")) - {""}
    gone = run_gitsessions("delete", sid, "--yes")
    assert gone.returncode == 0, gone.stderr
    # the fork's history names the parent's snapshots: they stay while it does
    assert f"deleted {sid}" in gone.stderr
    ref = f"refs/gitsessions/snapshots/{sid}"
    for snap in named:
        pgit(root, "merge-base", "--is-ancestor", snap, ref)
    kept = run_gitsessions("delete", fid, "--yes")
    assert f"deleted {fid} and its code snapshots" in kept.stderr
    assert pgit(root, "for-each-ref", "refs/gitsessions/snapshots/") == ""
    assert f"its worktree {path} (branch gitsessions/{fid[:8]}) is kept" in kept.stderr
    assert Path(path).is_dir()  # the user's code stays
    fsck_project(root)
