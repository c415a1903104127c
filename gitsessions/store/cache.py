"""Opening the sqlite caches beside the store (`index.sqlite`, `search.sqlite`).

Invariant: a cache is never the truth, so one that cannot be opened as a database is
deleted and created anew, here, for every caller; files are private (0600) and deleted
rows are overwritten on disk (`secure_delete`).
"""

import contextlib
import os
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path


def _open(path: Path, schema: Sequence[str], timeout: float) -> sqlite3.Connection:
    if not path.exists():
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
    db = sqlite3.connect(path, timeout=timeout)
    try:
        db.execute("PRAGMA secure_delete=ON")
        for statement in schema:
            db.execute(statement)
    except BaseException:
        db.close()
        raise
    return db


@contextlib.contextmanager
def open_cache(
    path: Path, schema: Sequence[str], timeout: float = 30
) -> Iterator[sqlite3.Connection]:
    """A connection to the cache at `path` with `schema` applied; rebuilt if unreadable."""
    try:
        db = _open(path, schema, timeout)
    except sqlite3.DatabaseError:
        path.unlink(missing_ok=True)
        db = _open(path, schema, timeout)
    try:
        yield db
    finally:
        db.close()
