"""A worktree fork's mark in its header: where its worktree is, and whether it is gone.

Read before a resumed chat's prompt, so this module imports nothing but the standard
library (`services/worktrees.py`, which makes and removes worktrees, loads the store).
"""

from collections.abc import Mapping
from pathlib import Path
from typing import Any


def mark_of(header: Mapping[str, Any]) -> dict[str, Any] | None:
    """The header's worktree mark, or None."""
    mark = header.get("worktree")
    return dict(mark) if isinstance(mark, dict) and mark.get("path") else None


def workspace_for(header: Mapping[str, Any]) -> Path | None:
    """Where a worktree fork's tools work: its recorded workspace inside the worktree
    (None: not a worktree fork)."""
    mark = mark_of(header)
    if mark is None:
        return None
    root = Path(mark["path"])
    recorded = (header.get("workspace") or {}).get("path")
    if recorded and Path(recorded).is_relative_to(root):
        return Path(recorded)
    return root


def is_gone(mark: Mapping[str, Any]) -> bool:
    return bool(mark.get("removed_at")) or not Path(mark["path"]).is_dir()
