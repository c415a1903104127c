"""Worktree forks: a chat fork together with a git worktree of its parent's project.

Invariants:
- A stock `git worktree` under `<home>/worktrees/`, on a new branch `gitsessions/<id8>`
  at the fork point's snapshot: one commit on the snapshot's HEAD holding the
  uncommitted work (or that HEAD), so merging back brings only the work.
- The header's `worktree` mark is local (`values.records.LOCAL_ONLY_FIELDS`: no fork,
  export or import carries it), recorded by this home (`worktree_mark.remember`); every
  use goes through `worktree_mark.check`.
- Git is changed first and undone when the session commit (through the writer) fails.
- `remove` refuses uncommitted or untracked changes unless `force`, which snapshots them
  first.
"""

import contextlib
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitsessions.services.code import snapshots, snapshotter
from gitsessions.services.code.restore import restore_command
from gitsessions.services.code.snapshots import (
    IDENTITY,
    Project,
    SnapshotError,
    find_project,
    git,
    out,
)
from gitsessions.services.code.workspace import describe
from gitsessions.services.code.worktree_add import add_with_branch
from gitsessions.services.code.worktree_mark import Checked, check, forget, remember
from gitsessions.services.hooks.hooks import NO_HOOKS, Hooks
from gitsessions.services.sessions import points, writer
from gitsessions.services.sessions.manage import fork_title
from gitsessions.services.sessions.writer import Edit
from gitsessions.store.catalog import Catalog
from gitsessions.store.sessions import Change, Head, SessionStore, touch
from gitsessions.values.clock import now_iso
from gitsessions.values.errors import GitsessionsError, InvalidInput
from gitsessions.values.ids import check_title, new_id, short

BRANCH_PREFIX = "gitsessions/"
WORKTREES_DIR = "worktrees"


class WorktreeError(GitsessionsError):
    """A worktree cannot be made, removed or restored as asked."""


@dataclass(frozen=True)
class Forked:
    head: Head
    worktree: dict[str, Any]


def branch_name(session_id: str) -> str:
    return BRANCH_PREFIX + short(session_id)


def main_root(project: Project, env: Mapping[str, str]) -> Path:
    """The main working tree of the repository `project` belongs to."""
    common = out(git(project.root, env, "rev-parse", "--path-format=absolute", "--git-common-dir"))
    common_path = Path(common)
    return common_path.parent if common_path.name == ".git" else project.root


def _project_of(header: Mapping[str, Any], env: Mapping[str, str]) -> tuple[Project, Path]:
    """The parent's project (its worktree when it is a worktree fork) and the workspace's
    place in it (a subdirectory, or `.`)."""
    workspace = header.get("workspace") or {}
    where = workspace.get("repo_root") or workspace.get("path")
    project = find_project(Path(where), env) if where and Path(where).is_dir() else None
    if project is None:
        raise WorktreeError(
            f"session's workspace {where or '(none)'} is not a git repository here; "
            "there is no code to fork"
        )
    relative = Path(".")
    if workspace.get("path") and workspace.get("repo_root"):
        with contextlib.suppress(ValueError):
            relative = Path(workspace["path"]).relative_to(workspace["repo_root"])
    return project, relative


def branch_base(project: Project, env: Mapping[str, str], snap: str, label: str) -> str:
    """The commit the fork's branch starts at: the snapshot's HEAD when its tree is that
    HEAD's, else a commit of the snapshot's tree on that HEAD."""
    tree = snapshots.tree_of(project, env, snap)
    parents = out(git(project.root, env, "rev-parse", snap + "^@")).split()
    head = parents[0] if parents and parents[0] != snap else None
    if head is not None:
        head_tree = out(git(project.root, env, "rev-parse", head + "^{tree}"))
        # a snapshot's first parent is the HEAD it was taken on; the second, older snapshots
        is_snapshot_parent = len(parents) == 1 and _is_snapshot(project, env, head)
        if head_tree == tree and not is_snapshot_parent:
            return head
        if is_snapshot_parent:
            head = None
    args = ["commit-tree", tree] + (["-p", head] if head else [])
    message = f"gitsessions: uncommitted work of {label}\n\nCode-Snapshot: {snap}\n"
    return out(git(project.root, env, *args, input=message.encode(), extra=IDENTITY))


