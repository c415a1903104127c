"""Reading a file someone named (a command line's FILE, an MCP client's path, an
import's source): a regular file only, opened without blocking, read to a bound.

Invariant: nothing here waits on what is at the path. The path is opened with
O_NONBLOCK (a FIFO with no writer opens at once instead of waiting for one, a device
is not kept), checked with fstat on the descriptor itself (no window between a check
and the open for another file to be swapped in), and read only when it is a regular
file; a FIFO, device, socket or folder is `NotRegularFile`, one line. Standard library
only.
"""

import os
import stat
from pathlib import Path
from typing import BinaryIO

from gitsessions.values.errors import InvalidInput

FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0)


class NotRegularFile(InvalidInput):
    """The path names a FIFO, a device, a socket or a folder, not a file to read."""


class FileTooLarge(InvalidInput):
    """The file is over the bound its reader keeps to."""


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def open_regular(path: Path | str) -> BinaryIO:
    """`path` opened for reading (binary, blocking once checked), when it is a regular
    file; `NotRegularFile` otherwise, `OSError` when it cannot be opened."""
    fd = os.open(path, FLAGS)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(f"{path} is {_kind(mode)}: only a regular file is read")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: Path | str, limit: int) -> bytes:
    """The whole of the regular file at `path`, at most `limit` bytes (`FileTooLarge`
    past it: it is not read); see `open_regular` for what else is refused."""
    with open_regular(path) as file:
        if os.fstat(file.fileno()).st_size > limit:
            raise FileTooLarge(f"{path} is over {limit:,} bytes: too large to read")
        data = file.read(limit + 1)
    if len(data) > limit:  # grown since
        raise FileTooLarge(f"{path} is over {limit:,} bytes: too large to read")
    return data
