"""How a session is laid out as a git tree, and how one change becomes new objects.

    session.json          header (format, id, title, ..., counts)
    context.json          the working context: the exact messages sent next
    transcript/NNNNNN.jsonl   the full record, SEGMENT_SIZE messages per segment
    compactions.json  plan.json  pins.json  usage.json

Invariant: a full transcript segment is never rewritten. Appending messages rewrites at
most the last, partly filled segment and the small `transcript` tree, so the cost of a
commit does not grow with the length of the session.
"""

import json
from collections.abc import Sequence
from typing import Any

from dulwich.objects import Blob, ShaFile, Tree

from gitsessions.store.errors import StoreCorrupt
from gitsessions.store.repo import GitStore
from gitsessions.values.canonical import dumps_line

SEGMENT_SIZE = 256
FILE_MODE = 0o100644
DIR_MODE = 0o040000
TRANSCRIPT = b"transcript"


def segment_name(index: int) -> bytes:
    return f"{index:06d}.jsonl".encode()


def encode_lines(messages: Sequence[Any]) -> bytes:
    return b"".join(dumps_line(m) + b"\n" for m in messages)


def decode_lines(data: bytes, where: str) -> list[Any]:
    try:
        return [json.loads(line) for line in data.decode("utf-8").splitlines() if line]
    except ValueError as error:  # bad UTF-8, bad JSON, an integer too long
        raise StoreCorrupt(f"{where}: {error}") from None


class TreeDraft:
    """A session tree being edited: read files from a base tree, set or append, finish."""

    def __init__(self, git: GitStore, base_tree: bytes | None) -> None:
        self.git = git
        self.root = Tree()
        self.transcript = Tree()
        self.new_objects: list[ShaFile] = []
        if base_tree is not None:
            root = git.get(base_tree)
            if not isinstance(root, Tree):
                raise StoreCorrupt(f"object {base_tree.decode()} is not a tree")
            for item in root.items():
                self.root.add(item.path, item.mode, item.sha)
            if TRANSCRIPT in self.root:
                _mode, sha = self.root[TRANSCRIPT]
                sub = git.get(sha)
                if not isinstance(sub, Tree):
                    raise StoreCorrupt("transcript is not a directory")
                for item in sub.items():
                    self.transcript.add(item.path, item.mode, item.sha)

    def set(self, name: str, data: bytes) -> None:
        blob = Blob.from_string(data)
        self.new_objects.append(blob)
        self.root.add(name.encode(), FILE_MODE, blob.id)

    def append_transcript(self, messages: Sequence[Any], count_before: int) -> None:
        """Append after `count_before` messages, filling the last segment first."""
        position = count_before
        pending = list(messages)
        while pending:
            index, fill = divmod(position, SEGMENT_SIZE)
            name = segment_name(index)
            existing = b""
            if fill:
                if name not in self.transcript:
                    raise StoreCorrupt(f"transcript segment {name.decode()} is missing")
                existing = self.git.blob_bytes(self.transcript[name][1])
            take, pending = pending[: SEGMENT_SIZE - fill], pending[SEGMENT_SIZE - fill :]
            blob = Blob.from_string(existing + encode_lines(take))
            self.new_objects.append(blob)
            self.transcript.add(name, FILE_MODE, blob.id)
            position += len(take)

    def finish(self) -> bytes:
        """Add the trees to `new_objects`; returns the root tree id."""
        if len(self.transcript):
            self.new_objects.append(self.transcript)
            self.root.add(TRANSCRIPT, DIR_MODE, self.transcript.id)
        self.new_objects.append(self.root)
        return self.root.id


def transcript_segments(git: GitStore, tree_id: bytes) -> list[tuple[int, bytes]]:
    """`(index of the segment's first message, blob id)` for each transcript segment."""
    root = git.get(tree_id)
    assert isinstance(root, Tree)
    if TRANSCRIPT not in root:
        return []
    sub = git.get(root[TRANSCRIPT][1])
    assert isinstance(sub, Tree)
    return [
        (int(item.path.split(b".")[0]) * SEGMENT_SIZE, item.sha)
        for item in sorted(sub.items(), key=lambda i: i.path)
    ]


def read_segment(git: GitStore, blob_id: bytes) -> list[Any]:
    return decode_lines(git.blob_bytes(blob_id), f"segment {blob_id.decode()[:12]}")


def read_transcript(
    git: GitStore, tree_id: bytes, count: int, start: int = 0, end: int | None = None
) -> list[Any]:
    """Messages `start:end` of the transcript in `tree_id`, reading only their segments."""
    end = count if end is None else min(end, count)
    start = max(0, start)
    if start >= end:
        return []
    root = git.get(tree_id)
    assert isinstance(root, Tree)
    if TRANSCRIPT not in root:
        raise StoreCorrupt("transcript is missing")
    sub = git.get(root[TRANSCRIPT][1])
    assert isinstance(sub, Tree)
    out: list[Any] = []
    for index in range(start // SEGMENT_SIZE, (end - 1) // SEGMENT_SIZE + 1):
        name = segment_name(index)
        if name not in sub:
            raise StoreCorrupt(f"transcript segment {name.decode()} is missing")
        lines = decode_lines(git.blob_bytes(sub[name][1]), f"transcript/{name.decode()}")
        first = index * SEGMENT_SIZE
        out.extend(lines[max(start - first, 0) : end - first])
    return out
