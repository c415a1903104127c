"""Full-text search over titles, summaries, compaction summaries and every transcript
message but system prompts: a query's words ANDed within one message, each matching
anywhere (trigram), a hit with a snippet and where each word is (`marks`).

Invariants:
- `<home>/search.sqlite` (FTS5, trigram) is a cache keyed by content: each segment
  blob's text once (`texts`), which sessions hold it where (`holds`); a fork adds only
  `holds` rows, a shared message is one hit naming every session holding it, and a
  refresh reads only blobs no session held yet.
- A refresh reads only sessions whose head moved (`read` counts them), in batches of
  500, each one IMMEDIATE transaction skipping what another refresh did: concurrent
  refreshes take turns, a killed one keeps its batches. A pull writes the sessions it
  brings through `_store`/`_blob` itself (`search_fill`), from texts it read.
- The refs are the truth: gone or damaged sessions dropped (a damaged ref named), an
  unreadable cache or other schema rebuilt, also when found damaged in use; deleted text
  removed and the file vacuumed.
- With redaction on, text is redacted before it is indexed (even of sessions stored
  before); an index built under other rules (`mode`) is emptied and rebuilt.
"""

import json
import re
import sqlite3
from collections.abc import Collection, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any

from gitsessions.store.cache import is_damage, open_cache
from gitsessions.store.errors import NotACommit, ObjectMissing, StoreCorrupt
from gitsessions.store.refs import DamagedRef, ref_name
from gitsessions.store.sessions import Head, SessionStore
from gitsessions.values.ids import check_text
from gitsessions.values.messages import text_of
from gitsessions.values.plural import plural
from gitsessions.values.secrets import redact, rules_id

TITLE, SUMMARY = -2, -1
COMPACTION = -3  # the n-th compaction summary is label COMPACTION - n
Marks = tuple[tuple[int, int], ...]  # (start, end) of each match in a snippet
SLOTS = 1024  # rowids per segment blob in `texts`: a message's rowid is blob * SLOTS + n
SCHEMA = [
    "CREATE TABLE IF NOT EXISTS meta (session TEXT PRIMARY KEY, head TEXT, title TEXT,"
    " archived INTEGER, updated_at TEXT)",
    "CREATE TABLE IF NOT EXISTS blobs (id INTEGER PRIMARY KEY, sha TEXT UNIQUE)",
    "CREATE TABLE IF NOT EXISTS holds (session TEXT, start INTEGER, blob INTEGER,"
    " PRIMARY KEY (session, start))",
    "CREATE INDEX IF NOT EXISTS holds_blob ON holds (blob)",
    "CREATE VIRTUAL TABLE IF NOT EXISTS texts USING fts5(text, role UNINDEXED, tokenize='trigram')",
    "CREATE VIRTUAL TABLE IF NOT EXISTS labels USING fts5(text, session UNINDEXED,"
    " idx UNINDEXED, role UNINDEXED, tokenize='trigram')",
    # which `labels` rows are a session's: found by an index, not by scanning `labels`
    "CREATE TABLE IF NOT EXISTS labelled (row INTEGER PRIMARY KEY, session TEXT)",
    "CREATE INDEX IF NOT EXISTS labelled_session ON labelled (session)",
    "CREATE TABLE IF NOT EXISTS mode (redact INTEGER)"
    "  -- labels: title, summary and compaction summaries; no system prompts",
]
TABLES = ("texts", "labels", "labelled", "holds", "blobs", "meta", "mode")
TOPS = 1000  # transcripts whose chunks a refresh keeps (sessions sharing one read it once)
BATCH = 500  # sessions indexed in one transaction: a killed refresh keeps what it did


