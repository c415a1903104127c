"""A session tree being edited (see `layout` for the tree): the files of a base tree,
set or appended to, and the new objects that make the result. Every entry of the base
tree is carried as it is (the transcript, `files/`) unless set or appended to here.

Invariant: nothing is written here; `SessionStore` writes `new_objects` (blobs and trees
before the root tree, the root last) and only then makes a commit name them.
"""

from collections.abc import Mapping, Sequence

from dulwich.objects import Blob, ObjectID, ShaFile, Tree

from gitsessions.store import chunks, files
from gitsessions.store.layout import (
    CHUNK_LINES,
    DIR_MODE,
    FILE_MODE,
    TRANSCRIPT,
    Record,
    encode_lines,
)
from gitsessions.store.repo import GitStore


class TreeDraft:
    """A session tree being edited: read files from a base tree, set or append, finish."""

    def __init__(self, git: GitStore, base_tree: bytes | None) -> None:
        self.git = git
        self.root = Tree()
        self.transcript: bytes | None = None
        self.new_objects: list[ShaFile] = []
        self._trees: dict[bytes, Tree] = {}  # transcript trees made here, not yet written
        self._get = chunks.overlay(self._trees, git.tree)
        if base_tree is not None:
            for item in git.tree(base_tree).items():
                self.root.add(item.path, item.mode, item.sha)
            if TRANSCRIPT in self.root:
                self.transcript = self.root[TRANSCRIPT][1]

    def set(self, name: str, data: bytes) -> None:
        blob = Blob.from_string(data)
        self.new_objects.append(blob)
        self.root.add(name.encode(), FILE_MODE, blob.id)

    def add_files(self, new: Mapping[str, bytes]) -> None:
        """`new` (`files/<sha256>.<ext>` -> bytes, each checked: `files.check`) added
        to the tree's `files/`."""
        self.new_objects += files.added(self.root, self.git.tree, new)

    def append_transcript(self, records: Sequence[Record], first: int) -> None:
        """New chunks holding `records` (the first of them message `first`): one, or
        one per `CHUNK_LINES` for a long batch such as an import."""
        for at in range(0, len(records), CHUNK_LINES):
            blob = Blob.from_string(encode_lines(records[at : at + CHUNK_LINES]))
            trees = chunks.append(self._get, self.transcript, first + at, blob.id)
            self.new_objects.append(blob)
            self.add_trees(trees)

    def add_trees(self, trees: list[Tree]) -> None:
        """New transcript trees (the last, if any, the transcript's new top)."""
        self.new_objects += trees
        self._trees.update((tree.id, tree) for tree in trees)
        self.transcript = trees[-1].id if trees else self.transcript

    def finish(self) -> bytes:
        """Add the root tree to `new_objects`; returns its id."""
        if self.transcript is not None:
            self.root.add(TRANSCRIPT, DIR_MODE, ObjectID(self.transcript))
        self.new_objects.append(self.root)
        return self.root.id
