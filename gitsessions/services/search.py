"""Full-text search over titles, summaries and every transcript message.

The index (`<home>/search.sqlite`, SQLite FTS5 with the trigram tokenizer, so any
substring of 3+ characters matches, code included) is a cache. It is keyed by content:
each transcript segment is indexed under its git blob id, and a segment is re-read only
when the blob a session points at changes, so refreshing after a turn reads one segment,
not the whole store. Sessions whose branch is gone are dropped from it; a cache that
cannot be read is deleted and rebuilt (`store.cache`). Rows of deleted sessions are
removed and the file is rewritten (`optimize`, `VACUUM`), so deleted text does not linger.
With redaction on, text is redacted before it is indexed, so even a session stored before
redaction existed (or with it off) cannot be searched for a secret's value; an index built
under the other setting is emptied (rows overwritten, file vacuumed) and rebuilt.
"""

import json
import sqlite3
from collections.abc import Collection, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from gitsessions.store.cache import open_cache
from gitsessions.store.errors import ObjectMissing, StoreCorrupt
from gitsessions.store.sessions import Head, SessionStore
from gitsessions.values.ids import check_text
from gitsessions.values.messages import text_of
from gitsessions.values.secrets import redact

TITLE, SUMMARY = -2, -1
SCHEMA = [
    "CREATE TABLE IF NOT EXISTS meta (session TEXT PRIMARY KEY, head TEXT, title TEXT,"
    " archived INTEGER, updated_at TEXT)",
    "CREATE TABLE IF NOT EXISTS segments (session TEXT, start INTEGER, blob TEXT,"
    " PRIMARY KEY (session, start))",
    "CREATE VIRTUAL TABLE IF NOT EXISTS docs USING fts5(text, session UNINDEXED,"
    " idx UNINDEXED, role UNINDEXED, tokenize='trigram')",
    "CREATE TABLE IF NOT EXISTS mode (redact INTEGER)",
]


@dataclass(frozen=True)
class Hit:
    session: str
    title: str
    index: int | None  # transcript message index; None for a title or summary hit
    role: str  # message role, or "title" / "summary"
    snippet: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "session": self.session,
            "title": self.title,
            "index": self.index,
            "role": self.role,
            "snippet": self.snippet,
        }


def message_text(message: Mapping[str, Any]) -> str:
    """What of a message is searchable: its text and its tool calls."""
    parts = [text_of(message)]
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        parts.append(f"{function.get('name', '')} {function.get('arguments', '')}")
    return "\n".join(p for p in parts if p)


def snippet(text: str, query: str, width: int = 60) -> str:
    at = text.lower().find(query.lower())
    if at < 0:
        return " ".join(text[: 2 * width].split())
    start, end = max(0, at - width), min(len(text), at + len(query) + width)
    body = " ".join(text[start:end].split())
    return ("..." if start else "") + body + ("..." if end < len(text) else "")


