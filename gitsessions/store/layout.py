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
        # split at newlines only: `str.splitlines` also splits at U+2028, U+0085 ...,
        # which a JSON line holds unescaped inside its strings
        lines = [json.loads(line) for line in data.decode("utf-8").split("\n") if line]
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


def _trees(git: "GitStore") -> chunks.Get:
    return git.tree


def transcript_tree(git: "GitStore", tree_id: bytes) -> bytes | None:
    root = git.tree(tree_id)
    return root[TRANSCRIPT][1] if TRANSCRIPT in root else None


def transcript_chunks(git: "GitStore", tree_id: bytes) -> list[tuple[int, bytes]]:
    """`(index of the chunk's first message, blob id)` for each transcript chunk."""
    sub = transcript_tree(git, tree_id)
    return [] if sub is None else list(chunks.all_chunks(_trees(git), sub))


def read_chunk(git: "GitStore", blob_id: bytes) -> list[Record]:
    return decode_lines(git.blob(blob_id), f"transcript chunk {blob_id.decode()[:12]}")


def iter_records(
    git: "GitStore", tree_id: bytes, count: int, start: int = 0, end: int | None = None
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
    for first, blob_id in chunks.covering(_trees(git), sub, start, end):
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
    git: "GitStore", tree_id: bytes, count: int, start: int = 0, end: int | None = None
) -> list[Record]:
    """Records `start:end` of the transcript in `tree_id`, reading only their chunks."""
    return [record for _index, record in iter_records(git, tree_id, count, start, end)]
