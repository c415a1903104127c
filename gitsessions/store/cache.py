"""Opening the sqlite caches beside the store (`index.sqlite`, `search.sqlite`).

Invariant: a cache is never the truth, so one that cannot be opened as a database, or
whose `PRAGMA user_version` (derived from its schema) is not this build's, is deleted and
created anew, here, for every caller; files are private (0600) and deleted
rows are overwritten on disk (`secure_delete`).
"""

import contextlib
import os
import sqlite3
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path


class _OtherSchema(sqlite3.DatabaseError):
    """The file was written for another schema (another version of gitsessions)."""


def schema_version(schema: Sequence[str]) -> int:
    """`PRAGMA user_version` of a cache: derived from its schema, so it changes with it."""
    return zlib.crc32("\n".join(schema).encode()) & 0x7FFFFFFF or 1


def _open(path: Path, schema: Sequence[str], timeout: float) -> sqlite3.Connection:
    if not path.exists():
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
    db = sqlite3.connect(path, timeout=timeout, isolation_level=None)
    try:
        db.execute("PRAGMA secure_delete=ON")
        version = schema_version(schema)
        if db.execute("PRAGMA user_version").fetchone()[0] != version:
            # made in one transaction: another process opening it meanwhile waits, then
            # finds it whole (not half made, which it would take for another schema)
            db.execute("BEGIN IMMEDIATE")
            found = db.execute("PRAGMA user_version").fetchone()[0]
            if found != version:
                tables = db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
                if tables:
                    raise _OtherSchema(f"{path} has schema {found}, not {version}")
                for statement in schema:
                    db.execute(statement)
                db.execute(f"PRAGMA user_version = {version}")
            db.execute("COMMIT")
        db.isolation_level = "DEFERRED"  # Python opens transactions again, for the caller
    except BaseException:
        db.close()
        raise
    return db


def is_damage(error: sqlite3.DatabaseError) -> bool:
    """Whether `error` says the file is damaged or no database (not busy, not locked): a
    cache found so while in use is deleted and built again by its owner."""
    return getattr(error, "sqlite_errorname", "") in ("SQLITE_CORRUPT", "SQLITE_NOTADB")


@contextlib.contextmanager
def open_cache(
    path: Path, schema: Sequence[str], timeout: float = 30
) -> Iterator[sqlite3.Connection]:
    """A connection to the cache at `path` with `schema` applied; rebuilt if unreadable."""
    try:
        db = _open(path, schema, timeout)
    except sqlite3.DatabaseError as error:
        if not (isinstance(error, _OtherSchema) or is_damage(error)):
            raise  # busy or locked past the timeout: another process's cache, not ours to drop
        path.unlink(missing_ok=True)
        db = _open(path, schema, timeout)
    try:
        yield db
    finally:
        db.close()
