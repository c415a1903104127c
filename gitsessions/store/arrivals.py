"""What a pull reads of the sessions new here: each head's header, checked, and its
first prompt, for the listing cache (`catalog.fill`), read by stock git in batches.

Invariants:
- Reads only, by `cat-file` (`transport.sizes_of`, `contents_of`): a batch of `BATCH`
  sessions costs a few processes (the headers and transcript tops, then each level of
  the transcripts' trees, then their first chunks), never a process or a lookup per
  session. Memory is bounded by what the remote sent, never held whole: objects are
  sized first and read `RUN_BYTES` a process; a batch's headers and trees are held,
  and of each first chunk (at most `CHUNK_BYTES`; a larger one is left to the listing)
  only its first lines.
- Read once: search's fill of a batch (`read`'s `texts`) and its first prompts share
  what either read (`Reads`: the trees, the first prompts' lines of each chunk), so no
  tree or first chunk is asked of git twice.
- A head is accepted only as `checked_head` would accept it: a `session.json` that is a
  JSON object of a known format whose `id` is the session's (else `why`, one line).
- The first prompt is the catalog's (`catalog.first_prompt` over the transcript's
  first `FIRST_LINES`, read as `layout.iter_records` reads them: `records_in`); where
  it cannot be read here (an older format's head, a transcript that does not read, a
  first chunk over `CHUNK_BYTES`) it is None, and the listing reads that session
  itself, as it reads any session it has no row for.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from dulwich.errors import ObjectFormatException
from dulwich.objects import Tree

from gitsessions.store import chunks, transport
from gitsessions.store.catalog import FIRST_LINES, first_prompt
from gitsessions.store.errors import StoreCorrupt, StoreError
from gitsessions.store.formats import FORMAT, check_header
from gitsessions.store.layout import records_in
from gitsessions.store.tracking import Git
from gitsessions.values.ids import short

BATCH = 2000  # sessions read together: their headers and transcripts' tops in one go
RUN_BYTES = 16 << 20  # objects read by one `cat-file` at most (sized first)
CHUNK_BYTES = 1 << 20  # a larger first chunk is left to the listing (its own bounds)
LEVELS = 8  # tree levels read at most (16 ** 8 chunks: far beyond any transcript)


@dataclass
class Arrival:
    """A session's head as a pull found it: its header (None when refused, and `why`),
    and its first prompt (None when not read here)."""

    id: str
    commit: bytes
    header: dict[str, Any] | None
    why: str | None = None
    prompt: str | None = None
    top: Tree | None = None  # its transcript's top tree, read (this build's format only)


@dataclass
class Reads:
    """What a batch read of its transcripts, shared by the first prompts and search's
    fill (`arrival_texts`), so neither reads a tree or a first chunk the other did:
    each tree read (None: one that does not read), and of each chunk holding a first
    prompt's lines, those lines (None: one not read here)."""

    trees: dict[bytes, Tree | None] = field(default_factory=dict)
    firsts: dict[bytes, bytes | None] = field(default_factory=dict)


Texts = Callable[[list["Arrival"], Reads], object]  # a batch's texts read further (search)


class _Lacking(Exception):
    """A tree not read yet (the next round reads it)."""

    def __init__(self, sha: bytes) -> None:
        self.sha = sha


def read(
    git: Git, heads: dict[str, bytes], env: transport.Env, texts: Texts | None = None
) -> Iterator[list[Arrival]]:
    """Each of `heads` (`{id: commit}`) read and checked, `BATCH` at a time, in id order.
    `texts`: given each batch's accepted arrivals once their headers and transcripts'
    tops are read, and what was read (`Reads`, which it fills), before the first
    prompts are found from it (search's fill: the trees and first chunks it reads are
    not read again)."""
    order = sorted(heads)
    for start in range(0, len(order), BATCH):
        reads = Reads()
        batch = {sid: heads[sid] for sid in order[start : start + BATCH]}
        out, tops = _batch(git, batch, env, reads.trees)
        if texts is not None:
            texts([a for a in out if a.why is None], reads)
        _prompts([a for a in out if a.id in tops], tops, reads, git, env)
        yield out


def _batch(
    git: Git, heads: dict[str, bytes], env: transport.Env, trees: dict[bytes, Tree | None]
) -> tuple[list[Arrival], dict[str, bytes]]:
    """The heads' headers checked and their transcripts' top trees read (into `trees`):
    (the arrivals, `{id: top tree}` of those whose first prompt is still to find)."""
    names = [sha + path for sha in heads.values() for path in (b":session.json", b":transcript")]
    found = _contents(git, names, env)
    out: list[Arrival] = []
    tops: dict[str, bytes] = {}
    for n, (sid, sha) in enumerate(heads.items()):
        arrival = _checked(sid, sha, found[2 * n])
        out.append(arrival)
        raw_top = found[2 * n + 1]
        if arrival.header is None or check_header(arrival.header, sid) != FORMAT:
            continue  # refused, or an older format's head: the listing reads it
        if _messages(arrival.header) == 0:
            arrival.prompt = ""
        elif raw_top is not None and (top := _tree(raw_top)) is not None:
            trees[top.id] = top
            tops[sid] = top.id
            arrival.top = top
    return out, tops