def _is_snapshot(project: Project, env: Mapping[str, str], commit: str) -> bool:
    message = out(git(project.root, env, "log", "-1", "--format=%s", commit))
    return message.startswith("gitsessions snapshot:")


def fork(
    store: SessionStore,
    env: Mapping[str, str],
    session_id: str,
    *,
    at: str | None = None,
    title: str | None = None,
    hooks: Hooks = NO_HOOKS,
) -> Forked:
    """Fork `session_id` at `at` (None: its head; `turn:N`; a commit) with a worktree."""
    if title is not None:
        title = check_title(title)
    head = store.head(session_id)
    point = points.resolve(store, head, at)
    source = store.head_at(session_id, point) if point != head.commit else head
    project, relative = _project_of(source.header, env)
    snap = _fork_snapshot(store, env, head, point, at, project)
    fork_id = new_id()
    label = f"session {short(session_id)}" + (f" at {at}" if at else "")
    repo = main_root(project, env)
    path = store.home / WORKTREES_DIR / f"{repo.name}-{short(fork_id)}"
    branch = branch_name(fork_id)
    base_commit = branch_base(project, env, snap, label)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    mark = {
        "path": str(path),
        "branch": branch,
        "base": snap,
        "repo": str(repo),
        "removed_at": None,
    }
    _add_worktree(store, env, project, fork_id, mark, base_commit)
    workspace_path = path / relative
    updates = {
        "worktree": mark,
        "workspace": describe(workspace_path if workspace_path.is_dir() else path, env),
    }
    try:
        new = writer.audited(
            store,
            "fork",
            session_id,
            lambda: store.fork(
                source,
                fork_id,
                title=title
                if title is not None
                else fork_title(source.header.get("title") or source.header.get("summary") or ""),
                created_at=now_iso(),
                header_updates=updates,
                trailers={"Code-Snapshot": snap, "Worktree-Branch": branch},
            ),
            fork=fork_id,
            worktree=True,
        )
    except BaseException:
        git(project.root, env, "worktree", "remove", "--force", str(path), check=False)
        git(project.root, env, "branch", "-D", branch, check=False)
        forget(store.home, fork_id)
        raise
    hooks.run(
        "post-fork",
        new.id,
        new.commit.decode(),
        parent_id=session_id,
        fork_point=new.header.get("fork_point"),
        worktree=mark,
    )
    return Forked(new, mark)


def _fork_snapshot(
    store: SessionStore,
    env: Mapping[str, str],
    head: Head,
    point: bytes,
    at: str | None,
    project: Project,
) -> str:
    """The code snapshot the fork's worktree starts from: the one recorded at `point`;
    at the head with none recorded, one taken of the workspace now."""
    snap = points.snapshot_at(store, head, point)
    if snap is not None:
        return snap
    if at is not None:
        raise WorktreeError(
            f"{at} of session {short(head.id)} has no code snapshot (snapshots were "
            "off, or its workspace was not a git repository)"
        )
    taken = snapshotter.take(
        project, env, head.id, f"gitsessions snapshot: session {short(head.id)} fork"
    )
    return taken.commit


def _add_worktree(
    store: SessionStore,
    env: Mapping[str, str],
    project: Project,
    fork_id: str,
    mark: dict[str, Any],
    base_commit: str,
) -> None:
    """`git worktree add` of the fork's branch at `mark`'s path; the mark is recorded
    first, so a crash leaves at most a record no session names (forgotten on failure)."""
    remember(store.home, fork_id, mark)
    try:
        branch, path = mark["branch"], mark["path"]
        add_worktree(store.home, project.root, env, Path(path), base_commit, branch)
    except BaseException:
        forget(store.home, fork_id)
        raise


def add_worktree(
    home: Path,
    repo: Path,
    env: Mapping[str, str],
    path: Path,
    start: str,
    new_branch: str | None = None,
) -> None:
    """`git worktree add -q [-b NEW_BRANCH] PATH START` in `repo` (a restore clears what
    a killed one left at `path` first: `clear_unfinished`; a fork's path is new; the lock
    of NEW_BRANCH a killed add of this `home` left: worktree_add.py)."""
    if new_branch:
        add_with_branch(home, repo, env, path, start, new_branch)
    else:
        git(repo, env, "worktree", "add", "-q", str(path), start)