@dataclass(frozen=True)
class Hit:
    session: str
    title: str
    index: int | None  # transcript message index; None for a title or summary hit
    role: str  # message role, or "title" / "summary" / "compaction"
    snippet: str
    marks: Marks = ()  # where the query's words are in the snippet
    # every session holding this message, `session` (the newest) first: forks share it
    sessions: tuple[str, ...] = ()

    @property
    def holders(self) -> tuple[str, ...]:
        return self.sessions or (self.session,)

    def as_dict(self) -> dict[str, Any]:
        return {
            "session": self.session,
            "sessions": list(self.holders),
            "title": self.title,
            "index": self.index,
            "role": self.role,
            "snippet": self.snippet,
            "marks": [list(m) for m in self.marks],
        }


def query_words(query: str) -> list[str]:
    """The words of a query, each once (a trailing `*` is dropped: every word is a
    prefix already)."""
    words: list[str] = []
    for word in query.split():
        word = word.rstrip("*")
        if word and word.lower() not in (w.lower() for w in words):
            words.append(word)
    return words


def message_text(message: Mapping[str, Any]) -> str:
    """What of a message is searchable: its text and its tool calls."""
    parts = [text_of(message)]
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        parts.append(f"{function.get('name', '')} {function.get('arguments', '')}")
    return "\n".join(p for p in parts if p)


def snippet(text: str, words: list[str], width: int = 60) -> tuple[str, Marks]:
    """A window of `text` around the first of `words` found, whitespace folded, and where
    each word occurs in it (case-insensitive)."""
    patterns = [re.compile(re.escape(w), re.IGNORECASE) for w in words]
    found = [m.start() for p in patterns if (m := p.search(text))]
    if not found:
        return " ".join(text[: 2 * width].split()), ()
    at = min(found)
    start, end = max(0, at - width), min(len(text), at + width + max(map(len, words)))
    body = ("..." if start else "") + " ".join(text[start:end].split())
    body += "..." if end < len(text) else ""
    spans = sorted((m.start(), m.end()) for p in patterns for m in p.finditer(body))
    merged: list[tuple[int, int]] = []
    for begin, stop in spans:
        if merged and begin <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], stop))
        else:
            merged.append((begin, stop))
    return body, tuple(merged)


