"""Leases: at most one live agent process works on a session at a time.

A lease is an exclusive, non-blocking `flock` on `<home>/leases/<id>.lock`, held for as
long as the process works on the session. The kernel drops it when the process exits,
however it exits, so a killed agent never leaves its session locked. The file of a
deleted session is removed by the delete, under the lease (`discard`).
"""

import contextlib
import fcntl
import os
from pathlib import Path

from gitsessions.store.errors import StoreError
from gitsessions.values.ids import is_session_id, short


class SessionInUse(StoreError):
    """Another live process holds the session's lease."""


class Lease:
    def __init__(self, home: Path, session_id: str) -> None:
        assert is_session_id(session_id)
        folder = home / "leases"
        folder.mkdir(mode=0o700, exist_ok=True)
        self.path = folder / f"{session_id}.lock"
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(self.fd, 32, 0).decode("ascii", "replace").strip()
            os.close(self.fd)
            raise SessionInUse(
                f"session {short(session_id)} is in use by another gitsessions process"
                f"{f' (pid {holder})' if holder else ''}; wait for it to finish, or work on "
                f"a fork: gitsessions fork {short(session_id)}"
            ) from None
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, str(os.getpid()).encode(), 0)

    def release(self) -> None:
        if self.fd >= 0:
            with contextlib.suppress(OSError):
                os.ftruncate(self.fd, 0)
            os.close(self.fd)
            self.fd = -1

    def discard(self) -> None:
        """For a session just deleted: remove the lease file while still holding it (so
        no one else is working on it), then release."""
        if self.fd >= 0:
            self.path.unlink(missing_ok=True)
        self.release()

    def __enter__(self) -> "Lease":
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
