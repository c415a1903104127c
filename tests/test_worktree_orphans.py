"""A `fork --worktree` killed between its `git worktree add` and its session's commit
(issue 42, item 10) left a worktree and a branch no session knows, and `doctor` saw
nothing. The fork is a real process held at the store's lock (taken here as `gc` takes
it) once git made the worktree, then killed with SIGKILL; `doctor` then names what it
left, `doctor --repair` keeps it while it holds a file of the user's (printing the git
command that would remove it) and removes it once it holds nothing else."""

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import REPO
from tests.project_helpers import fsck_project, make_project, pgit, write_turn

BOUND = 120.0  # seconds the fork may take to reach the lock on a loaded machine


def children(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/task/{pid}/children").read_text().strip()
    except OSError:
        return ""


def killed_fork(home: Path, root: Path, sid: str) -> Path:
    """Run `fork SID --worktree` until git has made its worktree and the fork waits
    for the store's lock, kill it there; the worktree's path."""
    lock = os.open(home / "store.git" / "gitsessions.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        fork = subprocess.Popen(
            [sys.executable, "-m", "gitsessions", "fork", sid, "--worktree"], cwd=root,
            env=dict(os.environ, PYTHONPATH=str(REPO)),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        made = home / "worktrees"
        deadline = time.monotonic() + BOUND
        while True:
            assert fork.poll() is None, "the fork ended before it reached the lock"
            assert time.monotonic() < deadline, "the fork never made its worktree"
            found = list(made.glob("project-*")) if made.is_dir() else []
            listed = pgit(root, "worktree", "list", "--porcelain")
            if found and f"worktree {found[0]}\n" in listed and not children(fork.pid):
                break  # git is done: the fork waits for the lock
            time.sleep(0.05)
        os.kill(fork.pid, signal.SIGKILL)
        fork.wait()
    finally:
        os.close(lock)
    return found[0]


def doctor(cli, *args: str, code: int) -> list[dict]:  # type: ignore[no-untyped-def]
    report = json.loads(cli("doctor", "--json", *args, code=code).stdout)
    return [f for f in report["findings"] if f["kind"] == "worktree"]


def test_doctor_finds_and_repairs_a_killed_worktree_fork_losing_nothing(
    server, cli, tmp_path, home, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    root = make_project(tmp_path / "project")
    sid = write_turn(server, root, "one.txt", "one\n")
    path = killed_fork(home, root, sid)
    branch = f"gitsessions/{path.name.removeprefix('project-')}"
    assert pgit(root, "branch", "--list", branch).strip()
    assert [s["id"] for s in cli.json("list")] == [sid]  # no session knows them
    record = next((home / "store.git" / "gitsessions" / "worktrees").iterdir())

    assert doctor(cli, code=0) == []  # a fork being made now (a fresh record) is no finding
    old = time.time() - 3600
    os.utime(record, (old, old))
    (found,) = doctor(cli, code=1)
    assert found["subject"] == str(path) and not found["repaired"]
    assert branch in found["detail"] and "doctor --repair` removes them" in found["detail"]

    (path / "mine-only.txt").write_text("the user's\n")  # a file of the user's: kept
    (kept,) = doctor(cli, "--repair", code=1)
    assert not kept["repaired"] and "untracked or ignored files" in kept["detail"]
    command = f"git -C {root} worktree remove --force {path} && git -C {root} branch -D {branch}"
    assert kept["detail"].endswith(f"to remove them: {command}")
    assert (path / "mine-only.txt").read_text() == "the user's\n"
    assert pgit(root, "branch", "--list", branch).strip()

    (path / "mine-only.txt").unlink()
    (repaired,) = doctor(cli, "--repair", code=0)
    assert repaired["repaired"] and repaired["detail"].endswith("; removed")
    assert not path.exists() and f"worktree {path}\n" not in pgit(root, "worktree", "list",
                                                                   "--porcelain")  # fmt: skip
    assert not pgit(root, "branch", "--list", branch).strip() and not record.exists()
    assert doctor(cli, code=0) == []
    fsck_project(root)


def test_a_branch_holding_commits_no_other_ref_holds_is_kept(
    server, cli, tmp_path, home, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    root = make_project(tmp_path / "project")
    sid = write_turn(server, root, "one.txt", "one\n")
    path = killed_fork(home, root, sid)
    record = next((home / "store.git" / "gitsessions" / "worktrees").iterdir())
    old = time.time() - 3600
    os.utime(record, (old, old))
    (path / "work.txt").write_text("committed by the user\n")
    pgit(path, "add", "work.txt")
    pgit(path, "commit", "-q", "-m", "the user's work")
    tip = pgit(path, "rev-parse", "HEAD").strip()
    (kept,) = doctor(cli, "--repair", code=1)
    assert (
        not kept["repaired"] and "its branch holds 1 commit(s) no other ref holds" in kept["detail"]
    )
    assert path.is_dir() and pgit(root, "rev-parse", tip).strip() == tip


def test_a_branch_of_our_naming_no_session_knows_is_named_never_removed(
    server, cli, tmp_path, home, monkeypatch
):
    """A `gitsessions/<short id>` branch no session and no record names (a restore of a
    pulled fork cut short leaves one): named with its command, kept by --repair."""
    monkeypatch.chdir(tmp_path)
    root = make_project(tmp_path / "project")
    sid = write_turn(server, root, "one.txt", "one\n")
    pgit(root, "branch", "gitsessions/deadbeef")
    pgit(root, "branch", f"gitsessions/{sid[:8]}")  # a session's: not a finding
    for args, code in (((), 1), (("--repair",), 1)):
        report = json.loads(cli("doctor", "--json", *args, code=code).stdout)
        (found,) = [f for f in report["findings"] if f["kind"] == "branch"]
        assert found["subject"] == f"{root}: gitsessions/deadbeef" and not found["repaired"]
        assert found["detail"].endswith(
            f"to remove it: git -C {root} branch -D gitsessions/deadbeef"
        )
    assert pgit(root, "branch", "--list", "gitsessions/deadbeef").strip()