def _checked(sid: str, sha: bytes, raw: bytes | None) -> Arrival:
    """The head's header, or why it is refused (as `checked_head` says it)."""
    try:
        if raw is None:
            raise StoreCorrupt(f"session {sid[:8]}: session.json is missing")
        try:
            header = json.loads(raw)
        except ValueError as error:
            raise StoreCorrupt(f"session.json of {short(sid)}: {error}") from None
        if not isinstance(header, dict):
            raise StoreCorrupt(f"session {sid[:8]}: session.json is missing")
        check_header(header, sid)
        if header.get("id") != sid:
            raise StoreError(f"the remote's branch of {short(sid)} holds another session")
        return Arrival(sid, sha, header)
    except StoreError as error:
        return Arrival(sid, sha, None, str(error))


def _messages(header: dict[str, Any]) -> int:
    counts = header.get("counts")
    count = counts.get("messages", 0) if isinstance(counts, dict) else 0
    return count if isinstance(count, int) and count > 0 else 0


def _tree(raw: bytes) -> Tree | None:
    try:
        tree = Tree.from_raw_string(Tree.type_num, raw)
    except (ObjectFormatException, ValueError):
        return None
    return tree if isinstance(tree, Tree) else None


def _prompts(
    arrivals: list[Arrival], tops: dict[str, bytes], reads: Reads, git: Git, env: transport.Env
) -> None:
    """Each arrival's first prompt, its transcript's trees read a level a round and its
    first chunks in a last one, but those `reads` holds (a session whose transcript
    does not read keeps None)."""
    trees, blobs = reads.trees, reads.firsts

    def get(sha: bytes) -> Tree:
        if sha not in trees:
            raise _Lacking(sha)
        tree = trees[sha]
        if tree is None:
            raise StoreCorrupt(f"transcript tree {sha.decode()[:12]} does not read")
        return tree

    def blob(sha: bytes) -> bytes:
        data = blobs.get(sha)
        if data is None:
            raise StoreCorrupt(f"transcript chunk {sha.decode()[:12]} does not read")
        return data

    pending: list[tuple[Arrival, list[tuple[int, bytes]] | None]] = [(a, None) for a in arrivals]
    for _round in range(LEVELS + 1):
        lacking: dict[bytes, bool] = {}  # the objects to read: True for a chunk
        waiting: list[tuple[Arrival, list[tuple[int, bytes]] | None]] = []
        for arrival, found in pending:
            assert arrival.header is not None
            end = min(FIRST_LINES, _messages(arrival.header))
            try:
                if found is None:  # the chunks holding the first lines, walked once
                    found = list(chunks.covering(get, tops[arrival.id], 0, end))
                unread = [sha for _first, sha in found if sha not in blobs]
                if unread:
                    lacking.update(dict.fromkeys(unread, True))
                    waiting.append((arrival, found))
                    continue
                lines = records_in(blob, found, 0, end)
                arrival.prompt = first_prompt(record["message"] for _i, record in lines)
            except _Lacking as need:
                lacking[need.sha] = False
                waiting.append((arrival, None))
            except StoreError:
                continue  # the listing reads it, and says what is wrong
        if not waiting:
            return
        ids = sorted(lacking)
        for sha, raw in zip(ids, _contents(git, ids, env, CHUNK_BYTES), strict=True):
            if lacking[sha]:
                blobs[sha] = None if raw is None else _lines(raw, FIRST_LINES)
            else:
                trees[sha] = None if raw is None else _tree(raw)
        pending = waiting


def _contents(
    git: Git, names: list[bytes], env: transport.Env, cap: int | None = None
) -> list[bytes | None]:
    """The content of each object named, None where there is none (or, with `cap`, where
    it is larger): sized first, then read `RUN_BYTES` a process (a larger one alone), so
    what a remote sent never sits in memory whole."""
    out: list[bytes | None] = [None] * len(names)
    for run in runs(git, names, env, cap):
        for n, raw in run:
            out[n] = raw
    return out


def runs(
    git: Git, names: list[bytes], env: transport.Env, cap: int | None = None
) -> Iterator[list[tuple[int, bytes | None]]]:
    """`(index in names, content)` of the objects named, `RUN_BYTES` a run (sized first;
    a larger one alone), each run read by one `cat-file`: the caller holds one run at a
    time. One missing (or, with `cap`, larger) comes in a last run, as None."""
    chosen: list[list[int]] = [[]]
    left: list[tuple[int, bytes | None]] = []
    total = 0
    for n, size in enumerate(transport.sizes_of(git, names, env)):
        if size is None or (cap is not None and size > cap):
            left.append((n, None))
            continue
        if chosen[-1] and total + size > RUN_BYTES:
            chosen.append([])
            total = 0
        chosen[-1].append(n)
        total += size
    for run in chosen:
        if run:
            found = transport.contents_of(git, [names[n] for n in run], env)
            yield list(zip(run, found, strict=True))
    if left:
        yield left


def first_lines(data: bytes) -> bytes:
    """What a first prompt can need of a chunk (its first `FIRST_LINES` lines)."""
    return _lines(data, FIRST_LINES)


def _lines(data: bytes, count: int) -> bytes:
    """The first `count` lines of a chunk (what a first prompt can need of it)."""
    return b"\n".join(data.split(b"\n", count)[:count])
