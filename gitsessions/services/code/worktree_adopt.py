"""A worktree fork made on another machine, made here: by `worktree restore` in a clone of
its project, and by a pull that brings its code (`adopt_pulled`).

Invariants:
- Nothing of the pulled mark is used, its path never touched: the worktree is made under
  this home, of the current clone (the project by identity), on `gitsessions/<id8>` made
  at the fork's newest code snapshot (checked to be a commit here).
- Recorded (`worktree_mark.remember`) before git makes it, forgotten if git or the commit
  fails.
- A pull makes only the current project's forks it brought code for; one this home has a
  record of is never made again.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from gitsessions.services.code.project_id import recorded, same_project
from gitsessions.services.code.snapshots import SnapshotError, find_project, git
from gitsessions.services.code.workspace import describe, project_of
from gitsessions.services.code.worktree_mark import check, forget, is_recorded, mark_of, remember
from gitsessions.services.code.worktrees import (
    WORKTREES_DIR,
    WorktreeError,
    add_worktree,
    branch_base,
    branch_name,
    clear_unfinished,
    code_of,
    main_root,
    newest_here,
)
from gitsessions.services.code.worktrees import (
    restore as restore_own,
)
from gitsessions.services.sessions import writer
from gitsessions.services.sessions.writer import Edit
from gitsessions.store.errors import SessionNotFound
from gitsessions.store.here import remember_session
from gitsessions.store.sessions import Change, Head, SessionStore, touch
from gitsessions.values.errors import InvalidInput
from gitsessions.values.ids import short


@dataclass(frozen=True)
class Adopted:
    """A worktree made here: where, and the turn whose code it holds (None: unknown)."""

    session: str
    path: Path
    turn: int | None
    said: str


def restore(store: SessionStore, env: Mapping[str, str], session_id: str, here: Path) -> str:
    """`worktree restore`: the session's own worktree added again, or, for a worktree
    fork made on another machine, made here from the clone at `here`."""
    head = store.head(session_id)
    if check(store.home, head.id, head.header, None).refused:
        return adopt(store, env, head, here).said
    return restore_own(store, env, session_id)


def adopt(store: SessionStore, env: Mapping[str, str], head: Head, here: Path) -> Adopted:
    """The worktree of `head`, a fork made on another machine, made here from the clone
    at `here`; raises WorktreeError when `here` is not its project or lacks its code."""
    root, identity = project_of(here, env)
    if root is None or not same_project(identity, recorded(head.header)):
        raise WorktreeError(
            f"this home did not make session {short(head.id)}'s worktree (it was made on "
            "another machine); run `gitsessions worktree restore` in a clone of its project "
            "to make it here"
        )
    project = find_project(root, env)
    newest = newest_here(store, env, root, head) if project is not None else None
    if project is None or newest is None:
        raise WorktreeError(
            f"the code of session {short(head.id)}'s worktree is not in this clone; "
            "`gitsessions pull --code` brings it"
        )
    base, turn = newest
    repo = main_root(project, env)
    path = store.home / WORKTREES_DIR / f"{repo.name}-{short(head.id)}"
    clear_unfinished(repo, env, path)
    if path.exists():
        raise WorktreeError(f"{path} is there already; nothing was changed")
    branch = branch_name(head.id)
    exists = git(repo, env, "rev-parse", "-q", "--verify", f"refs/heads/{branch}",
                 check=False).returncode == 0  # fmt: skip
    mark = {"path": str(path), "branch": branch, "base": base, "repo": str(repo),
            "removed_at": None}  # fmt: skip
    remember(store.home, head.id, mark)
    # the user took it up here: `--continue` may pick it (store/here.py)
    remember_session(store.home, head.id, lambda: store.ids().keys())
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        if exists:
            add_worktree(store.home, repo, env, path, branch)
        else:
            start = branch_base(project, env, base, f"session {short(head.id)}")
            add_worktree(store.home, repo, env, path, start, branch)
    except BaseException:
        forget(store.home, head.id)
        raise

    def edit(current: Head) -> Edit | None:
        header = touch(current.header, worktree=mark, workspace=describe(path, env))
        return Edit(Change(header=header), "worktree-restore", f"worktree: made here {path.name}")

    try:
        writer.update(store, head.id, edit, operation="worktree-restore")
    except BaseException:
        git(repo, env, "worktree", "remove", "--force", str(path), check=False)
        forget(store.home, head.id)
        raise
    made = "on its branch" if exists else f"at the code of {code_of(turn)} (snapshot {base[:12]})"
    said = f"made worktree {path} on branch {branch} ({made}); it was made on another machine"
    return Adopted(head.id, path, turn if not exists else None, said)


def unfinished(store: SessionStore, head: Head) -> Path | None:
    """The worktree this home recorded for the session when it is not there while the
    header still names another home's (an adopt killed before its session commit)."""
    mark = check(store.home, head.id, head.header, None).mark
    said = mark_of(head.header)
    if mark is None or said is None or said["path"] == mark["path"]:
        return None
    return None if Path(mark["path"]).exists() else Path(mark["path"])


def adopt_pulled(
    store: SessionStore, env: Mapping[str, str], ids: list[str], here: Path
) -> tuple[list[Adopted], list[tuple[str, str]]]:
    """The worktrees of the worktree forks among `ids` (those a pull brought code for, or
    changed) made here, when they are of the project of the clone at `here` and this home
    has no record of their worktree; and, for each that could not be made, its id and
    why."""
    root, identity = project_of(here, env)
    made: list[Adopted] = []
    failed: list[tuple[str, str]] = []
    for session_id in dict.fromkeys(ids):
        try:
            head = store.head(session_id)
        except SessionNotFound:
            continue
        said = mark_of(head.header)
        if said is None or root is None or not same_project(identity, recorded(head.header)):
            continue
        try:
            if not is_recorded(store.home, session_id):
                made.append(adopt(store, env, head, root))
            elif (left := unfinished(store, head)) is not None:
                restore_own(store, env, session_id)
                made.append(Adopted(session_id, left, None, ""))
        except (WorktreeError, InvalidInput, SnapshotError) as error:
            failed.append((session_id, str(error)))
    return made, failed
