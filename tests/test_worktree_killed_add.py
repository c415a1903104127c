"""A `git worktree add -b` killed while it held the lock of its new branch (issue 40's
residual): git leaves `refs/heads/<branch>.lock`, which refused every later add of the
branch. The next add of this home removes it, and only it: not while any process of the
killed add lives, not a lock that add did not write.

Git is held at the moment it holds the lock by a FIFO where the branch's reflog goes
(opening it blocks until a reader comes, after the lock is written and before it is
renamed); the add runs in a process of its own, killed with SIGKILL, as is its git."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gitsessions.services.code.snapshots import SnapshotError
from gitsessions.services.code.worktree_add import add_with_branch
from tests.project_helpers import make_project, pgit

BRANCH = "gitsessions/abcd1234"
ENV = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
DEADLINE = 60  # seconds a step may take before the test gives up (not a measure)


def _until(done: object, what: str) -> None:
    end = time.monotonic() + DEADLINE
    while not done():  # type: ignore[operator]
        assert time.monotonic() < end, f"gave up waiting for {what}"
        time.sleep(0.02)


def _pids_of(*words: bytes) -> list[int]:
    """The processes whose command line holds every one of `words`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                line = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if all(word in line for word in words):
                found.append(int(entry.name))
    return found


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state in ("Z", "X")  # a zombie holds no file, nor the lock's flock


def _repo(tmp_path: Path) -> tuple[Path, str, Path]:
    root = make_project(tmp_path / "project")
    start = pgit(root, "rev-parse", "HEAD").strip()
    lock = root / ".git" / "refs" / "heads" / f"{BRANCH}.lock"
    return root, start, lock


def test_a_killed_adds_branch_lock_is_removed_by_the_next_add_only(tmp_path, home):
    root, start, lock = _repo(tmp_path)
    fifo = root / ".git" / "logs" / "refs" / "heads" / BRANCH
    fifo.parent.mkdir(parents=True)
    os.mkfifo(fifo)
    adding = (
        "import sys; from pathlib import Path\n"
        "from gitsessions.services.code.worktree_add import add_with_branch\n"
        "add_with_branch(Path(sys.argv[1]), Path(sys.argv[2]), {}, Path(sys.argv[3]), "
        "sys.argv[4], sys.argv[5])\n"
    )
    args = [str(home), str(root), str(tmp_path / "w1"), start, BRANCH]
    child = subprocess.Popen([sys.executable, "-c", adding, *args], env={**ENV},
                             start_new_session=True, stderr=subprocess.PIPE)  # fmt: skip
    try:
        _until(lambda: lock.exists() and lock.read_bytes() == f"{start}\n".encode(), "the lock")
        gits = _pids_of(BRANCH.encode() + b"\0")  # `worktree add` and its `git branch`
        assert gits, "git holds the lock, waiting on the FIFO"
        # while git lives (its gitsessions killed or not), the lock is a live git's: kept
        child.send_signal(signal.SIGKILL)
        child.wait()
        with pytest.raises(SnapshotError, match=r"git worktree failed in .*lock"):
            add_with_branch(home, root, ENV, tmp_path / "w2", start, BRANCH, wait=0)
        assert lock.read_bytes() == f"{start}\n".encode()
    finally:
        for pid in _pids_of(BRANCH.encode() + b"\0"):
            os.kill(pid, signal.SIGKILL)
        if child.poll() is None:
            child.kill()
            child.wait()
    for pid in gits:
        _until(lambda pid=pid: _gone(pid), "the killed git")
    fifo.unlink()
    assert lock.exists()  # what a killed git leaves, as git alone would

    add_with_branch(home, root, ENV, tmp_path / "w3", start, BRANCH)
    assert not lock.exists()
    assert pgit(root, "rev-parse", BRANCH).strip() == start
    assert str(tmp_path / "w3") in pgit(root, "worktree", "list", "--porcelain")
    marker = home / "store.git" / "gitsessions" / "adding" / BRANCH.replace("/", "%")
    assert marker.read_bytes() == b""  # the branch is made: nothing of this add is left


def test_a_lock_the_killed_add_did_not_write_stays(tmp_path, home):
    root, start, lock = _repo(tmp_path)
    other = pgit(root, "rev-parse", "HEAD^{tree}").strip()  # any other 40 hex digits
    lock.parent.mkdir(parents=True)
    lock.write_text(f"{start}\n")  # someone else's: no add of this home was under way
    with pytest.raises(SnapshotError, match="lock"):
        add_with_branch(home, root, ENV, tmp_path / "w1", start, BRANCH)
    assert lock.exists()
    old = time.time() - 3600
    os.utime(lock, (old, old))  # left before the add that failed on it began
    with pytest.raises(SnapshotError, match="lock"):
        add_with_branch(home, root, ENV, tmp_path / "w2", start, BRANCH)
    assert lock.exists()
    lock.write_text(f"{other}\n")  # written since, but not the commit that add was to make
    with pytest.raises(SnapshotError, match="lock"):
        add_with_branch(home, root, ENV, tmp_path / "w3", start, BRANCH)
    assert lock.read_text() == f"{other}\n"
    assert pgit(root, "rev-parse", "-q", "--verify", BRANCH, check=False) == ""
