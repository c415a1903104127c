"""Rewind a session to turn N: its chat, its code, or both; never destructive.

Invariants:
- The chat rewinds by one writer commit holding turn N's context and plan, and one
  transcript record; the transcript loses nothing; turn numbers go on.
- The code rewinds only when every workspace file is in some snapshot of the session or
  held by git (git_held.py, each named with its `git show`), else refused unless `force`
  (which snapshots first); files written from a temporary index (`read-tree`,
  `checkout-index`), HEAD, index and stash untouched.
- Nothing is committed when already at turn N (`unchanged`); `dry_run` changes nothing
  (`\\rewind N` asks with it first). All under the session's lease.
"""

import os
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gitsessions.services.code import capture, git_held, snapshots
from gitsessions.services.code.snapshots import Project, find_project, git
from gitsessions.services.sessions import points, writer
from gitsessions.services.sessions.writer import Edit
from gitsessions.store.lease import Lease
from gitsessions.store.sessions import Change, Head, SessionStore, touch
from gitsessions.values.errors import InvalidInput
from gitsessions.values.ids import short

MARK = "[rewind]"
NEAREST = 20  # the newest snapshots a refusal compares the workspace with


class RewindRefused(InvalidInput):
    """The workspace holds changes no snapshot has: rewinding its code would lose them."""


@dataclass
class Rewound:
    turn: int
    head: Head
    chat: bool
    code: bool
    context_before: int = 0
    context_after: int = 0
    files: dict[str, list[str]] = field(default_factory=dict)  # restored, added, removed
    saved: str | None = None  # the snapshot --force took first (a dry run: `unheld`)
    snapshot: str | None = None  # the code now in the workspace
    notes: list[str] = field(default_factory=list)
    root: Path | None = None  # the project's working tree, when the code was looked at
    unchanged: bool = False  # already at turn N: nothing was committed or written
    unheld: bool = False  # the workspace has changes no snapshot holds (--force saves them)
    dry_run: bool = False


def rewind(
    store: SessionStore,
    env: Mapping[str, str],
    session_id: str,
    turn: int,
    *,
    workspace: Path,
    chat: bool = True,
    code: bool | None = None,
    force: bool = False,
    lease_held: bool = False,
    dry_run: bool = False,
) -> Rewound:
    """Rewind `session_id` to turn `turn`. `code=None` (the default of both): rewind the
    code when there is a snapshot to rewind to, else say so in a note. `dry_run`: what
    it would change, nothing changed."""
    if lease_held:
        return _rewind(store, env, session_id, turn, workspace, chat, code, force, dry_run)
    with Lease(store.home, session_id):
        return _rewind(store, env, session_id, turn, workspace, chat, code, force, dry_run)


def _rewind(
    store: SessionStore,
    env: Mapping[str, str],
    session_id: str,
    turn: int,
    workspace: Path,
    chat: bool,
    code: bool | None,
    force: bool,
    dry_run: bool,
) -> Rewound:
    head = store.head(session_id)
    target = points.turn_commit(store, head, turn)
    result = Rewound(turn, head, chat, False, dry_run=dry_run)
    snap = points.snapshot_at(store, head, target)
    project = find_project(workspace, env)
    apply: Callable[[], None] | None = None
    if code is not False:
        reason = None
        if project is None:
            reason = f"{workspace} is not in a git repository"
        elif snap is None:
            reason = f"turn {turn} has no code snapshot"
        if reason is not None:
            if code:
                raise InvalidInput(f"cannot rewind the code: {reason}; nothing was changed")
            result.notes.append(f"note: the code stays as it is: {reason}")
        else:
            assert project is not None and snap is not None
            apply = _rewind_code(store, env, head, project, snap, force, result)
    target_head = store.head_at(session_id, target)
    context = store.read(target_head, "context") if chat else None
    plan = store.read(target_head, "plan") if chat else None
    result.context_before = head.counts.get("context_messages", 0)
    result.context_after = len(context) if context is not None else result.context_before
    what = " and ".join(w for w, on in (("chat", chat), ("code", result.code)) if on)
    if not what:
        raise InvalidInput("nothing to rewind: give --chat, --code or both")
    same_chat = not chat or (
        context == store.read(head, "context") and plan == store.read(head, "plan")
    )
    same_code = not result.code or not any(result.files.values())
    if same_chat and same_code:
        result.unchanged = True
        return result
    if dry_run:
        return result
    if apply is not None:
        apply()
    note = (
        f"{MARK} the {what} went back to turn {turn}"
        + (f" (code snapshot {result.snapshot[:12]})" if result.snapshot else "")
        + "; every later message stays in this transcript"
    )

    def edit(current: Head) -> Edit:
        return Edit(
            Change(
                header=touch(current.header),
                context=context,
                plan=plan,
                append=[{"role": "system", "content": note}],
            ),
            "rewind",
            f"rewind: to turn {turn} ({what})",
            {"Rewind-To": turn, "Code-Snapshot": result.snapshot},
        )

    result.head = writer.update(
        store, session_id, edit, operation="rewind", lease_held=True, turn=turn
    ).head
    return result


