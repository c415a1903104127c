"""Leases: at most one live agent process works on a session at a time.

A lease is an exclusive, non-blocking `flock` on `<home>/leases/<id>.lock`, held for as
long as the process works on the session. The kernel drops it when the process exits,
however it exits, so a killed agent never leaves its session locked. The file of a
deleted session is removed by the delete, under the lease (`discard`).
"""

import contextlib
import errno
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
        try:
            os.ftruncate(self.fd, 0)
            os.pwrite(self.fd, f"{os.getpid()} {holder}".strip().encode(), 0)
        except OSError:  # a full disk: not held, or a long-lived process kept it
            os.close(self.fd)
            raise

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
    leased or saved, so `chat` says so before its prompt, and a command that writes
    several sessions (`import --from`) says so once, not once per session."""


# what no read fails with: a failed write of the home, whatever file it named
_WRITE_ONLY = (errno.EROFS, errno.ENOSPC, errno.EDQUOT)


def not_writable(
    folder: Path, error: OSError, lost: str, then: str = "start again"
) -> HomeNotWritable:
    """The one line of a home that cannot be written: where, why, what was `lost`, and
    what to do."""
    reason = error.strerror or type(error).__name__
    if error.errno in (errno.EEXIST, errno.ENOTDIR):  # a file where a folder should be
        reason = "not a folder"
    return HomeNotWritable(
        f"cannot write in {folder} ({reason}): {lost}; free space or fix its permissions "
        f"(or set GITSESSIONS_HOME), then {then}"
    )


def home_failure(error: OSError, home: Path) -> Path | None:
    """The folder of the home a failed write was in (read-only, full, no permission on a
    file under it): a cause every later write there shares, not one source's; None when
    `error` is not the home's."""
    name = error.filename if isinstance(error.filename, str | bytes) else None
    path = Path(os.fsdecode(name)).absolute() if name else None
    if path is not None and path.is_relative_to(home.absolute()):
        return path if error.errno == errno.EEXIST else path.parent  # EEXIST: a mkdir
    return home if error.errno in _WRITE_ONLY else None


def check_writable(
    home: Path, lost: str = "no prompt could be saved", then: str = "start again"
) -> None:
    """Write, sync and remove a small file where a chat first writes (the lease folder)
    and in the store, so a read-only or full home is refused before a prompt is typed
    (a lease on its own may still open a file that exists: not proof enough); `lost`
    says what could not be done."""
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
            raise not_writable(folder, error, lost, then) from None
        finally:
            with contextlib.suppress(OSError):
                probe.unlink()
