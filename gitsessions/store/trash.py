"""Sessions a remote's tombstone deleted here, set aside so nothing is lost: the last head
kept under `refs/gitsessions/trash/<id>` (an empty-tree commit whose parent is that
head); `undelete` brings it back as a new session, `gc` drops it after `KEEP_DAYS`.

Invariants: the trash commit and ref are written (objects first, ref by compare-and-swap)
before the branch is removed, so a crash leaves the session in both places, never
neither; trash refs are never pushed, pulled or exported.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from dulwich.objects import Commit, Tree

from gitsessions.store.errors import ConcurrentUpdate
from gitsessions.store.history import own_commit
from gitsessions.store.refpack import read_loose, read_packed
from gitsessions.store.repo import GitStore
from gitsessions.values.ids import is_session_id

TRASH = b"refs/gitsessions/trash/"
KEEP_DAYS = 30


@dataclass(frozen=True)
class SetAside:
    id: str
    ref_value: bytes  # the trash commit
    head: bytes  # the session's head when it was set aside
    when: int  # unix time it was set aside
    why: str


def ref_of(session_id: str) -> bytes:
    return TRASH + session_id.encode()


def set_aside(git: GitStore, session_id: str, head: bytes, why: str, when: int) -> bytes:
    """Write the trash commit for `head` and point the session's trash ref at it (one
    set aside before, by an older delete of the same id, is replaced); the caller
    holds the store's lock."""
    assert is_session_id(session_id)
    tree = Tree()
    commit = own_commit(tree.id, [head], f"set aside: {why}", when)
    git.add_objects([tree, commit])
    ref = ref_of(session_id)
    with git.ref_locked(ref):
        old = git.ref(ref)
        if not git.move_ref(ref, old, commit.id):
            raise ConcurrentUpdate(f"the trash ref of {session_id[:8]} changed meanwhile")
    return commit.id


def entries(git: GitStore) -> list[SetAside]:
    """What is set aside, newest first; a trash ref that names no commit of the right
    shape is skipped."""
    found: list[SetAside] = []
    packed = {n: s for n, s in read_packed(git.path / "packed-refs").items() if n.startswith(TRASH)}
    for name, sha in {**packed, **read_loose(git.path, TRASH)}.items():
        sid = name[len(TRASH) :].decode("ascii", "replace") if name.startswith(TRASH) else ""
        if not is_session_id(sid) or not git.has(sha):
            continue
        commit = git.get(sha)
        if not isinstance(commit, Commit):
            continue
        if len(commit.parents) != 1:
            continue
        why = commit.message.decode("utf-8", "replace").strip().removeprefix("set aside: ")
        found.append(SetAside(sid, sha, commit.parents[0], commit.commit_time, why))
    return sorted(found, key=lambda e: (-e.when, e.id))


def drop(git: GitStore, entry: SetAside) -> bool:
    """Remove a trash ref (compare-and-swap on the value it was read at)."""
    ref = ref_of(entry.id)
    with git.ref_locked(ref):
        won = git.move_ref(ref, entry.ref_value, None)
    git.forget_ref_lock(ref)
    return won


def expired(git: GitStore, now: float | None = None) -> list[SetAside]:
    """What was set aside more than `KEEP_DAYS` days ago."""
    limit = (time.time() if now is None else now) - KEEP_DAYS * 86400
    return [e for e in entries(git) if e.when < limit]
