"""Ids of deleted sessions, so that nothing brings them back.

Invariant: an id is appended (and fsynced) to `store.git/gitsessions/deleted` before its
branch is removed; `doctor --repair` never restores a branch for an id listed here. The
file holds ids only, one per line.
"""

import os
from pathlib import Path

from gitsessions.values.ids import is_session_id


def _path(store_path: Path) -> Path:
    return store_path / "gitsessions" / "deleted"


def record(store_path: Path, session_id: str) -> None:
    assert is_session_id(session_id)
    path = _path(store_path)
    path.parent.mkdir(mode=0o700, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(fd, session_id.encode() + b"\n")
        os.fsync(fd)
    finally:
        os.close(fd)


def deleted(store_path: Path) -> set[str]:
    try:
        text = _path(store_path).read_text("ascii", "replace")
    except FileNotFoundError:
        return set()
    return {line for line in text.split() if is_session_id(line)}