def clear_unfinished(repo: Path, env: Mapping[str, str], path: Path) -> None:
    """Clear what a killed `git worktree add` of `path` left: git's entry still locked as
    "initializing", or a folder at `path` git does not list as a worktree. The folder is
    set aside next to it (`<name>.interrupted`, never deleted), the entry unlocked and
    pruned, so the add can be made again."""
    listing = git(repo, env, "worktree", "list", "--porcelain", check=False)
    if listing.returncode != 0 and _drop_initializing(repo, env, path):
        listing = git(repo, env, "worktree", "list", "--porcelain", check=False)
    if listing.returncode != 0:  # nothing is moved on a listing git cannot give
        git(repo, env, "worktree", "list", "--porcelain")
    listed = out(listing)
    entry: list[str] = []
    for block in listed.split("\n\n"):
        lines = block.splitlines()
        named = lines[0].removeprefix("worktree ") if lines else ""
        if named and os.path.realpath(named) == os.path.realpath(path):
            entry = lines
    initializing = any(line.startswith("locked initializ") for line in entry)
    if not initializing and (entry or not path.exists()):
        return
    if initializing:
        git(repo, env, "worktree", "unlock", str(path), check=False)
    if path.exists():
        aside = path.with_name(path.name + ".interrupted")
        n = 1
        while aside.exists():
            n += 1
            aside = path.with_name(f"{path.name}.interrupted-{n}")
        path.rename(aside)
    git(repo, env, "worktree", "prune", check=False)


def _drop_initializing(repo: Path, env: Mapping[str, str], path: Path) -> bool:
    """Remove git's entry for the worktree at `path` when it is one a killed `git worktree
    add` left so unfinished that git cannot read it (its `commondir` empty): an entry
    `worktrees/<name of path>` still locked as "initializing". Whether one was."""
    common = git(repo, env, "rev-parse", "--path-format=absolute", "--git-common-dir",
                 check=False)  # fmt: skip
    if common.returncode != 0:
        return False
    entry = Path(out(common)) / "worktrees" / path.name
    try:
        locked = (entry / "locked").read_text(errors="replace")
    except OSError:
        return False
    if not locked.startswith("initializ"):
        return False
    shutil.rmtree(entry, ignore_errors=True)
    return not entry.exists()


def state_of(checked: Checked, env: Mapping[str, str]) -> str:
    """`clean`, `dirty` (uncommitted or untracked changes) or `missing` (also: gone from
    git's list of worktrees)."""
    if checked.mark is None or not checked.live:
        return "missing"
    done = git(Path(checked.mark["path"]), env, "status", "--porcelain", check=False)
    if done.returncode != 0:
        return "missing"
    return "dirty" if done.stdout.strip() else "clean"


def listing(store: SessionStore, env: Mapping[str, str]) -> list[dict[str, Any]]:
    """Every session that has a worktree this home made: session, path, branch, state
    (a mark this home did not make is left out)."""
    rows = []
    for header in Catalog(store).headers():
        checked = check(store.home, str(header.get("id")), header, env)
        mark = checked.mark
        if mark is None:
            continue
        rows.append(
            {
                "session": header["id"],
                "title": header.get("title") or "",
                "path": mark["path"],
                "branch": mark["branch"],
                "base": mark.get("base"),
                "repo": mark.get("repo"),
                "state": state_of(checked, env),
            }
        )
    rows.sort(key=lambda r: (r["path"], r["session"]))
    return rows


def _marked(store: SessionStore, env: Mapping[str, str], session_id: str) -> Checked:
    """The session's worktree mark, refused unless this home made it for the session."""
    head = store.head(session_id)
    checked = check(store.home, head.id, head.header, env)
    if checked.refused is not None:
        raise WorktreeError(
            f"session {short(session_id)} names a worktree this home did not make "
            f"({str(head.header['worktree'].get('path'))[:200]}); nothing was changed"
        )
    if checked.mark is None:
        raise InvalidInput(
            f"session {short(session_id)} has no worktree (`gitsessions fork ID --worktree` "
            "makes one)"
        )
    return checked


def _set_mark(
    store: SessionStore, session_id: str, removed_at: str | None, event: str, subject: str
) -> None:
    def edit(head: Head) -> Edit | None:
        mark = check(store.home, head.id, head.header, None).mark
        if mark is None or mark.get("removed_at") == removed_at:
            return None
        mark["removed_at"] = removed_at
        return Edit(Change(header=touch(head.header, worktree=mark)), event, subject)

    writer.update(store, session_id, edit, operation=event)


