"""Leases: at most one live agent process works on a session at a time.

A lease is an exclusive, non-blocking `flock` on `<home>/leases/<id>.lock`, held for as
long as the process works on the session. The kernel drops it when the process exits,
however it exits, so a killed agent never leaves its session locked. The file of a
deleted session is removed by the delete, under the lease (`discard`).
"""

import contextlib
import fcntl
import os
import time
from pathlib import Path

from gitsessions.store.errors import StoreError
from gitsessions.values.ids import is_session_id, short

BRIEF = 2.0  # seconds another process waits for a summary's write to end


class SessionInUse(StoreError):
    """Another live process holds the session's lease."""


class Lease:
    """The lease on one session. `holder` is written beside the pid: "summary" marks the
    brief write of a list summary after `exec` (`agent/summary_later.py`), which another
    process waits for, up to `BRIEF` seconds, instead of failing as "in use"."""

    def __init__(self, home: Path, session_id: str, holder: str = "") -> None:
        assert is_session_id(session_id)
        folder = home / "leases"
        folder.mkdir(mode=0o700, exist_ok=True)
        self.path = folder / f"{session_id}.lock"
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        deadline = time.monotonic() + BRIEF
        while True:
            try:
                fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                found = os.pread(self.fd, 32, 0).decode("ascii", "replace").strip()
                if found.endswith(" summary") and time.monotonic() < deadline:
                    time.sleep(0.02)
                    continue
                os.close(self.fd)
                raise SessionInUse(
                    f"session {short(session_id)} is in use by another gitsessions process"
                    f"{f' (pid {found.split()[0]})' if found else ''}; wait for it to finish,"
                    f" or work on a fork: gitsessions fork {short(session_id)}"
                ) from None
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, f"{os.getpid()} {holder}".strip().encode(), 0)

    def release(self) -> None:
        if self.fd >= 0:
            with contextlib.suppress(OSError):
                os.ftruncate(self.fd, 0)
            os.close(self.fd)
            self.fd = -1

    def discard(self) -> None:
        """For a session just deleted: remove the lease file while still holding it (so
        no one else is working on it), then release."""
        try:
            if self.fd >= 0:
                self.path.unlink(missing_ok=True)
        except OSError:  # a home gone read-only: the file stays, the lease is let go
            pass
        finally:
            self.release()

    def __enter__(self) -> "Lease":
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


class HomeNotWritable(StoreError):
    """The home cannot be written (read-only, full, no permission): no session can be
    leased or saved, so `chat` says so before its prompt."""


def check_writable(home: Path) -> None:
    """Write, sync and remove a small file where a chat first writes (the lease folder)
    and in the store, so a read-only or full home is refused before a prompt is typed
    (a lease on its own may still open a file that exists: not proof enough)."""
    folders = [home / "leases"] + ([home / "store.git"] if (home / "store.git").is_dir() else [])
    for folder in folders:
        probe = folder / f".write-check-{os.getpid()}"
        try:
            home.mkdir(mode=0o700, parents=True, exist_ok=True)
            folder.mkdir(mode=0o700, exist_ok=True)
            fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                os.write(fd, b"x" * 512)
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as error:
            reason = error.strerror or type(error).__name__
            raise HomeNotWritable(
                f"cannot write in {folder} ({reason}): no prompt could be saved; free "
                "space or fix its permissions (or set GITSESSIONS_HOME), then start again"
            ) from None
        finally:
            with contextlib.suppress(OSError):
                probe.unlink()
