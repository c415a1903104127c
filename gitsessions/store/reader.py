"""Reading sessions: what `show`, `log` and `info` need, and what the writing store
(`sessions.SessionStore`, a `SessionReader` that commits) reads with too.

Invariants: nothing here writes; objects are read through `repo.GitStore` (dulwich's
object store with the store's checks), so readers and writers read alike.
`SessionReader.open` answers only for an existing store of this build's format, else the
caller opens `SessionStore` (which creates, upgrades or refuses); an older head is read
through `upgrades` (`Head.version`).
"""

import json
from collections.abc import Iterator
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

from dulwich.objects import Commit

from gitsessions.store import chunks, context_refs, files, upgrades
from gitsessions.store.context_refs import Candidate
from gitsessions.store.errors import NotACommit, ObjectMissing, SessionNotFound, StoreCorrupt
from gitsessions.store.formats import FORMAT, check_header, unwrap
from gitsessions.store.layout import (
    INLINE,
    JSON_FILES,
    Record,
    iter_records,
    read_chunk,
    transcript_tree,
)
from gitsessions.store.refs import (
    ScannedRefs,
    StoreRefs,
    ref_name,
    resolve_id,
    scan_session_ids,
    session_ids,
)
from gitsessions.store.repo import GitStore
from gitsessions.values.records import empty_usage

CONTEXTS_KEPT = 2  # sessions whose last context a reader keeps to match the next against


@dataclass(frozen=True)
class Head:
    """A session as of one commit: its header (session.json) and where to read the rest."""

    id: str
    commit: bytes
    tree: bytes
    header: dict[str, Any]
    version: int = FORMAT  # the format the commit holds (the header is read as FORMAT's)

    @property
    def counts(self) -> dict[str, int]:
        return dict(self.header.get("counts") or {})

    @property
    def branch(self) -> str:
        return ref_name(self.id).decode()