def remove(store: SessionStore, env: Mapping[str, str], session_id: str, force: bool) -> str:
    """Remove the session's worktree (its branch stays); returns what happened (its last
    line, when `force` snapshotted changes, the command line that brings them back)."""
    checked = _marked(store, env, session_id)
    mark = checked.mark
    assert mark is not None
    path = Path(mark["path"])
    repo = Path(mark["repo"])
    if mark.get("removed_at") and not path.exists():
        raise InvalidInput(f"the worktree of {short(session_id)} is already removed")
    saved = ""
    if checked.live:  # git lists it as a worktree of `repo`: nothing else is removed
        state = state_of(checked, env)
        if state == "dirty":
            if not force:
                raise WorktreeError(
                    f"worktree {path} has uncommitted or untracked changes; commit them, "
                    "or --force (which snapshots them first)"
                )
            project = find_project(path, env)
            if project is not None:
                snap = snapshotter.take(
                    project,
                    env,
                    session_id,
                    f"gitsessions snapshot: session {short(session_id)} before worktree remove",
                )
                back = restore_command(path, snap.commit)
                saved = (
                    f"; its changes are kept in snapshot {snap.commit[:12]}; to get them back:"
                    f"\ngitsessions worktree restore {short(session_id)} && {back}"
                )
        git(repo, env, "worktree", "remove", "--force", str(path))
    else:
        git(repo, env, "worktree", "prune")
    _set_mark(store, session_id, now_iso(), "worktree-remove", f"worktree: removed {path.name}")
    return f"removed worktree {path} (branch {mark['branch']} kept){saved}"


def restore(store: SessionStore, env: Mapping[str, str], session_id: str) -> str:
    """Add the session's worktree, which this home made, again at its branch (at its
    base snapshot when the branch is gone)."""
    mark = _marked(store, env, session_id).mark
    assert mark is not None
    path = Path(mark["path"])
    repo = Path(mark["repo"])
    if not repo.is_dir():
        raise WorktreeError(f"the project {repo} is gone; nothing to restore the worktree from")
    clear_unfinished(repo, env, path)
    if path.is_dir() and not mark.get("removed_at"):
        raise InvalidInput(f"the worktree of {short(session_id)} is there: {path}")
    git(repo, env, "worktree", "prune")
    exists = git(repo, env, "rev-parse", "-q", "--verify", f"refs/heads/{mark['branch']}",
                 check=False).returncode == 0  # fmt: skip
    made = ""
    try:
        if exists:
            add_worktree(store.home, repo, env, path, mark["branch"])
        else:  # the branch is gone: made again at the newest code the session names
            found = newest_here(store, env, repo, store.head(session_id))
            snap = found[0] if found else mark["base"]
            at = f"the code of {code_of(found[1])}" if found else "its fork point"
            made = f" (made again at {at}, snapshot {snap[:12]})"
            project = find_project(repo, env)
            assert project is not None
            start = branch_base(project, env, snap, f"session {short(session_id)}")
            add_worktree(store.home, repo, env, path, start, mark["branch"])
    except SnapshotError as error:
        raise WorktreeError(f"cannot restore the worktree: {error}") from None
    _set_mark(store, session_id, None, "worktree-restore", f"worktree: restored {path.name}")
    return f"restored worktree {path} on branch {mark['branch']}{made}"


def newest_here(
    store: SessionStore, env: Mapping[str, str], repo: Path, head: Head
) -> tuple[str, int | None] | None:
    """The newest code snapshot `head`'s history names and its turn (None: unknown),
    when it is a commit of `repo` (a restore's or an adopt's clone); else None."""
    newest = points.newest_snapshot(store, head)
    if newest is None or not is_commit(repo, env, newest[0]):
        return None
    return newest


def code_of(turn: int | None) -> str:
    """Whose code a snapshot `newest_here` found is: `turn N`, else `its newest snapshot`."""
    return f"turn {turn}" if turn is not None else "its newest snapshot"


def is_commit(repo: Path, env: Mapping[str, str], text: str) -> bool:
    """Whether `text` is a full commit id that names a commit of the repository `repo`."""
    if len(text) not in (40, 64) or any(c not in "0123456789abcdef" for c in text):
        return False
    return git(repo, env, "cat-file", "-e", f"{text}^{{commit}}", check=False).returncode == 0