def _rewind_code(
    store: SessionStore,
    env: Mapping[str, str],
    head: Head,
    project: Project,
    snap: str,
    force: bool,
    result: Rewound,
) -> Callable[[], None]:
    """What rewinding the code changes, in `result` (refused when changes no snapshot
    holds would be lost, unless `force`); returns what applies it (the save first)."""
    result.root = project.root
    target_tree = snapshots.tree_of(project, env, snap)
    captured = capture.capture(project, env)
    in_git, result.unheld = check_held(store, env, head, project, captured, force)
    changes = tree_changes(project, env, captured.tree, target_tree)
    result.files = {
        "restored": [p for s, p in changes if s in ("M", "T")],
        "added": [p for s, p in changes if s == "A"],
        "removed": [p for s, p in changes if s == "D"],
    }
    result.code = True
    result.snapshot = snap
    overwritten = {p for _s, p in changes}
    result.notes.extend(f"note: {h.hint()}" for h in in_git if h.path in overwritten)

    def apply() -> None:
        if result.unheld:
            saved = snapshots.save_before(project, env, head.id, captured, "before rewind")
            result.saved = saved.commit
        apply_changes(project, env, target_tree, changes)

    return apply


def check_held(
    store: SessionStore,
    env: Mapping[str, str],
    head: Head,
    project: Project,
    captured: snapshots.Captured,
    force: bool,
) -> tuple[list[git_held.Held], bool]:
    """Whether the workspace (`captured`) has changes no snapshot of the session and no
    commit of the project holds (refused with `RewindRefused`, unless `force`), and the
    changed files git holds."""
    recorded = points.all_snapshots(store, head)
    known = snapshots.trees_of(project, env, recorded)
    if captured.tree in known:
        return [], False
    changed = _unsaved(project, env, recorded[:NEAREST], captured.tree)
    in_git = git_held.held_by_git(project, env, captured.tree, captured.head, changed)
    changed = [p for p in changed if p not in {h.path for h in in_git}]
    unheld = bool(changed) or not in_git
    if unheld and not force:
        more = f" and {len(changed) - 5} more" if len(changed) > 5 else ""
        shown = ", ".join(changed[:5]) + more
        raise RewindRefused(
            f"the workspace has changes no snapshot of {short(head.id)} holds "
            f"({shown or 'files'}); nothing was changed. --force snapshots them first"
        )
    return in_git, unheld


def _unsaved(project: Project, env: Mapping[str, str], recorded: list[str], tree: str) -> list[str]:
    """The paths of `tree` that differ from the nearest of the `recorded` snapshots
    (the fewest paths apart): what a rewind would lose."""
    nearest: list[str] | None = None
    for against in [*snapshots.trees_of(project, env, recorded)] or [_empty_tree(project, env)]:
        changed = [p for _s, p in tree_changes(project, env, against, tree)]
        if nearest is None or len(changed) < len(nearest):
            nearest = changed
    return nearest or []


def _empty_tree(project: Project, env: Mapping[str, str]) -> str:
    done = git(project.root, env, "hash-object", "-t", "tree", "--stdin", input=b"")
    return snapshots.out(done)


def tree_changes(project: Project, env: Mapping[str, str], a: str, b: str) -> list[tuple[str, str]]:
    """`(status, path)` of what differs from tree `a` to tree `b` (A, M, T, D)."""
    done = git(project.root, env, "diff-tree", "-r", "-z", "--no-renames", "--name-status", a, b)
    parts = done.stdout.split(b"\0")
    pairs: list[tuple[str, str]] = []
    for status, path in zip(parts[0::2], parts[1::2], strict=False):
        if status:
            pairs.append((status.decode()[:1], os.fsdecode(path)))
    return pairs


def apply_changes(
    project: Project, env: Mapping[str, str], tree: str, changes: list[tuple[str, str]]
) -> None:
    """Make the workspace's files those of `tree` for `changes` (from `_diff`)."""
    root = project.root
    for status, path in changes:
        if status == "D":
            target = root / path
            if target.is_symlink() or target.is_file():
                target.unlink()
            _prune_dirs(root, target.parent)
    wanted = [os.fsencode(p) for s, p in changes if s != "D"]
    if not wanted:
        return
    with tempfile.TemporaryDirectory(prefix="gitsessions-rewind-") as scratch:
        extra: dict[str, Any] = {"GIT_INDEX_FILE": str(Path(scratch) / "index")}
        git(root, env, "read-tree", tree, extra=extra)
        payload = b"".join(p + b"\0" for p in wanted)
        git(root, env, "checkout-index", "-f", "-z", "--stdin", input=payload, extra=extra)


def _prune_dirs(root: Path, directory: Path) -> None:
    while directory != root and directory.is_relative_to(root):
        try:
            directory.rmdir()
        except OSError:
            return
        directory = directory.parent
