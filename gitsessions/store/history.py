"""Session history as a sync reads it: whether the store has a commit, ancestry
(`relation`, `merge_base`), and the tombstone commit that carries deleted ids.

Invariants:
- Read only, except `tombstone_commit`, which writes its objects (the caller names the
  commit by a ref under the store's lock). A walk follows every parent (a merge
  commit's second parent is a fork's line), breadth-first, so it costs the distance
  between two commits, not a whole history (`relation`).
- A tombstone commit's `deleted` file lists 32-hex session ids, one a line, sorted;
  anything else in it is ignored when read (`tombstone_ids`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from dulwich.objects import Blob, Commit, ObjectID, Tree

from gitsessions.store.repo import GitStore
from gitsessions.store.tracking import Git

AUTHOR = b"gitsessions <gitsessions@localhost>"


def has(git: Git, sha: bytes) -> bool:
    return git.has(sha)


def ancestors(git: Git, sha: bytes, stop: set[bytes] | None = None) -> Iterator[bytes]:
    """`sha` and every commit it descends from, nearest first (breadth-first); a commit
    in `stop` is yielded but not walked past."""
    seen: set[bytes] = set()
    frontier = [sha]
    while frontier:
        following: list[bytes] = []
        for current in frontier:
            if current in seen:
                continue
            seen.add(current)
            yield current
            if stop is not None and current in stop:
                continue
            obj = git.get(current)
            if isinstance(obj, Commit):
                following.extend(obj.parents)
        frontier = following


def is_ancestor(git: Git, older: bytes, newer: bytes) -> bool:
    return any(sha == older for sha in ancestors(git, newer))


def relation(git: Git, mine: bytes, theirs: bytes) -> str:
    """`behind` when `mine` is an ancestor of `theirs`, `ahead` when `theirs` is one of
    `mine`, else `diverged`. Both histories are walked a commit at a time in turn, so
    the answer costs the distance between the two, not a whole history."""
    walks = [ancestors(git, theirs), ancestors(git, mine)]
    targets, answers = [mine, theirs], ["behind", "ahead"]
    while walks:
        for n in range(len(walks) - 1, -1, -1):
            sha = next(walks[n], None)
            if sha is None:
                del walks[n], targets[n], answers[n]
            elif sha == targets[n]:
                return answers[n]
    return "diverged"


def merge_base(git: Git, one: bytes, other: bytes) -> bytes | None:
    """The nearest commit both descend from (breadth-first from `other`)."""
    mine = set(ancestors(git, one))
    return next((sha for sha in ancestors(git, other) if sha in mine), None)


def tombstone_ids(git: Git, commit_id: bytes) -> set[str]:
    """The deleted session ids a tombstone commit lists (its `deleted` file)."""
    commit = git.get(commit_id)
    if not isinstance(commit, Commit):
        return set()
    tree = git.get(commit.tree)
    if not isinstance(tree, Tree) or b"deleted" not in tree:
        return set()
    text = git.blob(tree[b"deleted"][1]).decode("ascii", "replace")
    return {line for line in text.split() if re.fullmatch(r"[0-9a-f]{32}", line)}


def tombstone_commit(git: GitStore, ids: set[str], parents: list[bytes], when: int) -> bytes:
    """A commit whose `deleted` file lists `ids` (sorted), on top of `parents`; its
    objects are written (the caller holds `git.locked()` and names it by a ref)."""
    blob = Blob.from_string("".join(f"{i}\n" for i in sorted(ids)).encode())
    tree = Tree()
    tree.add(b"deleted", 0o100644, blob.id)
    commit = own_commit(tree.id, parents, f"tombstones: {len(ids)} deleted sessions", when)
    git.add_objects([blob, tree, commit])
    return commit.id


def own_commit(tree: bytes, parents: list[bytes], subject: str, when: int) -> Commit:
    """A commit of gitsessions' own (a tombstone list, a set-aside session), not of a
    session: `AUTHOR`, dated `when` in UTC; its objects are the caller's to write."""
    commit = Commit()
    commit.tree = tree
    commit.parents = [ObjectID(p) for p in parents]
    commit.author = commit.committer = AUTHOR
    commit.author_time = commit.commit_time = when
    commit.author_timezone = commit.commit_timezone = 0
    commit.encoding = b"UTF-8"
    commit.message = f"{subject}\n".encode()
    return commit
