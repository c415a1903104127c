"""Small JSON records a home keeps of its own, beside the sessions (an approval, a
worktree it made): never pushed, pulled, exported or imported.

Invariants: a record is written whole or not at all (a temporary file, fsynced, renamed
into place, mode 0600); it is read at most `limit` bytes, and one that is missing,
unreadable, too long or not JSON reads as None. Standard library only: read before a
resumed chat's prompt.
"""

import json
import os
from pathlib import Path
from typing import Any


def write(path: Path, record: Any) -> None:
    """Write `record` as one line of JSON at `path` (its folder made, private)."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, json.dumps(record, sort_keys=True).encode() + b"\n")
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temporary, path)


def read(path: Path, limit: int) -> Any:
    """The record at `path`, or None."""
    try:
        with open(path, "rb") as file:
            raw = file.read(limit + 1)
        return json.loads(raw) if len(raw) <= limit else None
    except (OSError, ValueError):
        return None
