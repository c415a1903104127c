"""Git objects as the store reads them: raw `(type number, content)` pairs, which
`repo.GitStore.raw` reads through dulwich's object store, parsed into the small
read-only values below (walks read thousands of trees: building dulwich's `Tree` and
`Commit` for each costs more than these few lines).

Invariants:
- Parsing only: nothing here reads a file, writes, locks or deletes; every object the
  store reads comes through dulwich (`GitStore`).
- Content that does not parse raises `StoreCorrupt` naming `gitsessions doctor`.
"""

from typing import TYPE_CHECKING

from gitsessions.store.errors import StoreCorrupt

if TYPE_CHECKING:  # a type only: a Protocol class costs start-up time
    from typing import Protocol

    class RawSource(Protocol):
        def raw(self, sha: bytes) -> tuple[int, bytes]: ...


COMMIT, TREE, BLOB, TAG = 1, 2, 3, 4


class TreeItem:
    """One entry of a tree (what dulwich's `TreeEntry` offers: path, mode, hex sha)."""

    __slots__ = ("mode", "path", "sha")

    def __init__(self, path: bytes, mode: int, sha: bytes) -> None:
        self.path, self.mode, self.sha = path, mode, sha


class ReadTree:
    """A tree's entries: `name in tree`, `tree[name]` -> `(mode, hex sha)`, `items()`."""

    __slots__ = ("_entries",)

    def __init__(self, entries: dict[bytes, tuple[int, bytes]]) -> None:
        self._entries = entries

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __getitem__(self, name: bytes) -> tuple[int, bytes]:
        return self._entries[name]

    def items(self) -> list[TreeItem]:
        return [TreeItem(name, mode, sha) for name, (mode, sha) in self._entries.items()]


class ReadCommit:
    """What the store reads of a commit (hex ids; the message as stored)."""

    __slots__ = ("commit_time", "message", "parents", "tree")

    def __init__(self, tree: bytes, parents: list[bytes], message: bytes, when: int) -> None:
        self.tree, self.parents, self.message, self.commit_time = tree, parents, message, when


def parse_tree(raw: bytes) -> ReadTree:
    entries: dict[bytes, tuple[int, bytes]] = {}
    at, end = 0, len(raw)
    try:
        while at < end:
            space = raw.index(b" ", at)
            nul = raw.index(b"\0", space)
            if nul + 21 > end:
                raise ValueError("a tree entry is cut short")
            entries[raw[space + 1 : nul]] = (
                int(raw[at:space], 8),
                raw[nul + 1 : nul + 21].hex().encode(),
            )
            at = nul + 21
    except ValueError as error:
        raise StoreCorrupt(f"a tree cannot be read ({error}); run `gitsessions doctor`") from None
    return ReadTree(entries)


def parse_commit(raw: bytes) -> ReadCommit:
    head, _sep, message = raw.partition(b"\n\n")
    tree = b""
    parents: list[bytes] = []
    when = 0
    for line in head.split(b"\n"):
        if line.startswith(b"tree "):
            tree = line[5:]
        elif line.startswith(b"parent "):
            parents.append(line[7:])
        elif line.startswith(b"committer "):
            fields = line.rsplit(b" ", 2)
            when = int(fields[1]) if len(fields) == 3 and fields[1].isdigit() else 0
    if len(tree) != 40:
        raise StoreCorrupt("a commit names no tree; run `gitsessions doctor`")
    return ReadCommit(tree, parents, message, when)


def read_tree(source: "RawSource", sha: bytes) -> ReadTree:
    kind, raw = source.raw(sha)
    if kind != TREE:
        raise StoreCorrupt(f"object {sha.decode()} is not a tree")
    return parse_tree(raw)


def read_blob(source: "RawSource", sha: bytes) -> bytes:
    kind, raw = source.raw(sha)
    if kind != BLOB:
        raise StoreCorrupt(f"object {sha.decode()} is not a blob")
    return raw
