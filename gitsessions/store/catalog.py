"""A rebuildable cache of session headers for fast listing (`index.sqlite`).

Invariants:
- The refs are the truth: a row is keyed by session id and the commit it was read
  from; a row whose commit is not the head is re-read, one whose branch is gone dropped.
- A damaged ref never hides the others: it is left out or listed as unreadable, and
  named in `damaged` for the caller to say.
- A row keeps the session's first prompt (one line, `PROMPT_CHARS`), read once from the
  first chunk and carried to the next head (the transcript never changes).
- A pull writes the rows of the sessions it creates (`fill`, `row`: the same row a
  refresh writes) before their branches exist; a row with no branch is dropped.
- The project index (`places`: each header's folder, repository root, worktree
  repository, identity, parent) is filled by SQLite triggers from `headers`, so every
  writer keeps it; its values must stay what `scope.workspace_sessions` compares, so
  `list --here` (`stream(within=...)`) reads only the project's rows and their forks'.
- Refs are read through `StoreRefs` (no dulwich repository): `list` and `info` on a warm
  cache import no git library but dulwich's config parser (tests/test_startup.py).
- Rows are brought up to the refs by ids and commits alone (their own index), then read
  in the order shown (index on `(active_at, id)`, holding the listed row too): `--limit`
  builds only the rows shown, a pipe gets a row at a time.
- A row keeps what `list` shows of the session (`listed`: `values.listed.list_row` of
  its header and first prompt, made when the row is written), so a listing parses that
  small object a session rather than the whole header (`stream_rows`).
"""

import json
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitsessions.store.cache import open_cache
from gitsessions.store.errors import NotACommit, ObjectMissing, StoreError
from gitsessions.store.formats import NewerFormat
from gitsessions.store.refs import DamagedRef, StoreRefs, ref_name
from gitsessions.values.listed import FORMAT as LISTED
from gitsessions.values.listed import list_row
from gitsessions.values.messages import text_of
from gitsessions.values.records import merged_forks

if TYPE_CHECKING:
    from gitsessions.store.reader import Head, SessionReader
    from gitsessions.store.sessions import SessionStore

_MERGING = "instr(header, '\"merged\"') > 0"  # a header that may record a merge
MOST = 16  # roots or remotes of a project identity read (`project_id.MOST`)
_ONE = (
    "SELECT '{kind}' AS kind, json_extract(new.header, '{at}') AS value"
    " WHERE json_type(new.header, '{at}') = 'text'"
)
_EACH = (
    "SELECT '{kind}', value FROM json_each(new.header, '$.workspace.project.{key}')"
    f" WHERE type = 'text' AND key < {MOST}"
    " AND json_type(new.header, '$.workspace.project.roots') = 'array'"
    " AND json_type(new.header, '$.workspace.project.remotes') = 'array'"
)
PLACES = " UNION ALL ".join(  # what `scope.workspace_sessions` compares of a header
    [
        _ONE.format(kind="path", at="$.workspace.path"),
        _ONE.format(kind="root", at="$.workspace.repo_root"),
        _ONE.format(kind="repo", at="$.worktree.repo"),
        _ONE.format(kind="parent", at="$.parent_id"),
        _EACH.format(kind="commit", key="roots"),
        _EACH.format(kind="remote", key="remotes"),
    ]
)
SCHEMA = [
    "CREATE TABLE IF NOT EXISTS headers (id TEXT PRIMARY KEY, head TEXT, header TEXT, "
    "first_prompt TEXT, active_at TEXT NOT NULL DEFAULT '', archived INTEGER NOT NULL DEFAULT 0, "
    f"listed TEXT NOT NULL) -- rows of list_row, format {LISTED}",
    # in the order shown, covering what a listing reads (`stream_rows`): one pass over it
    "CREATE INDEX IF NOT EXISTS headers_by_activity"
    " ON headers (active_at, id, archived, head, listed)",
    "CREATE INDEX IF NOT EXISTS headers_heads ON headers (id, head)",  # `refresh` reads it alone
    # the few headers that may record a merge (`merged`): read without a scan of all
    f"CREATE INDEX IF NOT EXISTS headers_merging ON headers (id) WHERE {_MERGING}",
    # the project index: where each session says it was made (kind, value), filled from
    # the header by SQLite itself, so every writer of `headers` keeps it
    "CREATE TABLE IF NOT EXISTS places (id TEXT, kind TEXT, value TEXT)",
    "CREATE INDEX IF NOT EXISTS places_by_value ON places (kind, value)",
    "CREATE INDEX IF NOT EXISTS places_by_id ON places (id)",
    "CREATE TRIGGER IF NOT EXISTS places_put AFTER INSERT ON headers BEGIN"
    " DELETE FROM places WHERE id = new.id;"
    " INSERT INTO places SELECT new.id, kind, value FROM (" + PLACES + ") WHERE value != '';"
    " END",
    "CREATE TRIGGER IF NOT EXISTS places_drop AFTER DELETE ON headers BEGIN"
    " DELETE FROM places WHERE id = old.id; END",
]
PROMPT_CHARS = 200
BATCH = 500  # rows read again before they are written
FILL_BATCH = 5000  # rows a pull read written in one transaction
FIRST_LINES = 8  # the first prompt is within the transcript's first lines (system, user)


