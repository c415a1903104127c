"""A rebuildable cache of session headers for fast listing.

Invariant: the refs are the truth. Each row is keyed by session id and the commit it was
read from; a row whose commit is not the branch's current head is re-read, a row whose
branch is gone is dropped. A damaged ref never hides the others: it is left out (a ref
file that holds no commit id) or listed as unreadable (a ref naming a missing object or
one that is not a commit), and named in `damaged` for the caller to say. `store.cache`
rebuilds a file that cannot be read and keeps deleted rows from lingering on disk.

Each row also keeps the session's first prompt (`first_prompt`, one line, at most
`PROMPT_CHARS`), what `list` shows of a session with no title or summary: the transcript
never changes, so it is read once, from the first chunk, and carried to the next head.

A catalog reads the refs through `StoreRefs` (no dulwich repository) when it is given
them, and opens the full store only for a row it must read again: `list` and `info` on a
warm cache import no git library but dulwich's config parser (tests/test_startup.py).
"""

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from gitsessions.store.cache import open_cache
from gitsessions.store.errors import NotACommit, ObjectMissing, StoreError
from gitsessions.store.formats import NewerFormat
from gitsessions.store.refs import DamagedRef, StoreRefs, ref_name
from gitsessions.values.messages import text_of

if TYPE_CHECKING:
    from gitsessions.store.reader import Head, SessionReader
    from gitsessions.store.sessions import SessionStore

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS headers "
    "(id TEXT PRIMARY KEY, head TEXT, header TEXT, first_prompt TEXT)"
)
PROMPT_CHARS = 200
FIRST_LINES = 8  # the first prompt is within the transcript's first lines (system, user)


def broken_header(
    session_id: str, why: str, title: str = "(unreadable: run gitsessions doctor)"
) -> dict[str, Any]:
    """What `list` shows of a session that cannot be read: its id and why (never cached)."""
    return {"id": session_id, "title": title, "broken": why}


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
        self.damaged: list[DamagedRef] = []  # the damaged refs the last `headers` met

    @property
    def store(self) -> "SessionReader":
        if self._open_store is not None:
            return self._open_store()
        assert not isinstance(self.refs, StoreRefs), "a StoreRefs catalog needs open_store"
        return self.refs

    def cached_header(self, session_id: str, commit: bytes) -> dict[str, Any] | None:
        """The header cached for `session_id` at `commit`, None when the row is stale
        or missing (then read the session itself)."""
        with open_cache(self.path, [SCHEMA]) as db:
            row = db.execute(
                "SELECT header FROM headers WHERE id = ? AND head = ?",
                (session_id, commit.decode()),
            ).fetchone()
        return json.loads(row[0]) if row else None

    def headers(self) -> list[dict[str, Any]]:
        """Every session's header (with `head` and `first_prompt` added), refreshed from
        the refs; the refs that could not be read are in `damaged` after."""
        scanned = self.refs.scan()
        self.damaged = list(scanned.damaged)
        refs = {sid: commit.decode() for sid, commit in scanned.ids.items()}
        with open_cache(self.path, [SCHEMA]) as db:
            cached = {
                row[0]: (row[1], row[2], row[3]) for row in db.execute("SELECT * FROM headers")
            }
            out: list[dict[str, Any]] = []
            fresh: list[tuple[str, str, str, str]] = []
            for sid, commit in refs.items():
                row = cached.get(sid)
                prompt = (row[2] if row else "") or ""
                if row and row[0] == commit:
                    header = json.loads(row[1])
                else:
                    try:
                        head = self.store.head_at(sid, commit.encode())
                        header = head.header
                        prompt = prompt or self._first_prompt(head)
                    except ObjectMissing:
                        if not self.refs.exists(sid):
                            continue  # deleted while we listed
                        header = broken_header(sid, "its objects are missing")
                        self._damaged(sid, "its objects are missing")
                    except NotACommit:
                        header = broken_header(sid, "its branch does not name a commit")
                        self._damaged(sid, "does not name a commit")
                    except NewerFormat as error:
                        header = broken_header(
                            sid, str(error), "(newer format: upgrade gitsessions)"
                        )
                    except StoreError as error:
                        header = broken_header(sid, str(error))
                    else:
                        fresh.append((sid, commit, json.dumps(header), prompt))
                header["head"] = commit
                header["first_prompt"] = prompt
                out.append(header)
            gone = [(sid,) for sid in cached if sid not in refs]
            if fresh or gone:
                with db:
                    db.executemany("INSERT OR REPLACE INTO headers VALUES (?, ?, ?, ?)", fresh)
                    db.executemany("DELETE FROM headers WHERE id = ?", gone)
            return out

    def _damaged(self, session_id: str, why: str) -> None:
        self.damaged.append(DamagedRef(ref_name(session_id).decode(), why))

    def _first_prompt(self, head: "Head") -> str:
        """The text of the transcript's first user message, on one line ("" if none)."""
        end = min(FIRST_LINES, head.counts.get("messages", 0))
        for message in self.store.transcript(head, 0, end):
            if message.get("role") == "user":
                return " ".join(text_of(message).split())[:PROMPT_CHARS]
        return ""

    def forget(self, session_id: str) -> None:
        """Drop a session's row now (after delete), not at the next listing."""
        with open_cache(self.path, [SCHEMA]) as db:
            with db:
                db.execute("DELETE FROM headers WHERE id = ?", (session_id,))
            db.execute("VACUUM")