@contextmanager
def _writing(db: sqlite3.Connection) -> Iterator[None]:
    """One write transaction, begun IMMEDIATE: concurrent refreshes take turns, and one
    that reads what to do inside it sees what the other wrote."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


class SearchIndex:
    def __init__(self, store: SessionStore) -> None:
        self.store = store
        self.path = store.home / "search.sqlite"
        self.skipped: list[str] = []  # sessions that could not be read at the last refresh
        self.read = 0  # sessions read from the store at the last refresh
        self._tops: dict[bytes, list[tuple[int, bytes]]] = {}  # chunks by transcript
        self.damaged: list[DamagedRef] = []  # refs that could not be read at the last refresh

    def _db(self) -> AbstractContextManager[sqlite3.Connection]:
        return open_cache(self.path, SCHEMA)

    def refresh(self) -> None:
        """Bring the index up to date with the refs, reading only the sessions whose head
        is not the one indexed (`read` counts them). A file found damaged is deleted and
        built again, once."""
        try:
            self._refresh()
        except sqlite3.DatabaseError as error:
            if not is_damage(error):
                raise
            self.path.unlink(missing_ok=True)
            self._refresh()

    def _refresh(self) -> None:
        self.read = 0
        scanned = self.store.scan()
        self.damaged = list(scanned.damaged)
        refs = scanned.ids
        with self._db() as db:
            db.isolation_level = None  # each batch its own IMMEDIATE transaction
            with _writing(db):
                reset = self._match_mode(db)
            known = dict(db.execute("SELECT session, head FROM meta").fetchall())
            gone = [s for s in known if s not in refs]
            changed = [(s, c) for s, c in refs.items() if known.get(s) != c.decode()]
            del known
            with _writing(db):
                for session in gone:
                    self._drop(db, session)
            for at in range(0, len(changed), BATCH):
                with _writing(db):  # another refresh meanwhile may have done some
                    for session, commit in changed[at : at + BATCH]:
                        self._bring(db, session, commit)
            if reset:
                self._compact_file(db)

    def _bring(self, db: sqlite3.Connection, session: str, commit: bytes) -> None:
        """Index `session` at `commit` unless it is indexed there already."""
        row = db.execute("SELECT head FROM meta WHERE session = ?", (session,)).fetchone()
        if row is not None and row[0] == commit.decode():
            return
        self.read += 1
        try:
            self._index(db, self.store.head_at(session, commit))
        except ObjectMissing:
            if self.store.exists(session):  # damaged: `doctor` names it
                self._damaged(session, "its objects are missing")
            self._drop(db, session)  # deleted while we indexed
        except NotACommit:
            self._damaged(session, "does not name a commit")
            self._drop(db, session)
        except StoreCorrupt:
            self.skipped.append(session)  # damaged: the others still search
            self._drop(db, session)

    def _damaged(self, session: str, why: str) -> None:
        self.damaged.append(DamagedRef(ref_name(session).decode(), why))

    # -- storage: each segment blob's text once, and which sessions hold it -------------

    def _index(self, db: sqlite3.Connection, head: Head) -> None:
        counted = head.counts.get("compactions")
        # the store counts compactions in the header: read them only when there are some
        compactions = [] if counted == 0 else self.store.read(head, "compactions")
        if len(self._tops) > TOPS:
            self._tops.clear()
        current = {start: blob.decode() for start, blob in self.store.segments(head, self._tops)}
        self._store(db, head.id, head.commit, head.header, compactions, current)

    def _store(
        self,
        db: sqlite3.Connection,
        sid: str,
        commit: bytes,
        h: Mapping[str, Any],
        compactions: list[Any],
        current: dict[int, str],
    ) -> None:
        """Index session `sid` at `commit`: its header `h`, its compaction records and its
        transcript's chunks (`current`: first message index -> blob id), replacing what
        the index held of it (found by `labelled`'s and `holds`' indexes: a session new
        to the index costs two lookups, not a delete from the FTS table)."""
        if db.execute("SELECT 1 FROM labelled WHERE session = ? LIMIT 1", (sid,)).fetchone():
            self._unlabel(db, sid)
        for idx, role, text in (
            (TITLE, "title", h.get("title") or ""),
            (SUMMARY, "summary", h.get("summary") or ""),
            *(
                (COMPACTION - n, "compaction", record.get("summary") or "")
                for n, record in enumerate(compactions)
                if isinstance(record, dict) and isinstance(record.get("summary"), str)
            ),
        ):
            if text:
                row = db.execute(
                    "INSERT INTO labels VALUES (?, ?, ?, ?)", (self._clean(text), sid, idx, role)
                ).lastrowid
                db.execute("INSERT INTO labelled VALUES (?, ?)", (row, sid))
        stored = dict(
            db.execute(
                "SELECT holds.start, blobs.sha FROM holds JOIN blobs ON blobs.id = holds.blob"
                " WHERE holds.session = ?",
                (sid,),
            )
        )
        released: set[int] = set()
        for start in set(stored) | set(current):
            if stored.get(start) == current.get(start):
                continue
            if start in stored:
                released.update(
                    row[0]
                    for row in db.execute(
                        "SELECT blob FROM holds WHERE session = ? AND start = ?", (sid, start)
                    )
                )
            if start not in current:
                db.execute("DELETE FROM holds WHERE session = ? AND start = ?", (sid, start))
                continue
            db.execute(
                "INSERT OR REPLACE INTO holds VALUES (?, ?, ?)",
                (sid, start, self._blob(db, current[start])),
            )
        self._collect(db, released)
        db.execute(
            "INSERT OR REPLACE INTO meta VALUES (?, ?, ?, ?, ?)",
            (
                sid,
                commit.decode(),
                h.get("title") or "",
                int(bool(h.get("archived"))),
                h.get("updated_at") or "",
            ),
        )

    def _blob(
        self, db: sqlite3.Connection, sha: str, messages: list[dict[str, Any]] | None = None
    ) -> int:
        """The key of segment blob `sha`, its messages (read from the store unless given)
        indexed if they were not yet."""
        row = db.execute("SELECT id FROM blobs WHERE sha = ?", (sha,)).fetchone()
        if row is not None:
            return int(row[0])
        if messages is None:
            messages = self.store.segment(sha.encode())
        if len(messages) > SLOTS:
            raise StoreCorrupt(f"segment {sha[:12]} holds {plural(len(messages), 'message')}")
        key = db.execute("INSERT INTO blobs (sha) VALUES (?)", (sha,)).lastrowid
        assert key is not None
        rows = [
            (key * SLOTS + n, self._clean(message_text(m)), str(m.get("role", "")))
            for n, m in enumerate(messages)
            if m.get("role") != "system"  # gitsessions' own prompt: in every session
        ]
        db.executemany("INSERT INTO texts (rowid, text, role) VALUES (?, ?, ?)",
                       [r for r in rows if r[1]])  # fmt: skip
        return key

    def _collect(self, db: sqlite3.Connection, keys: Collection[int]) -> None:
        """Drop the text of those blobs that no session holds any more."""
        for key in keys:
            if db.execute("SELECT 1 FROM holds WHERE blob = ? LIMIT 1", (key,)).fetchone():
                continue
            db.execute(
                "DELETE FROM texts WHERE rowid >= ? AND rowid < ?",
                (key * SLOTS, (key + 1) * SLOTS),
            )
            db.execute("DELETE FROM blobs WHERE id = ?", (key,))

    def _mode(self, db: sqlite3.Connection) -> tuple[int | None, int]:
        """(the rules the index was built under, None when empty; the rules now)."""
        row = db.execute("SELECT redact FROM mode").fetchone()
        return (None if row is None else row[0]), (rules_id() if self.store.redact else 0)

    def _match_mode(self, db: sqlite3.Connection) -> bool:
        """Empty an index built under the other redaction setting or other rules; True
        when it did (then `_compact_file`, outside the transaction)."""
        built, expected = self._mode(db)
        if built == expected:
            return False
        for table in TABLES:
            db.execute(f"DELETE FROM {table}")
        db.execute("INSERT INTO mode VALUES (?)", (expected,))
        return True

    def _clean(self, text: str) -> str:
        return redact(text)[0] if self.store.redact else text

    def _drop(self, db: sqlite3.Connection, session: str) -> None:
        held = [
            row[0] for row in db.execute("SELECT blob FROM holds WHERE session = ?", (session,))
        ]
        self._unlabel(db, session)
        for table in ("holds", "meta"):
            db.execute(f"DELETE FROM {table} WHERE session = ?", (session,))
        self._collect(db, held)

    @staticmethod
    def _unlabel(db: sqlite3.Connection, session: str) -> None:
        """Delete a session's titles and summaries (by `labelled`'s index on session)."""
        db.execute(
            "DELETE FROM labels WHERE rowid IN (SELECT row FROM labelled WHERE session = ?)",
            (session,),
        )
        db.execute("DELETE FROM labelled WHERE session = ?", (session,))

    def _compact_file(self, db: sqlite3.Connection) -> None:
        """Rewrite the file so deleted text is not left in free pages."""
        for table in ("texts", "labels"):
            db.execute(f"INSERT INTO {table}({table}) VALUES ('optimize')")
        db.commit()
        db.execute("VACUUM")

    def forget(self, session: str) -> None:
        """Remove a deleted session's text from the index file now (text a fork still
        holds stays)."""
        if not self.path.exists():
            return
        with self._db() as db:
            self._drop(db, session)
            self._compact_file(db)

    def _matching(
        self,
        db: sqlite3.Connection,
        where: str,
        args: list[Any],
        *,
        include_archived: bool,
        limit: int,
        session: str | None,
        sessions: Collection[str] | None,
    ) -> list[tuple[str, int, str, str, str, tuple[str, ...]]]:
        """`(session, index, role, text, title, holders)` of each message, title or summary
        for which `where` holds (written against a table named `{t}` with a `text` column,
        taking `args`), newest session first. A segment's text is matched once, however
        many sessions hold it, and a message those sessions share is one row: `session`
        the newest of them (SQLite gives a bare column the values of the row `MAX`
        picked), `holders` all of them, newest first."""
        filters, extra = "", []
        if not include_archived:
            filters += " AND meta.archived = 0"
        if session is not None:
            filters += " AND meta.session = ?"
            extra.append(session)
        if sessions is not None:
            filters += " AND meta.session IN (SELECT value FROM json_each(?))"
            extra.append(json.dumps(sorted(sessions)))
        sql = (
            f"SELECT holds.session, holds.start + texts.rowid % {SLOTS}, texts.role, texts.text,"
            " meta.title, MAX(meta.updated_at), holds.blob, holds.start FROM texts"
            f" JOIN holds ON holds.blob = texts.rowid / {SLOTS}"
            f" JOIN meta ON meta.session = holds.session WHERE {where.format(t='texts')}"
            f"{filters} GROUP BY texts.rowid, holds.start UNION ALL "
            "SELECT labels.session, labels.idx, labels.role, labels.text, meta.title,"
            " meta.updated_at, NULL, NULL FROM labels JOIN meta ON meta.session = labels.session"
            f" WHERE {where.format(t='labels')}{filters}"
            " ORDER BY 6 DESC, 1, 2 LIMIT ?"
        )
        rows = db.execute(sql, [*args, *extra, *args, *extra, limit]).fetchall()
        found = []
        for sid, idx, role, text, title, _, blob, start in rows:
            holders: tuple[str, ...] = (sid,)
            if blob is not None:
                others = db.execute(
                    "SELECT holds.session FROM holds JOIN meta ON meta.session = holds.session"
                    f" WHERE holds.blob = ? AND holds.start = ?{filters}"
                    " ORDER BY meta.updated_at DESC, holds.session",
                    [blob, start, *extra],
                )
                holders += tuple(row[0] for row in others if row[0] != sid)
            found.append((sid, idx, role, text, title, holders))
        return found

    # -- query ----------------------------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        include_archived: bool = False,
        limit: int = 50,
        session: str | None = None,
        sessions: Collection[str] | None = None,
    ) -> list[Hit]:
        """Messages, titles and summaries holding every word of `query` (in any order,
        case-insensitive, anywhere in a word), newest session first; only within
        `sessions` when given. An empty query finds nothing."""
        words = query_words(check_text(query, "the query"))
        if not words:
            return []
        self.refresh()
        conditions, args = ["{t}.role != 'system'"], []
        long = [w for w in words if len(w) >= 3]
        if long:
            conditions.append("{t} MATCH ?")
            args.append(" AND ".join('"' + w.replace('"', '""') + '"' for w in long))
        for word in words:
            if len(word) < 3:  # the trigram index needs 3 characters; scan for these
                conditions.append("{t}.text LIKE ? ESCAPE '\\'")
                escaped = word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
                args.append(f"%{escaped}%")
        with self._db() as db:
            rows = self._matching(
                db,
                " AND ".join(conditions),
                args,
                include_archived=include_archived,
                limit=limit,
                session=session,
                sessions=sessions,
            )
        hits = []
        for sid, idx, role, text, title, holders in rows:
            shown, marks = snippet(text, words)
            where = idx if idx >= 0 else None
            hits.append(Hit(sid, title, where, role, shown, marks, holders))
        return hits