Row = tuple[str, str, str, str, str, int, str]  # a `headers` row, in its columns' order


def row(session_id: str, commit: str, header: dict[str, Any], prompt: str) -> Row:
    """The cache's row of a session read at `commit` (its header without `first_prompt`):
    what `refresh` writes, and a pull for the sessions it brings (`fill`). Its `listed`
    is the row `list` shows, made from the header as `stream` gives it back."""
    active = header.get("active_at") or header.get("updated_at") or ""
    archived = int(bool(header.get("archived")))
    listed = json.dumps(list_row({**header, "first_prompt": prompt or ""}))
    return (session_id, commit, json.dumps(header), prompt, str(active), archived, listed)


def first_prompt(messages: Iterable[dict[str, Any]]) -> str:
    """The text of the first user message among `messages` (the transcript's first
    `FIRST_LINES`), on one line, at most `PROMPT_CHARS` ("" if none)."""
    for message in messages:
        if message.get("role") == "user":
            return " ".join(text_of(message).split())[:PROMPT_CHARS]
    return ""


def fill(home: Path, rows: Iterable[Row]) -> None:
    """Write the rows of sessions read elsewhere (a pull, from what it fetched and
    checked) into the cache as they come, `FILL_BATCH` a transaction, so the next
    listing finds them; a row whose commit is not its branch's head when listed is
    read again, as any other."""
    with open_cache(home / "index.sqlite", SCHEMA) as db:
        batch: list[Row] = []
        for one in rows:
            batch.append(one)
            if len(batch) >= FILL_BATCH:
                Catalog._write(db, batch, [])
                batch = []
        Catalog._write(db, batch, [])


def broken_header(
    session_id: str, why: str, title: str = "(unreadable: run gitsessions doctor)"
) -> dict[str, Any]:
    """What `list` shows of a session that cannot be read: its id and why (never cached)."""
    return {"id": session_id, "title": title, "broken": why}


@dataclass(frozen=True)
class Project:
    """The sessions of one project as the index (`places`) finds them: those recorded in
    one of `paths`, with a `repo_root` in `roots` or a worktree of a repository in
    `repos` (each as recorded), or with an identity sharing a root commit in `commits`,
    or (when either side has no root commit) a remote in `remotes`; and every fork
    descending from one of those."""

    paths: Sequence[str] = ()
    roots: Sequence[str] = ()
    repos: Sequence[str] = ()
    commits: Sequence[str] = ()
    remotes: Sequence[str] = ()


_WITHIN = (
    "WITH RECURSIVE inside(id) AS ("
    "SELECT id FROM places WHERE kind = 'path' AND value IN (SELECT value FROM json_each(?))"
    " UNION SELECT id FROM places WHERE kind = 'root'"
    " AND value IN (SELECT value FROM json_each(?))"
    " UNION SELECT id FROM places WHERE kind = 'repo'"
    " AND value IN (SELECT value FROM json_each(?))"
    " UNION SELECT id FROM places WHERE kind = 'commit'"
    " AND value IN (SELECT value FROM json_each(?))"
    " UNION SELECT p.id FROM places AS p WHERE p.kind = 'remote'"
    " AND p.value IN (SELECT value FROM json_each(?)) AND (? OR NOT EXISTS"
    " (SELECT 1 FROM places AS c WHERE c.id = p.id AND c.kind = 'commit'))"
    " UNION SELECT p.id FROM places AS p JOIN inside ON p.kind = 'parent' AND p.value = inside.id"
    ") "
)


