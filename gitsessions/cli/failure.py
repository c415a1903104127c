"""How a failure reads: an `OSError` as one line (shared by `app.py` and `fastpull.py`)."""

import errno
import sys

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
