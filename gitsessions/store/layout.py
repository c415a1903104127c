"""How a session is laid out as a git tree, and how one change becomes new objects.

    session.json              header (format, id, title, ..., counts, usage)
    context.json              the working context, by reference to transcript lines
    context-inline.json       the context's messages the transcript does not hold
    transcript/...            the full record, a tree of immutable chunks (`chunks`)
    compactions.json  plan.json  pins.json
    files/<sha256>.<ext>      files the session keeps (`files`)

Invariants: a transcript line, once written, is never rewritten (a commit adds its new
lines as new chunks, one per `CHUNK_LINES` lines), so a commit's cost does not grow with
the session; a line is a record `{"message", "time", "turn", "step", ...}`, and an older
format's line or tree reads as one through `upgrades`.
"""

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from gitsessions.store import chunks, upgrades
from gitsessions.store.errors import StoreCorrupt
from gitsessions.store.repo import GitStore
from gitsessions.values.canonical import dumps_line

FILE_MODE = chunks.FILE_MODE
DIR_MODE = chunks.DIR_MODE
TRANSCRIPT = b"transcript"
CHUNK_LINES = 256  # at most this many lines in one chunk: reading one line stays bounded
Record = dict[str, Any]
JSON_FILES = {
    "context": "context.json",
    "compactions": "compactions.json",
    "plan": "plan.json",
    "pins": "pins.json",
}
INLINE = upgrades.INLINE


def encode_lines(records: Sequence[Record]) -> bytes:
    return b"".join(dumps_line(r) + b"\n" for r in records)


def decode_lines(data: bytes, where: str) -> list[Record]:
    """The records of a chunk (a line of an older format upgraded: `upgrades.record`)."""
    try:
        # split at newlines only: `str.splitlines` also splits at U+2028, U+0085 ...,
        # which a JSON line holds unescaped inside its strings
        lines = [json.loads(line) for line in data.decode("utf-8").split("\n") if line]
    except ValueError as error:  # bad UTF-8, bad JSON, an integer too long
        raise StoreCorrupt(f"{where}: {error}") from None
    out = [upgrades.record(line) for line in lines]
    if not all(isinstance(r, dict) and isinstance(r.get("message"), dict) for r in out):
        raise StoreCorrupt(f"{where}: a line is neither a record nor a message")
    return out


def transcript_tree(git: "GitStore", tree_id: bytes) -> bytes | None:
    root = git.tree(tree_id)
    return root[TRANSCRIPT][1] if TRANSCRIPT in root else None


def read_chunk(git: "GitStore", blob_id: bytes) -> list[Record]:
    return decode_lines(git.blob(blob_id), f"transcript chunk {blob_id.decode()[:12]}")


def iter_records(
    blob: Callable[[bytes], bytes],
    get: chunks.Get,
    top: bytes | None,
    count: int,
    start: int,
    end: int | None,
) -> Iterator[tuple[int, Record]]:
    """`(index, record)` for records `start:end` of the transcript `top` (its trees read
    through `get`, its chunks' bytes through `blob`), reading only the chunks holding
    them."""
    end = count if end is None else min(end, count)
    start = max(0, start)
    if start >= end:
        return
    if top is None:
        raise StoreCorrupt("transcript is missing")
    yield from records_in(blob, chunks.covering(get, top, start, end), start, end)


def records_in(
    blob: Callable[[bytes], bytes], covering: Iterable[tuple[int, bytes]], start: int, end: int
) -> Iterator[tuple[int, Record]]:
    """`(index, record)` for records `start:end` of the chunks `covering` (`(first
    message index, blob id)`, in order: `chunks.covering`'s), each one checked to
    follow the one before."""
    expected = None
    for first, blob_id in covering:
        if expected is not None and first != expected:
            raise StoreCorrupt(f"transcript: message {expected} is missing")
        records = decode_lines(blob(blob_id), f"transcript chunk {blob_id.decode()[:12]}")
        expected = first + len(records)
        for offset, record in enumerate(records):
            if start <= first + offset < end:
                yield first + offset, record
    if expected is None or expected < end:
        raise StoreCorrupt(f"transcript: message {expected or start} is missing")
