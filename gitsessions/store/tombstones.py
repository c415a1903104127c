"""Ids of deleted sessions, so that nothing brings them back.

Invariants:
- An id is appended (and fsynced) to `store.git/gitsessions/deleted` before its branch
  is removed; `doctor --repair` never restores a branch for an id listed here.
- A line is an id, of a session this home had (deleted here, or by a pull: `seen`), or
  an id and `LEARNED`: an id a remote's tombstones listed, of a session this home never
  had (`record_learned`: all of one pull's in one write and one fsync). Every id of the
  file counts as deleted (`deleted`); an older build, which splits the file at white
  space and keeps the ids, reads it the same.
"""

import os
from collections.abc import Iterable
from pathlib import Path

from gitsessions.values.ids import is_session_id

LEARNED = "learned"  # the mark of an id learned from a remote, never a session here


def _path(store_path: Path) -> Path:
    return store_path / "gitsessions" / "deleted"


def _append(store_path: Path, data: bytes) -> None:
    """Append `data` to the file in one write, fsynced."""
    path = _path(store_path)
    path.parent.mkdir(mode=0o700, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)


def record(store_path: Path, session_id: str) -> None:
    """A session this home had is deleted (before its branch goes)."""
    assert is_session_id(session_id)
    _append(store_path, session_id.encode() + b"\n")


def record_learned(store_path: Path, ids: Iterable[str]) -> None:
    """Ids a remote lists as deleted, of sessions this home never had: one write."""
    data = b"".join(f"{sid} {LEARNED}\n".encode() for sid in ids if is_session_id(sid))
    if data:
        _append(store_path, data)


def deleted(store_path: Path) -> set[str]:
    try:
        text = _path(store_path).read_text("ascii", "replace")
    except FileNotFoundError:
        return set()
    return {word for word in text.split() if is_session_id(word)}


def seen(store_path: Path) -> set[str]:
    """The deleted ids of sessions this home had (not those only `LEARNED`)."""
    try:
        text = _path(store_path).read_text("ascii", "replace")
    except FileNotFoundError:
        return set()
    return {line.strip() for line in text.split("\n") if is_session_id(line.strip())}