class SearchIndex:
    def __init__(self, store: SessionStore) -> None:
        self.store = store
        self.path = store.home / "search.sqlite"
        self.skipped: list[str] = []  # sessions that could not be read at the last refresh

    def _db(self) -> AbstractContextManager[sqlite3.Connection]:
        return open_cache(self.path, SCHEMA)

    def refresh(self) -> None:
        """Bring the index up to date with the refs (reads only what changed)."""
        refs = self.store.ids()
        with self._db() as db:
            reset = self._match_mode(db)
            known = {row[0]: row[1] for row in db.execute("SELECT session, head FROM meta")}
            for session in set(known) - set(refs):
                self._drop(db, session)
            for session, commit in refs.items():
                if known.get(session) != commit.decode():
                    try:
                        self._index(db, self.store.head_at(session, commit))
                    except ObjectMissing:
                        if self.store.exists(session):
                            self.skipped.append(session)  # damaged: `doctor` names it
                        self._drop(db, session)  # deleted while we indexed
                    except StoreCorrupt:
                        self.skipped.append(session)  # damaged: the others still search
                        self._drop(db, session)
            db.commit()
            if reset:
                db.execute("INSERT INTO docs(docs) VALUES ('optimize')")
                db.commit()
                db.execute("VACUUM")

    def _index(self, db: sqlite3.Connection, head: Head) -> None:
        sid, h = head.id, head.header
        db.execute("DELETE FROM docs WHERE session = ? AND idx < 0", (sid,))
        for idx, role, text in (
            (TITLE, "title", h.get("title") or ""),
            (SUMMARY, "summary", h.get("summary") or ""),
        ):
            if text:
                db.execute(
                    "INSERT INTO docs VALUES (?, ?, ?, ?)", (self._clean(text), sid, idx, role)
                )
        stored = dict(db.execute("SELECT start, blob FROM segments WHERE session = ?", (sid,)))
        current = {start: blob.decode() for start, blob in self.store.segments(head)}
        starts = sorted(set(stored) | set(current))
        for at, start in enumerate(starts):
            if stored.get(start) == current.get(start):
                continue
            end = starts[at + 1] if at + 1 < len(starts) else 2**62
            db.execute(
                "DELETE FROM docs WHERE session = ? AND idx >= ? AND idx < ?", (sid, start, end)
            )
            if start not in current:
                db.execute("DELETE FROM segments WHERE session = ? AND start = ?", (sid, start))
                continue
            rows = [
                (self._clean(message_text(m)), sid, start + n, str(m.get("role", "")))
                for n, m in enumerate(self.store.segment(current[start].encode()))
            ]
            db.executemany("INSERT INTO docs VALUES (?, ?, ?, ?)", [r for r in rows if r[0]])
            db.execute(
                "INSERT OR REPLACE INTO segments VALUES (?, ?, ?)", (sid, start, current[start])
            )
        db.execute(
            "INSERT OR REPLACE INTO meta VALUES (?, ?, ?, ?, ?)",
            (
                sid,
                head.commit.decode(),
                h.get("title") or "",
                int(bool(h.get("archived"))),
                h.get("updated_at") or "",
            ),
        )

    def _match_mode(self, db: sqlite3.Connection) -> bool:
        """Empty an index built under the other redaction setting; True when it did."""
        row = db.execute("SELECT redact FROM mode").fetchone()
        if row is not None and bool(row[0]) == self.store.redact:
            return False
        for table in ("docs", "segments", "meta", "mode"):
            db.execute(f"DELETE FROM {table}")
        db.execute("INSERT INTO mode VALUES (?)", (int(self.store.redact),))
        return True

    def _clean(self, text: str) -> str:
        return redact(text)[0] if self.store.redact else text

    def _drop(self, db: sqlite3.Connection, session: str) -> None:
        for table in ("docs", "segments", "meta"):
            db.execute(f"DELETE FROM {table} WHERE session = ?", (session,))

    def forget(self, session: str) -> None:
        """Remove a deleted session's text from the index file now."""
        if not self.path.exists():
            return
        with self._db() as db:
            self._drop(db, session)
            db.execute("INSERT INTO docs(docs) VALUES ('optimize')")
            db.commit()
            db.execute("VACUUM")

    def search(
        self,
        query: str,
        *,
        include_archived: bool = False,
        limit: int = 50,
        session: str | None = None,
        sessions: Collection[str] | None = None,
    ) -> list[Hit]:
        """Sessions, messages and snippets containing `query` (case-insensitive); only
        within `sessions` when given."""
        query = check_text(query, "the query").strip()
        if not query:
            return []
        self.refresh()
        if len(query) >= 3:
            where = "docs MATCH ?"
            arg = '"' + query.replace('"', '""') + '"'
        else:  # the trigram index needs 3 characters; scan instead
            where = "docs.text LIKE ? ESCAPE '\\'"
            arg = "%" + query.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        sql = (
            f"SELECT docs.session, docs.idx, docs.role, docs.text, meta.title FROM docs "
            f"JOIN meta ON meta.session = docs.session WHERE {where}"
        )
        args: list[Any] = [arg]
        if not include_archived:
            sql += " AND meta.archived = 0"
        if session is not None:
            sql += " AND docs.session = ?"
            args.append(session)
        if sessions is not None:
            sql += " AND docs.session IN (SELECT value FROM json_each(?))"
            args.append(json.dumps(sorted(sessions)))
        sql += " ORDER BY meta.updated_at DESC, docs.session, docs.idx LIMIT ?"
        args.append(limit)
        with self._db() as db:
            rows = db.execute(sql, args).fetchall()
        return [
            Hit(sid, title, idx if idx >= 0 else None, role, snippet(text, query))
            for sid, idx, role, text, title in rows
        ]