def _where(include_archived: bool, within: Project | None) -> tuple[tuple[str, str], list[Any]]:
    """The `WITH` before a query of `headers` and the `WHERE` after it, and their values."""
    conditions = [] if include_archived else ["archived = 0"]
    if within is None:
        return ("", " WHERE " + " AND ".join(conditions) if conditions else ""), []
    conditions.append("id IN (SELECT id FROM inside)")
    lists = (within.paths, within.roots, within.repos, within.commits, within.remotes)
    args: list[Any] = [json.dumps(list(values)) for values in lists]
    args.append(int(not within.commits))  # no root commit here: any remote matches
    return (_WITHIN, " WHERE " + " AND ".join(conditions)), args


class Catalog:
    def __init__(
        self,
        store: "SessionStore | StoreRefs",
        open_store: "Callable[[], SessionReader] | None" = None,
    ) -> None:
        """`store` reads the refs; `open_store` gives the store a stale row is read from
        (by default `store` itself, which must then be a `SessionStore`)."""
        self.refs = store
        self._open_store = open_store
        self.path = store.home / "index.sqlite"
        self.damaged: list[DamagedRef] = []  # the damaged refs the last `refresh` met
        self.broken: list[dict[str, Any]] = []  # the headers it could not read
        self.heads: dict[str, str] = {}  # the sessions it read, by id: the commit read

    @property
    def store(self) -> "SessionReader":
        if self._open_store is not None:
            return self._open_store()
        assert not isinstance(self.refs, StoreRefs), "a StoreRefs catalog needs open_store"
        return self.refs

    def cached_header(self, session_id: str, commit: bytes) -> dict[str, Any] | None:
        """The header cached for `session_id` at `commit`, None when the row is stale
        or missing (then read the session itself)."""
        with open_cache(self.path, SCHEMA) as db:
            row = db.execute(
                "SELECT header FROM headers WHERE id = ? AND head = ?",
                (session_id, commit.decode()),
            ).fetchone()
        return json.loads(row[0]) if row else None

    def headers(self) -> list[dict[str, Any]]:
        """Every session's header (with `head` and `first_prompt` added), refreshed from
        the refs, the most recently active first; the refs that could not be read are in
        `damaged` after."""
        self.refresh()
        return list(self.stream(include_archived=True))

    def refresh(self) -> None:
        """Bring the cache up to the refs: a row whose commit is not its branch's head is
        read again, a row whose branch is gone dropped. Only ids and commits are held in
        memory; a session that cannot be read is kept aside (`stream` yields it last)."""
        scanned = self.refs.scan()
        self.damaged = list(scanned.damaged)
        self.broken = []
        self.heads = {sid: commit.decode() for sid, commit in scanned.ids.items()}
        with open_cache(self.path, SCHEMA) as db:
            cached = dict(db.execute("SELECT id, head FROM headers"))
            if cached == self.heads:
                return  # every row at its branch's head, none gone: one comparison
            refs = dict(self.heads)
            fresh: list[Row] = []
            for sid, commit in refs.items():
                if cached.get(sid) == commit:
                    continue
                known = None  # the first prompt, carried from the row's older head
                if sid in cached:
                    old = db.execute("SELECT first_prompt FROM headers WHERE id = ?", (sid,))
                    known = (old.fetchone() or [None])[0]
                header = self._read(sid, commit, known)
                if header is None:
                    del self.heads[sid]
                elif "broken" in header:
                    del self.heads[sid]  # its row (an older head) dropped: not listed
                    header["head"] = commit
                    header["first_prompt"] = ""
                    self.broken.append(header)
                else:
                    prompt = header.pop("first_prompt")
                    fresh.append(row(sid, commit, header, prompt))
                    if len(fresh) >= BATCH:  # written as read: a cold cache is not held whole
                        self._write(db, fresh, [])
                        fresh = []
            gone = [(sid,) for sid in cached if sid not in self.heads]
            self._write(db, fresh, gone)
        self.broken.sort(key=lambda h: h["id"], reverse=True)

    def stream(
        self, include_archived: bool, within: "Project | None" = None
    ) -> Iterator[dict[str, Any]]:
        """The headers `refresh` left, one at a time, the most recently active first
        (`active_at`, else `updated_at`, then the id, descending; the unreadable last):
        read from the cache's index in that order, never all held at once. With
        `within`, only that project's sessions (the unreadable are none of them)."""
        for _sid, commit, text, prompt in self._ordered(
            "header, first_prompt", include_archived, within
        ):
            header = json.loads(text)
            header["head"] = commit
            header["first_prompt"] = prompt or ""
            yield header
        if within is None:
            yield from self.broken

    def stream_rows(
        self, include_archived: bool, within: "Project | None" = None
    ) -> Iterator[dict[str, Any]]:
        """`list_row` of each header `stream` yields, in the same order: the rows cached
        beside the headers (`listed`), so no header is parsed."""
        loads = json.loads
        for row in self._ordered("listed", include_archived, within):
            yield loads(row[2])
        if within is None:
            yield from (list_row(header) for header in self.broken)

    def _ordered(
        self, columns: str, include_archived: bool, within: "Project | None"
    ) -> Iterator[tuple[Any, ...]]:
        """Each cached row `refresh` checked (`id, head, <columns>`), in the order shown
        (see `stream`)."""
        where, args = _where(include_archived, within)
        heads = self.heads
        with open_cache(self.path, SCHEMA) as db:
            # a project's rows too in the order shown, each looked up among the project's
            # (not all of them sorted afterwards: a project may be the whole store)
            table = "headers INDEXED BY headers_by_activity" if within else "headers"
            query = f"{where[0]}SELECT id, head, {columns} FROM {table}{where[1]} "
            for row in db.execute(query + "ORDER BY active_at DESC, id DESC", args):
                if heads.get(row[0]) == row[1]:  # else unreadable at its head, or moved
                    yield row  # or gone since `refresh`

    def values(self, kind: str) -> list[str]:
        """Each value of one kind of the project index once (`path`, `root`, `repo`:
        the folders sessions were recorded in, as recorded)."""
        with open_cache(self.path, SCHEMA) as db:
            found = db.execute("SELECT DISTINCT value FROM places WHERE kind = ?", (kind,))
            return [row[0] for row in found]

    def merged(self) -> dict[str, str]:
        """{fork id: the session it was merged into} for every fork some session's
        header records merging at the fork's current head (only the headers that
        mention a merge are parsed)."""
        found: list[dict[str, Any]] = []
        with open_cache(self.path, SCHEMA) as db:
            query = f"SELECT id, head, header FROM headers WHERE {_MERGING}"  # its index
            for sid, commit, text in db.execute(query):
                if self.heads.get(sid) == commit:
                    found.append(json.loads(text))
        return merged_forks(found, self.heads)

    @staticmethod
    def _write(db: sqlite3.Connection, fresh: list[Row], gone: list[tuple[str]]) -> None:
        if fresh or gone:
            with db:
                db.executemany("INSERT OR REPLACE INTO headers VALUES (?, ?, ?, ?, ?, ?, ?)", fresh)
                db.executemany("DELETE FROM headers WHERE id = ?", gone)

    @property
    def ids(self) -> set[str]:
        """The sessions the last `refresh` found (those it could not read too)."""
        return set(self.heads) | {str(h["id"]) for h in self.broken}

    def count(self, include_archived: bool, within: "Project | None" = None) -> int:
        """How many headers `stream(include_archived, within)` yields (after `refresh`)."""
        where, args = _where(include_archived, within)
        with open_cache(self.path, SCHEMA) as db:
            query = f"{where[0]}SELECT count(*) FROM headers{where[1]}"
            (cached,) = db.execute(query, args).fetchone()
        return int(cached) + (len(self.broken) if within is None else 0)

    def _read(self, sid: str, commit: str, prompt: str | None) -> dict[str, Any] | None:
        """A session's header read from the store at `commit` (`first_prompt` added), a
        broken header when it cannot be, None when its branch went meanwhile."""
        try:
            head = self.store.head_at(sid, commit.encode())
            header = dict(head.header)
            header["first_prompt"] = prompt or self._first_prompt(head)
            return header
        except ObjectMissing:
            if not self.refs.exists(sid):
                return None  # deleted while we listed
            self._damaged(sid, "its objects are missing")
            return broken_header(sid, "its objects are missing")
        except NotACommit:
            self._damaged(sid, "does not name a commit")
            return broken_header(sid, "its branch does not name a commit")
        except NewerFormat as error:
            return broken_header(sid, str(error), "(newer format: upgrade gitsessions)")
        except StoreError as error:
            return broken_header(sid, str(error))

    def _damaged(self, session_id: str, why: str) -> None:
        self.damaged.append(DamagedRef(ref_name(session_id).decode(), why))

    def _first_prompt(self, head: "Head") -> str:
        """The text of the transcript's first user message, on one line ("" if none)."""
        end = min(FIRST_LINES, head.counts.get("messages", 0))
        return first_prompt(self.store.transcript(head, 0, end))

    def forget(self, session_id: str) -> None:
        """Drop a session's row now (after delete), not at the next listing."""
        with open_cache(self.path, SCHEMA) as db:
            with db:
                db.execute("DELETE FROM headers WHERE id = ?", (session_id,))
            db.execute("VACUUM")
