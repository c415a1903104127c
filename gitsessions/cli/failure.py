"""How a failure reads: which exceptions the CLI reports as one `error:` line, with which
exit code (`app.py` prints them); anything else is a bug and goes on."""

import errno
import os
import select
import sys

from gitsessions.values.errors import GitsessionsError

DISK_ERRORS = (errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def os_error(error: OSError) -> str:
    what = error.strerror or type(error).__name__
    where = f": {error.filename}" if error.filename else ""
    hint = ""
    if error.errno in DISK_ERRORS:
        hint = (
            " (nothing was changed; free space or fix permissions, then "
            "`gitsessions doctor` checks the store)"
        )
    return f"{what}{where}{hint}"


def quiet_disk_errors(unraisable: "sys.UnraisableHookArgs") -> None:
    """dulwich's lock files retry their cleanup in `__del__` after a full or read-only
    disk already failed the command (reported once, as one line): say nothing more."""
    if isinstance(unraisable.exc_value, OSError) and unraisable.exc_value.errno in DISK_ERRORS:
        return
    sys.__unraisablehook__(unraisable)


def reported(error: BaseException) -> tuple[str, int] | None:
    """`(message, exit code)` of a failure the CLI reports as one line: ours (its own
    code), the system's (a read-only home, a full disk: 1), a cache file sqlite cannot
    write (1); None for anything else."""
    if isinstance(error, GitsessionsError):
        return str(error), error.exit_code
    if isinstance(error, OSError):
        return os_error(error), 1
    sqlite3 = sys.modules.get("sqlite3")  # imported only by the commands that use a cache
    if sqlite3 is not None and isinstance(error, sqlite3.Error):
        return f"a cache file in the gitsessions home cannot be written ({error})", 1
    return None


def stdout_gone(error: BaseException) -> bool:
    """Whether `error` is stdout's reader having gone (`| head`), not some other pipe's:
    the reader's end of stdout is closed, which poll reports as an error on our end."""
    if not isinstance(error, BrokenPipeError):
        return False
    # cli.state and the settings it reads: 11 ms --help does not need
    from gitsessions.cli.state import plain_out

    try:
        poller = select.poll()
        poller.register(plain_out.file.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _, events in poller.poll(0))
    except (OSError, ValueError, AttributeError):  # not a real file (a test's buffer)
        return False


def quiet_stdout() -> None:
    """Point stdout at /dev/null so Python's exit flush does not complain again."""
    # cli.state and the settings it reads: 11 ms --help does not need
    from gitsessions.cli.state import plain_out

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, plain_out.file.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # not a real file (a test's buffer)
        pass


def say_error(message: str) -> None:
    # cli.plain: 4-6 ms --help does not need
    from gitsessions.cli.plain import one_line
    from gitsessions.cli.state import err

    err.print(f"error: {one_line(message)}", markup=False, highlight=False, soft_wrap=True)
