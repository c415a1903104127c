"""A rebuildable cache of session headers for fast listing.

Invariant: the refs are the truth. Each row is keyed by session id and the commit it was
read from; a row whose commit is not the branch's current head is re-read, a row whose
branch is gone is dropped, and a cache that cannot be read is deleted and rebuilt.
Deleted rows are overwritten on disk (`secure_delete`), so a deleted session's title does
not linger in the file.
"""

import contextlib
import json
import os
import sqlite3
from typing import Any

from gitsessions.store.errors import ObjectMissing
from gitsessions.store.sessions import SessionStore

SCHEMA = "CREATE TABLE IF NOT EXISTS headers (id TEXT PRIMARY KEY, head TEXT, header TEXT)"


class Catalog:
    def __init__(self, store: SessionStore) -> None:
        self.store = store
        self.path = store.home / "index.sqlite"

    def _connect(self) -> sqlite3.Connection:
        if not self.path.exists():
            fd = os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600)
            os.close(fd)
        db = sqlite3.connect(self.path, timeout=10)
        db.execute("PRAGMA secure_delete=ON")
        db.execute(SCHEMA)
        return db

    def headers(self) -> list[dict[str, Any]]:
        """Every session's header (with `head` and `branch` added), refreshed from refs."""
        try:
            return self._headers()
        except sqlite3.DatabaseError:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
            return self._headers()

    def _headers(self) -> list[dict[str, Any]]:
        refs = {sid: commit.decode() for sid, commit in self.store.ids().items()}
        db = self._connect()
        try:
            cached = {row[0]: (row[1], row[2]) for row in db.execute("SELECT * FROM headers")}
            out: list[dict[str, Any]] = []
            fresh: list[tuple[str, str, str]] = []
            for sid, commit in refs.items():
                row = cached.get(sid)
                if row and row[0] == commit:
                    header = json.loads(row[1])
                else:
                    try:
                        header = self.store.head_at(sid, commit.encode()).header
                    except ObjectMissing:
                        if self.store.exists(sid):
                            raise
                        continue  # deleted while we listed
                    fresh.append((sid, commit, json.dumps(header)))
                header["head"] = commit
                out.append(header)
            gone = [(sid,) for sid in cached if sid not in refs]
            if fresh or gone:
                with db:
                    db.executemany("INSERT OR REPLACE INTO headers VALUES (?, ?, ?)", fresh)
                    db.executemany("DELETE FROM headers WHERE id = ?", gone)
            return out
        finally:
            db.close()

    def forget(self, session_id: str) -> None:
        """Drop a session's row now (after delete), not at the next listing."""
        db = self._connect()
        try:
            with db:
                db.execute("DELETE FROM headers WHERE id = ?", (session_id,))
            db.execute("VACUUM")
        finally:
            db.close()