class SessionReader:
    """Sessions in `<home>/store.git`, read-only."""

    def __init__(self, home: Path, git: GitStore) -> None:
        self.home = home
        self.git = git
        # {session id: (commit, the context there as (message key, transcript index))}:
        # what the next commit's context is matched against without reading it again;
        # the last `CONTEXTS_KEPT` sessions' only (an import writes many sessions)
        self._contexts: dict[str, tuple[bytes, list[Candidate]]] = {}

    @classmethod
    def open(cls, home: Path) -> "SessionReader | None":
        """A reader of a store that is there and of this build's format, else None."""
        if StoreRefs.open(home) is None:
            return None

        return cls(home, GitStore(home / "store.git"))

    def close(self) -> None:
        self.git.close()

    # -- finding sessions -----------------------------------------------------------------

    def ids(self) -> dict[str, bytes]:
        """`{session id: head commit}` for every session."""
        return session_ids(self.git.path)

    def scan(self) -> ScannedRefs:
        """The sessions whose refs can be read, and each damaged ref named (listings)."""
        return scan_session_ids(self.git.path)

    def exists(self, session_id: str) -> bool:
        return self.git.ref(ref_name(session_id)) is not None

    def resolve(self, text: str) -> str:
        """The full id named by an id or unique prefix."""
        return resolve_id(text, self.scan, self.exists)

    def head(self, session_id: str) -> Head:
        """The session's head; a ref that names no commit, or a commit whose objects are
        missing while the ref still names it (not a delete meanwhile), is damage: one
        `StoreCorrupt` line naming `gitsessions doctor`."""
        name = ref_name(session_id)
        commit_id = self.git.ref(name)
        if commit_id is None:
            raise SessionNotFound(f"no session {session_id}")
        try:
            return self.head_at(session_id, commit_id)
        except NotACommit:
            raise NotACommit(
                f"session ref {name.decode()} is damaged ({commit_id.decode()} is not a "
                "commit); run `gitsessions doctor`"
            ) from None
        except ObjectMissing:
            if self.git.ref(name) != commit_id:
                raise  # deleted or moved meanwhile
            raise StoreCorrupt(
                f"session ref {name.decode()} is damaged (its objects are missing); "
                "run `gitsessions doctor`"
            ) from None

    def head_at(self, session_id: str, commit_id: bytes) -> Head:
        commit = self.read_commit(commit_id)
        header = self._json_at(commit.tree, "session.json")
        if not isinstance(header, dict):
            raise StoreCorrupt(f"session {session_id}: session.json is missing")
        head = Head(session_id, commit_id, commit.tree, header, check_header(header, session_id))
        if head.version == FORMAT:
            return head
        return replace(head, header=upgrades.file(self._older(head), head.version, "session.json"))

    def read_commit(self, commit_id: bytes) -> Commit:
        """A commit of the store (`NotACommit` if the object is something else)."""
        return self.git.commit(commit_id)

    def _json_at(self, tree_id: bytes, name: str) -> Any:
        tree = self.git.tree(tree_id)
        key = name.encode()
        if key not in tree:
            return None
        try:
            return json.loads(self.git.blob(tree[key][1]))
        except ValueError as error:  # bad UTF-8, bad JSON, an integer too long
            raise StoreCorrupt(f"{name} at {tree_id.decode()[:12]}: {error}") from None

    # -- reading a session ----------------------------------------------------------------

    def _older(self, head: Head) -> upgrades.Older:
        """`head`'s files as its own format holds them (its transcript read once at most)."""

        def json_file(name: str) -> Any:
            return head.header if name == "session.json" else self._json_at(head.tree, name)

        messages = cache(lambda: self.transcript(head))
        return upgrades.Older(json_file, messages, f"session {head.id[:8]}")

    def _doc(self, head: Head, name: str, older: upgrades.Older | None = None) -> Any:
        """File `name` at `head` as this build's format holds it."""
        if head.version == FORMAT:
            return self._json_at(head.tree, name)
        return upgrades.file(older or self._older(head), head.version, name)

    def _transcript_at(self, head: Head) -> tuple[chunks.Get, bytes | None]:
        """How to read the transcript's trees at `head`, and its top (an older head's
        filed as this build's format files it, in memory)."""
        top = transcript_tree(self.git, head.tree)
        if top is None or head.version == FORMAT:
            return self.git.tree, top
        made = upgrades.transcript(self.git.tree, top, head.version)
        if not made:
            return self.git.tree, top
        return chunks.overlay({tree.id: tree for tree in made}, self.git.tree), made[-1].id

    def read(self, head: Head, what: str) -> Any:
        """One of context, compactions, plan, pins, usage at `head`."""
        if what == "context":
            return [message for message, _ref in self.context_lines(head)]
        if what == "usage":
            return head.header.get("usage") or empty_usage()
        value = self._doc(head, JSON_FILES[what])
        if value is None:
            return []
        return unwrap(what, value, f"{JSON_FILES[what]} of session {head.id[:8]}")

    def context_lines(self, head: Head) -> list[tuple[dict[str, Any], int | None]]:
        """The working context at `head`, each message with its transcript index (None:
        a message the transcript does not hold, such as compaction's note)."""
        where = f"context.json of session {head.id[:8]}"
        older = self._older(head)  # an older head's transcript read once for both files
        doc = self._doc(head, "context.json", older)
        if doc is None:
            pairs: list[tuple[dict[str, Any], int | None]] = []
        else:
            items = unwrap("context", doc, where)
            inline = unwrap("inline", self._doc(head, INLINE, older) or {}, where)
            if not isinstance(inline, list):
                raise StoreCorrupt(f"{where}: the inline messages are not a list")
            refs = context_refs.references(items, len(inline), head.counts.get("messages", 0))
            lines = self._lines(head, sorted({r for r in refs if r is not None}))
            spare = iter(inline)
            pairs = [(next(spare) if r is None else lines[r], r) for r in refs]
        self.keep_context(head.id, head.commit, [(context_refs.key(m), ref) for m, ref in pairs])
        return pairs

    def keep_context(self, session_id: str, commit: bytes, candidates: list[Candidate]) -> None:
        """Keep a session's context at `commit` to match the next one against; only the
        last `CONTEXTS_KEPT` sessions' are kept."""
        self._contexts.pop(session_id, None)
        self._contexts[session_id] = (commit, candidates)
        while len(self._contexts) > CONTEXTS_KEPT:
            del self._contexts[next(iter(self._contexts))]

    def _lines(self, head: Head, wanted: list[int]) -> dict[int, dict[str, Any]]:
        """`{index: message}` for the transcript lines `wanted` (sorted), reading only
        the chunks that hold them."""
        out: dict[int, dict[str, Any]] = {}
        runs: list[list[int]] = []
        for index in wanted:
            if runs and index == runs[-1][1]:
                runs[-1][1] = index + 1
            else:
                runs.append([index, index + 1])
        for start, end in runs:
            for index, record in self.iter_records(head, start, end):
                out[index] = record["message"]
        return out

    def segments(
        self, head: Head, known: dict[bytes, list[tuple[int, bytes]]] | None = None
    ) -> list[tuple[int, bytes]]:
        """The transcript's chunks as `(first message index, blob id)`. `known`: those of
        transcripts read before, by their top tree (one id, the same chunks), added to
        as read: sessions sharing a transcript (forks, copies) read it once."""
        get, top = self._transcript_at(head)
        if top is None:
            return []
        if known is None or head.version != FORMAT:  # an older one's is made in memory
            return list(chunks.all_chunks(get, top))
        if top not in known:
            known[top] = list(chunks.all_chunks(get, top))
        return known[top]

    def segment(self, blob_id: bytes) -> list[dict[str, Any]]:
        """The messages of one transcript chunk."""
        return [record["message"] for record in read_chunk(self.git, blob_id)]

    def records(self, head: Head, start: int = 0, end: int | None = None) -> list[Record]:
        """Transcript records `start:end`: `{"message", "time", "turn", "step", ...}`
        (a line written by format 1 has only `message`)."""
        return [record for _index, record in self.iter_records(head, start, end)]

    def iter_records(
        self, head: Head, start: int = 0, end: int | None = None
    ) -> Iterator[tuple[int, Record]]:
        """`(index, record)` for records `start:end`, one chunk in memory at a time."""
        get, top = self._transcript_at(head)
        return iter_records(self.git.blob, get, top, head.counts.get("messages", 0), start, end)

    def read_file(self, head: Head, name: str) -> bytes | None:
        """The bytes of the session's file `name` (`files/<sha256>.<ext>`: `store.files`)
        at `head`; None when it holds none of that name."""
        return files.read(self.git.tree, self.git.blob, head.tree, name)

    def holds_files(self, head: Head) -> bool:
        """Whether the session holds files (`files/`) at `head`."""
        return files.FILES in self.git.tree(head.tree)

    def transcript(
        self, head: Head, start: int = 0, end: int | None = None
    ) -> list[dict[str, Any]]:
        return [record["message"] for record in self.records(head, start, end)]

    def history(self, head: Head) -> Iterator[tuple[bytes, Commit]]:
        """The commits of a session, newest first, following first parents."""
        commit_id: bytes | None = head.commit
        while commit_id is not None:
            commit = self.read_commit(commit_id)
            yield commit_id, commit
            commit_id = commit.parents[0] if commit.parents else None
