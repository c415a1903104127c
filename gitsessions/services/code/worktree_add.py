"""`git worktree add -b BRANCH` (a worktree fork, a restore or an adopt making its branch),
and the branch's lock a killed one left (issue 40): git's `refs/heads/BRANCH.lock`, which
makes every later `-b BRANCH` fail until it is removed.

Invariants:
- While this home's `git worktree add -b` runs, the home holds a `flock` on
  `store.git/gitsessions/adding/<branch>` and git inherits it (so does every process git
  starts): the kernel releases it only once all of them have ended. The file says which
  repository, branch and start commit, and since when; it is emptied once git made the
  branch (exit 0), and kept otherwise (git or gitsessions killed, timed out, failed).
- The next add of that branch takes the `flock` first. The lock is removed only when the
  file still names an add of the same branch in the same repository, and the lock is a
  small regular file written since that add began, holding nothing or the commit it was
  to point at: that add's own, its processes all ended. Any other lock stays, for git to
  refuse in its own words (a live git's, the user's, another home's).
- The `flock` held by an add under way is waited for at most `WAIT` seconds; after that
  nothing is removed and git runs as it would.
"""

import contextlib
import fcntl
import json
import os
import stat
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from gitsessions.services.code.snapshots import failure, git, out

WAIT = 10.0  # seconds an add of the same branch under way is waited for
SLACK_NS = 1_000_000_000  # a file's time may lag the clock's by a tick: a second allowed
MAX_MARKER = 4096
MAX_LOCK = 100  # bytes: a branch's lock holds at most a commit id and a newline


def add_with_branch(
    home: Path, repo: Path, env: Mapping[str, str], path: Path, start: str, branch: str,
    wait: float = WAIT,
) -> None:  # fmt: skip
    """`git worktree add -q -b BRANCH PATH START` in `repo`, the lock of `branch` a killed
    add of this home left removed first (see the module's invariants)."""
    common = _common_dir(repo, env)
    with _adding(home, branch, wait) as fd:
        if fd is not None and common is not None:
            _clear_left(fd, common, branch)
            began = {"repo": str(common), "branch": branch, "start": start,
                     "began": time.time_ns()}  # fmt: skip
            _write(fd, json.dumps(began).encode())
        fds = (fd,) if fd is not None else ()
        done = git(repo, env, "worktree", "add", "-q", "-b", branch, str(path), start,
                   check=False, pass_fds=fds)  # fmt: skip
        if fd is not None and done.returncode == 0:
            _write(fd, b"")  # the branch is made: no lock of this add is left
        if done.returncode != 0:
            raise failure(repo, "worktree", done)


@contextlib.contextmanager
def _adding(home: Path, branch: str, wait: float) -> Iterator[int | None]:
    """The `flock` of adds of `branch` held (its file's fd), or None when another add
    still held it after `wait` seconds (or it cannot be made)."""
    folder = home / "store.git" / "gitsessions" / "adding"
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(folder / branch.replace("/", "%"), os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        yield None
        return
    try:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    yield None
                    return
                time.sleep(0.05)
        yield fd
    finally:
        os.close(fd)


def _clear_left(fd: int, common: Path, branch: str) -> None:
    """Remove `branch`'s lock when the add the file `fd` names left it (the `flock` is
    held: none of that add's processes lives)."""
    marker = _read(fd)
    if marker is None or marker.get("branch") != branch or marker.get("repo") != str(common):
        return
    start, began = marker.get("start"), marker.get("began")
    if not isinstance(start, str) or not isinstance(began, int):
        return
    lock = common / "refs" / "heads" / f"{branch}.lock"
    try:
        found = lock.lstat()
        if not stat.S_ISREG(found.st_mode) or found.st_size > MAX_LOCK:
            return
        if found.st_mtime_ns < began - SLACK_NS:
            return  # there before that add began: not its own
        if lock.read_bytes() not in (b"", f"{start}\n".encode()):
            return
        lock.unlink()
    except OSError:
        return


def _common_dir(repo: Path, env: Mapping[str, str]) -> Path | None:
    done = git(repo, env, "rev-parse", "--path-format=absolute", "--git-common-dir",
               check=False)  # fmt: skip
    return Path(os.path.realpath(out(done))) if done.returncode == 0 else None


def _read(fd: int) -> dict[str, Any] | None:
    try:
        data = json.loads(os.pread(fd, MAX_MARKER, 0) or b"null")
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _write(fd: int, data: bytes) -> None:
    os.ftruncate(fd, 0)
    os.pwrite(fd, data, 0)
