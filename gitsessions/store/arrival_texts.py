"""What a pull reads of the transcripts of sessions new here for the search index: each
transcript's chunks (its trees read a level a round) and the chunks' records, by stock
git in batches (`arrivals.runs`), for `SearchIndex.fill`.

Invariants:
- Reads only, by `cat-file`: a batch of sessions costs a process per tree level and a
  process per `arrivals.RUN_BYTES` of chunks, never a process or a lookup per session;
  a tree or chunk shared by sessions (forks, copies) is read once.
- Memory: a batch's trees are held, chunks one run at a time (each at most
  `arrivals.CHUNK_BYTES`; a larger one comes as None and its sessions are left to the
  search's own refresh).
- A transcript whose trees do not read as `chunks.entries` reads them is None: the
  search reads that session itself, and says what is wrong.
"""

from __future__ import annotations

from collections.abc import Iterator

from dulwich.objects import Tree

from gitsessions.store import chunks, transport
from gitsessions.store.arrivals import CHUNK_BYTES, LEVELS, _tree, first_lines, runs
from gitsessions.store.errors import StoreError
from gitsessions.store.layout import Record, decode_lines
from gitsessions.store.tracking import Git

Segments = list[tuple[int, bytes]]  # (first message index, chunk id), in order


def segments(
    git: Git, tops: dict[str, Tree], env: transport.Env, trees: dict[bytes, Tree | None]
) -> dict[str, Segments | None]:
    """Each session's transcript chunks from its top tree (`tops`), as `chunks.all_chunks`
    lists them; None for one whose trees do not read. `trees`: those already read (a
    batch's, `arrivals.Reads`), to which it adds those it reads."""
    trees.update({top.id: top for top in tops.values()})

    def get(sha: bytes) -> Tree:
        tree = trees.get(sha)
        if tree is None:
            raise StoreError(f"transcript tree {sha.decode()[:12]} does not read")
        return tree

    frontier = [t for t in trees.values() if t is not None]  # then each round's new ones
    for _level in range(LEVELS + 1):  # read every tree below those held, a level a round
        lacking: set[bytes] = set()
        for tree in frontier:
            try:
                for _first, sha, is_dir in chunks.entries(get, tree.id):
                    if is_dir and sha not in trees:
                        lacking.add(sha)
            except StoreError:
                continue  # its sessions are None below
        if not lacking:
            break
        ids = sorted(lacking)
        frontier = []
        for n, raw in (pair for run in runs(git, ids, env, CHUNK_BYTES) for pair in run):
            trees[ids[n]] = read = None if raw is None else _tree(raw)
            if read is not None:
                frontier.append(read)
    out: dict[str, Segments | None] = {}
    for sid, top in tops.items():
        try:
            out[sid] = list(chunks.all_chunks(get, top.id))
        except StoreError:
            out[sid] = None
    return out


def records(
    git: Git,
    ids: list[bytes],
    env: transport.Env,
    firsts: dict[bytes, bytes | None],
    keep: set[bytes],
) -> Iterator[list[tuple[bytes, list[Record] | None]]]:
    """The records of each chunk of `ids`, a run (`arrivals.RUN_BYTES`) at a time; None
    for one missing, larger than `CHUNK_BYTES` or not reading. Of each chunk in `keep`
    (one holding a first prompt's lines), those lines go into `firsts` as it is read
    (`arrivals.Reads`: the first prompts do not read it again)."""
    for run in runs(git, ids, env, CHUNK_BYTES):
        out: list[tuple[bytes, list[Record] | None]] = []
        for n, raw in run:
            if ids[n] in keep:
                firsts[ids[n]] = None if raw is None else first_lines(raw)
            try:
                found = None if raw is None else decode_lines(raw, "transcript chunk")
            except StoreError:
                found = None
            out.append((ids[n], found))
        yield out
