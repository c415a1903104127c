"""The transcript as a tree of immutable chunks (format 2): each commit that adds to it
writes its new lines as one new blob named by its first message's index
(`0000001234.jsonl`), in directories of at most `FANOUT` entries, every chunk at the same
depth, each directory named by the first index under it.

Invariants: no blob is ever rewritten, so a commit's cost does not grow with the
session. Appending walks the right edge only (a new top level made when it is full, the
old top reused as it is): a commit rewrites at most `height` trees of `FANOUT` entries,
and reading message `i` descends by bisection. Format 1's flat segments are filed in
this tree when read (`upgrades`).
"""

import bisect
import re
from collections.abc import Callable, Iterator

from dulwich.objects import ObjectID, Tree

from gitsessions.store.errors import StoreCorrupt

FANOUT = 16
FILE_MODE = 0o100644
DIR_MODE = 0o040000
_CHUNK = re.compile(rb"([0-9]{10})\.jsonl")
_DIR = re.compile(rb"[0-9]{10}")

Entry = tuple[int, bytes, bool]  # (first message index, object id, is a directory)
Get = Callable[[bytes], Tree]  # reads a tree (a store's, or a draft's not yet written)


def overlay(made: dict[bytes, Tree], get: Get) -> Get:
    """Reads a tree from `made` (trees not written yet), else through `get`."""
    return lambda sha: made[sha] if sha in made else get(sha)


def chunk_name(first: int) -> bytes:
    return f"{first:010d}.jsonl".encode()


def dir_name(first: int) -> bytes:
    return f"{first:010d}".encode()


def entries(get: Get, tree_id: bytes) -> list[Entry]:
    """A transcript directory's entries in message order."""
    tree = get(tree_id)
    if not isinstance(tree, Tree):
        raise StoreCorrupt(f"transcript: {tree_id.decode()[:12]} is not a directory")
    out: list[Entry] = []
    for item in tree.items():
        if item.mode == DIR_MODE and _DIR.fullmatch(item.path):
            out.append((int(item.path), item.sha, True))
        elif (match := _CHUNK.fullmatch(item.path)) is not None:
            out.append((int(match.group(1)), item.sha, False))
        else:
            raise StoreCorrupt(f"transcript: unexpected entry {item.path!r}")
    out.sort()
    return out


def all_chunks(get: Get, tree_id: bytes) -> Iterator[tuple[int, bytes]]:
    """`(first message index, blob id)` of every chunk, in order."""
    for first, sha, is_dir in entries(get, tree_id):
        if is_dir:
            yield from all_chunks(get, sha)
        else:
            yield first, sha


def covering(get: Get, tree_id: bytes, start: int, end: int) -> Iterator[tuple[int, bytes]]:
    """The chunks that hold messages `start:end`, in order, reading only their path."""
    items = entries(get, tree_id)
    firsts = [first for first, _sha, _dir in items]
    at = max(bisect.bisect_right(firsts, start) - 1, 0)
    for first, sha, is_dir in items[at:]:
        if first >= end:
            break
        if is_dir:
            yield from covering(get, sha, start, end)
        else:
            yield first, sha


def append(get: Get, tree_id: bytes | None, first: int, blob_id: bytes) -> "list[Tree]":
    """The new trees for the transcript with one more chunk (`first`, `blob_id`); the
    last of them is the transcript's new top."""
    if tree_id is None:
        return [_tree([(first, blob_id, False)])]
    top = entries(get, tree_id)
    path = [top]  # the right edge, top first
    while path[-1] and path[-1][-1][2]:
        path.append(entries(get, path[-1][-1][1]))
    height = len(path)
    new: list[Tree] = []
    child: Entry = (first, blob_id, False)
    for _ in range(height - 1 - _deepest_with_room(path)):  # fresh directories down
        tree = _tree([child])
        new.append(tree)
        child = (first, tree.id, True)
    level = _deepest_with_room(path)
    if level < 0:  # every directory on the edge is full: a new top level
        new.append(_tree([(top[0][0], tree_id, True), child]))
        return new
    for depth in range(level, -1, -1):
        items = list(path[depth])
        if depth == level:
            items.append(child)
        else:
            items[-1] = child
        tree = _tree(items)
        new.append(tree)
        child = (items[0][0], tree.id, True)
    return new


def _deepest_with_room(path: list[list[Entry]]) -> int:
    for depth in range(len(path) - 1, -1, -1):
        if len(path[depth]) < FANOUT:
            return depth
    return -1


def build(chunks: list[tuple[int, bytes]]) -> "list[Tree]":
    """A whole tree for `chunks` (all directories full but the right edge)."""
    new: list[Tree] = []
    level: list[Entry] = [(first, sha, False) for first, sha in chunks]
    while True:
        groups = [level[i : i + FANOUT] for i in range(0, len(level), FANOUT)]
        trees = [_tree(group) for group in groups]
        new.extend(trees)
        if len(trees) == 1:
            return new
        level = [(group[0][0], tree.id, True) for group, tree in zip(groups, trees, strict=True)]


def _tree(items: list[Entry]) -> "Tree":
    tree = Tree()
    for first, sha, is_dir in items:
        if is_dir:
            tree.add(dir_name(first), DIR_MODE, ObjectID(sha))
        else:
            tree.add(chunk_name(first), FILE_MODE, ObjectID(sha))
    return tree
