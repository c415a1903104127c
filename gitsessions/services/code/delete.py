"""A session's delete, with what it left in the user's project.

Invariant: the store's side goes first (`sessions/manage.delete`: the branch, cache
rows, chat history lines, lease file, one audit line, the post-delete hook); then, with
git's environment, the session's code snapshots in the project it worked in (its ref
pruned: deleted, or rebuilt over the snapshots a fork of it still names, retention.py),
and this home's record of its worktree mark. A worktree fork's worktree is the user's code:
it is kept, and named.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitsessions.services.code import retention, snapshots, worktree_mark
from gitsessions.services.hooks.hooks import NO_HOOKS, Hooks
from gitsessions.services.sessions import manage
from gitsessions.store.sessions import SessionStore


@dataclass(frozen=True)
class Deleted:
    """What went with a deleted session outside the store: whether its code snapshots'
    ref in the project was deleted, and its worktree mark (the worktree is the user's
    code: it is kept)."""

    snapshots: bool
    worktree: dict[str, Any] | None


def delete(
    store: SessionStore,
    session_id: str,
    hooks: Hooks = NO_HOOKS,
    env: Mapping[str, str] | None = None,
) -> Deleted:
    """Delete the session; with `env` (git's environment), also its snapshot ref in
    the project it worked in."""
    head = manage.delete(store, session_id, hooks)
    header = head.header
    root = (header.get("workspace") or {}).get("repo_root")
    # its ref, and a deleted parent's, which may have held only what this one named
    refs = [session_id, *([header["parent_id"]] if header.get("parent_id") else [])]
    forgot = (
        env is not None
        and isinstance(root, str)
        and root != ""
        and _free(store, Path(root), env, refs)
    )
    # named only when this home made it; its record goes with the session
    mark = worktree_mark.check(store.home, head.id, header, None).mark
    worktree_mark.forget(store.home, head.id)
    return Deleted(forgot, mark if mark is not None and not mark.get("removed_at") else None)


def _free(store: SessionStore, root: Path, env: Mapping[str, str], refs: list[str]) -> bool:
    """Prune those snapshot refs: of a deleted session, what no remaining session names
    goes (a live parent's keeps what it saved). Whether any of it went."""
    project = snapshots.find_project(root, env) if root.is_dir() else None
    if project is None:
        return False
    try:
        pruned = retention.prune(store, project, env, only=refs)
    except snapshots.SnapshotError:
        return False
    return pruned.dropped_count > 0
