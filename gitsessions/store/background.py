"""Store maintenance in a detached process, so no turn ever waits for packing.

Invariants: `schedule` takes `maintenance.lock` without waiting (held: maintenance is
under way, nothing is started) and hands the locked file to the child, which holds it
until it exits, so whoever wants a quiet store (gc, doctor, tests) waits on it
(`wait_for_maintenance`). Writers start nothing while the child runs, so before it exits
the child asks `needs_maintenance` again and runs again while a run did something (at
most `ROUNDS`). Every step it takes is safe beside live writers (`maintenance`).
"""

import contextlib
import fcntl
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from gitsessions.store import maintenance
from gitsessions.store.repo import GitStore

LOCK_NAME = "maintenance.lock"
ROUNDS = 64  # runs at most, while writers keep piling things up


def _open_lock(store_path: Path) -> int:
    return os.open(store_path / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)


def schedule(store_path: Path) -> bool:
    """Start background maintenance unless it is already running; True if started."""
    try:
        fd = _open_lock(store_path)
    except OSError:
        return False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        try:
            subprocess.Popen(
                [sys.executable, "-m", "gitsessions.store.background", str(store_path), str(fd)],
                pass_fds=(fd,),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
                close_fds=True,
            )
        except OSError:
            return False
        return True
    finally:
        os.close(fd)  # the child's copy keeps the lock


@contextlib.contextmanager
def maintenance_quiet(store_path: Path) -> Iterator[None]:
    """Wait for running background maintenance to finish, and keep new runs out."""
    fd = _open_lock(store_path)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def wait_for_maintenance(store_path: Path) -> None:
    with maintenance_quiet(store_path):
        pass


def _main(argv: list[str]) -> int:
    store_path = Path(argv[0])
    held = int(argv[1]) if len(argv) > 1 else -1
    git = GitStore(store_path)
    try:
        # writers that found something piled up while this ran started nothing (the
        # lock was held): what they saw is looked at again before the lock goes
        for _round in range(ROUNDS):
            done = maintenance.run_maintenance(git)
            if not any(done.values()) or not maintenance.needs_maintenance(git):
                break
    finally:
        git.close()
        if held >= 0:
            os.close(held)
    return 0


if __name__ == "__main__":
    with contextlib.suppress(Exception):
        sys.exit(_main(sys.argv[1:]))
    sys.exit(1)
