"""`snapshot restore SNAPSHOT`: a code snapshot back in the workspace (what `rewind --force`
and `worktree remove --force` saved; as `git stash apply`).

Invariants:
- Only a snapshot commit some snapshot ref of the project reaches, named by hex only.
- The files become the snapshot's exactly (ignored files untouched), written by stock
  git from a temporary index; HEAD, index and stash untouched.
- Refused over changes no snapshot and no commit holds (git_held.py) unless `force`,
  which first records them as a new snapshot and says how to restore it.
"""

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from gitsessions.services.code import capture, git_held, snapshots
from gitsessions.services.code.rewind import RewindRefused, apply_changes, tree_changes
from gitsessions.services.code.snapshots import REF_PREFIX, Project, find_project, git, out
from gitsessions.values.errors import BadUsage, InvalidInput

_HEX = re.compile(r"[0-9a-fA-F]{4,64}")


def restore_command(root: Path, snapshot: str) -> str:
    """The command line that puts `snapshot` back into the working tree at `root`."""
    return f"gitsessions snapshot restore {snapshot[:12]} --workspace {shlex.quote(str(root))}"


@dataclass
class Restored:
    snapshot: str  # the whole commit id
    root: Path
    files: dict[str, list[str]] = field(default_factory=dict)  # restored, added, removed
    saved: str | None = None  # the snapshot `force` took first
    unchanged: bool = False  # the workspace already held it
    notes: list[str] = field(default_factory=list)  # where git holds what is overwritten


def restore(
    env: Mapping[str, str], workspace: Path, snapshot: str, force: bool = False
) -> Restored:
    """Make the files of the project holding `workspace` those of `snapshot`."""
    project = find_project(workspace, env)
    if project is None:
        raise InvalidInput(f"{workspace} is not in a git repository; nothing was changed")
    commit = _snapshot_commit(project, env, snapshot)
    target = snapshots.tree_of(project, env, commit)
    result = Restored(commit, project.root)
    captured = capture.capture(project, env)
    if captured.tree == target:
        result.unchanged = True
        return result
    changes = tree_changes(project, env, captured.tree, target)
    in_git: list[git_held.Held] = []
    if captured.tree not in _held_trees(project, env, captured.head):
        session = _owner(project, env, commit)
        newest = snapshots.newest(project, env, session)
        # what is unsaved: what differs from the newest snapshot, less what git holds
        changed = [p for _s, p in tree_changes(
            project, env, newest.tree if newest else target, captured.tree
        )]  # fmt: skip
        in_git = git_held.held_by_git(project, env, captured.tree, captured.head, changed)
        unsaved = [p for p in changed if p not in {h.path for h in in_git}]
        if unsaved or not in_git:
            if not force:
                shown = ", ".join(unsaved[:5])
                more = f" and {len(unsaved) - 5} more" if len(unsaved) > 5 else ""
                raise RewindRefused(
                    f"the workspace has changes no snapshot holds ({shown or 'files'}{more}); "
                    "nothing was changed. --force snapshots them first"
                )
            saved = snapshots.record(
                project,
                env,
                session,
                captured,
                f"gitsessions snapshot: before restoring {commit[:12]}",
                newest,
            )
            result.saved = saved.commit
    overwritten = {p for _s, p in changes}
    result.notes = [f"note: {h.hint()}" for h in in_git if h.path in overwritten]
    apply_changes(project, env, target, changes)
    result.files = {
        "restored": [p for s, p in changes if s in ("M", "T")],
        "added": [p for s, p in changes if s == "A"],
        "removed": [p for s, p in changes if s == "D"],
    }
    return result


def _snapshot_commit(project: Project, env: Mapping[str, str], snapshot: str) -> str:
    """The whole id of `snapshot` (a hex prefix), refused unless a snapshot ref reaches it."""
    if not _HEX.fullmatch(snapshot):
        raise BadUsage(f"a snapshot is named by its hex id (4 to 64 digits), got {snapshot!r}")
    done = git(project.root, env, "rev-parse", "-q", "--verify", f"{snapshot}^{{commit}}",
               check=False)  # fmt: skip
    if done.returncode != 0:
        raise InvalidInput(f"snapshot {snapshot} is not in the project {project.root}")
    commit = out(done)
    subject = out(git(project.root, env, "log", "-1", "--format=%s", commit))
    if not subject.startswith("gitsessions snapshot:"):  # a snapshot ref's HEAD parents
        raise InvalidInput(
            f"{commit[:12]} is not a gitsessions snapshot of {project.root}; nothing was changed"
        )
    _owner(project, env, commit)
    return commit


def _owner(project: Project, env: Mapping[str, str], commit: str) -> str:
    """The session whose snapshot ref reaches `commit` (the first named)."""
    done = git(project.root, env, "for-each-ref", "--format=%(refname)", "--contains", commit,
               REF_PREFIX)  # fmt: skip
    refs = [r for r in out(done).splitlines() if r.startswith(REF_PREFIX)]
    if not refs:
        raise InvalidInput(
            f"{commit[:12]} is not a gitsessions snapshot of {project.root}; nothing was changed"
        )
    return refs[0][len(REF_PREFIX) :]


def _held_trees(project: Project, env: Mapping[str, str], head: str | None) -> set[str]:
    """The trees nothing is lost by leaving: HEAD's and every snapshot's (the walk stops
    at the branches and tags, so a project's own history is not read)."""
    done = git(project.root, env, "log", "--format=%T", f"--glob={REF_PREFIX}*", "--not",
               "--branches", "--tags")  # fmt: skip
    trees = set(out(done).split())
    if head:
        trees.add(snapshots.tree_of(project, env, head))
    return trees
