"""How a session is laid out as a git tree, and how one change becomes new objects.

    session.json              header (format, id, title, ..., counts)
    context.json              the working context, by reference to transcript lines
    context-inline.json       the context's messages the transcript does not hold
    transcript/...            the full record, a tree of immutable chunks (`chunks`)
    compactions.json  plan.json  pins.json   (usage: in the header)

Invariants:
- A transcript line, once written, is never rewritten: a commit adds one chunk holding
  its new lines (one per `CHUNK_LINES` lines), so its cost does not grow with the length
  of the session.
- A format-2 line is a record `{"message": {...}, "time", "turn", "step", ...}`; a
  format-1 line is the bare message. Both read as records (`decode_lines`), so a session
  upgraded from format 1 reads its old lines unchanged.
"""

import json
from collections.abc import Iterator, Sequence
from typing import Any

from dulwich.objects import Blob, ShaFile, Tree

from gitsessions.store import chunks
from gitsessions.store.errors import StoreCorrupt
from gitsessions.store.repo import GitStore
from gitsessions.values.canonical import dumps_line

FILE_MODE = chunks.FILE_MODE
DIR_MODE = chunks.DIR_MODE
TRANSCRIPT = b"transcript"
CHUNK_LINES = 256  # at most this many lines in one chunk: reading one line stays bounded
Record = dict[str, Any]


def encode_lines(records: Sequence[Record]) -> bytes:
    return b"".join(dumps_line(r) + b"\n" for r in records)


def decode_lines(data: bytes, where: str) -> list[Record]:
    """The records of a chunk; a format-1 line (a bare message) becomes `{"message": it}`."""
    try:
        lines = [json.loads(line) for line in data.decode("utf-8").splitlines() if line]
    except ValueError as error:  # bad UTF-8, bad JSON, an integer too long
        raise StoreCorrupt(f"{where}: {error}") from None
    out: list[Record] = []
    for line in lines:
        if isinstance(line, dict) and isinstance(line.get("message"), dict):
            out.append(line)
        elif isinstance(line, dict) and isinstance(line.get("role"), str):
            out.append({"message": line})
        else:
            raise StoreCorrupt(f"{where}: a line is neither a record nor a message")
    return out


class TreeDraft:
    """A session tree being edited: read files from a base tree, set or append, finish."""

    def __init__(self, git: GitStore, base_tree: bytes | None) -> None:
        self.git = git
        self.root = Tree()
        self.transcript: bytes | None = None
        self.new_objects: list[ShaFile] = []
        self._trees: dict[bytes, ShaFile] = {}  # transcript trees made here, not yet written
        if base_tree is not None:
            root = git.get(base_tree)
            if not isinstance(root, Tree):
                raise StoreCorrupt(f"object {base_tree.decode()} is not a tree")
            for item in root.items():
                self.root.add(item.path, item.mode, item.sha)
            if TRANSCRIPT in self.root:
                self.transcript = self.root[TRANSCRIPT][1]

    def set(self, name: str, data: bytes) -> None:
        blob = Blob.from_string(data)
        self.new_objects.append(blob)
        self.root.add(name.encode(), FILE_MODE, blob.id)

    def remove(self, name: str) -> None:
        if name.encode() in self.root:
            del self.root[name.encode()]

    def refile_transcript(self) -> None:
        """File a format-1 transcript (flat segments) as format 2's tree of chunks."""
        if self.transcript is not None:
            trees = chunks.refile(self._get, self.transcript)
            if trees:
                self._add_trees(trees)

    def append_transcript(self, records: Sequence[Record], first: int) -> None:
        """New chunks holding `records` (the first of them message `first`): one, or
        one per `CHUNK_LINES` for a long batch such as an import."""
        for at in range(0, len(records), CHUNK_LINES):
            blob = Blob.from_string(encode_lines(records[at : at + CHUNK_LINES]))
            trees = chunks.append(self._get, self.transcript, first + at, blob.id)
            self.new_objects.append(blob)
            self._add_trees(trees)

    def _add_trees(self, trees: list[Tree]) -> None:
        self.new_objects += trees
        self._trees.update((tree.id, tree) for tree in trees)
        self.transcript = trees[-1].id

    def _get(self, sha: bytes) -> ShaFile:
        return self._trees.get(sha) or self.git.get(sha)

    def finish(self) -> bytes:
        """Add the root tree to `new_objects`; returns its id."""
        if self.transcript is not None:
            self.root.add(TRANSCRIPT, DIR_MODE, self.transcript)
        self.new_objects.append(self.root)
        return self.root.id


def transcript_tree(git: GitStore, tree_id: bytes) -> bytes | None:
    root = git.get(tree_id)
    assert isinstance(root, Tree)
    return root[TRANSCRIPT][1] if TRANSCRIPT in root else None


def transcript_chunks(git: GitStore, tree_id: bytes) -> list[tuple[int, bytes]]:
    """`(index of the chunk's first message, blob id)` for each transcript chunk."""
    sub = transcript_tree(git, tree_id)
    return [] if sub is None else list(chunks.all_chunks(git.get, sub))


def read_chunk(git: GitStore, blob_id: bytes) -> list[Record]:
    return decode_lines(git.blob_bytes(blob_id), f"transcript chunk {blob_id.decode()[:12]}")


def iter_records(
    git: GitStore, tree_id: bytes, count: int, start: int = 0, end: int | None = None
) -> Iterator[tuple[int, Record]]:
    """`(index, record)` for records `start:end`, reading only the chunks holding them."""
    end = count if end is None else min(end, count)
    start = max(0, start)
    if start >= end:
        return
    sub = transcript_tree(git, tree_id)
    if sub is None:
        raise StoreCorrupt("transcript is missing")
    expected = None
    for first, blob_id in chunks.covering(git.get, sub, start, end):
        if expected is not None and first != expected:
            raise StoreCorrupt(f"transcript: message {expected} is missing")
        records = read_chunk(git, blob_id)
        expected = first + len(records)
        for offset, record in enumerate(records):
            if start <= first + offset < end:
                yield first + offset, record
    if expected is None or expected < end:
        raise StoreCorrupt(f"transcript: message {expected or start} is missing")


def read_transcript(
    git: GitStore, tree_id: bytes, count: int, start: int = 0, end: int | None = None
) -> list[Record]:
    """Records `start:end` of the transcript in `tree_id`, reading only their chunks."""
    return [record for _index, record in iter_records(git, tree_id, count, start, end)]
