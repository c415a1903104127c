"""A fork's code merged into a session's workspace (`merge`, `\\merge`): git's three-way
merge of the fork's changes since its fork point.

Invariants:
- Three states, each a commit in the project: the base (the code snapshot the fork
  started from: its worktree's `base`, else the snapshot at its fork point), the fork's
  code now (a snapshot of its worktree, taken now, else its newest snapshot) and the
  workspace merged into, recorded as a snapshot of that session before anything is
  written (so both sides stay in git whatever happens). Stock `git merge-tree
  --write-tree` merges them (on two throwaway commits whose parent is the base: git
  2.38's merge-tree takes no explicit base).
- Never over work no snapshot holds: the workspace is checked as `rewind` checks it
  (`rewind.check_held`): refused, or with `force` snapshotted first (that snapshot is
  the one recorded above; `Merged.saved` names it for `snapshot restore`).
- The merged tree's files are written as rewind writes them (a temporary index,
  `checkout-index`); a conflicted file gets git's conflict markers, and the real
  index gets its three stages (`update-index --index-info`), as `git merge` leaves a
  conflict: `git status` lists it, `git checkout --ours/--theirs` and `git add` finish
  it. HEAD, the stash and every other index entry are untouched.
- The workspace after the merge is recorded as a snapshot whose subject names the fork
  (`merge of <id>`), so blame credits the fork's lines to the fork's turns.
- Nothing here commits to the session store, prints or reads the environment.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from gitsessions.services.code import capture, snapshots, snapshotter
from gitsessions.services.code.projectgit import OBJECT_ID
from gitsessions.services.code.rewind import apply_changes, check_held, tree_changes
from gitsessions.services.code.snapshots import IDENTITY, Project, find_project, git, out
from gitsessions.services.code.worktree_mark import check
from gitsessions.services.sessions import points
from gitsessions.store.sessions import Head, SessionStore
from gitsessions.values.errors import InvalidInput
from gitsessions.values.ids import short
from gitsessions.values.plural import plural


class CodeNotMerged(InvalidInput):
    """The fork's code cannot be merged (no snapshot, no repository); nothing changed."""


@dataclass
class Merged:
    """What merging the code did."""

    root: Path
    base: str  # the snapshot the fork started from
    theirs: str  # the fork's code (a snapshot)
    ours: str  # the workspace before the merge (a snapshot of the session merged into)
    result: str | None = None  # the workspace after it (a snapshot), None when unchanged
    files: list[tuple[str, str]] = field(default_factory=list)  # (A/M/D/T, path) written
    conflicts: list[str] = field(default_factory=list)
    saved: str | None = None  # `ours` when --force took it for changes no snapshot held
    notes: list[str] = field(default_factory=list)

    def said(self) -> str:
        """One line for the data block and the command's output."""
        if not self.files:
            return "the fork's code changes were already in the workspace"
        text = f"{plural(len(self.files), 'file')} merged into the workspace"
        if self.conflicts:
            text += f", {plural(len(self.conflicts), 'conflict')}: " + ", ".join(
                self.conflicts[:10]
            )
        return text


def fork_base(store: SessionStore, fork: Head) -> str | None:
    """The code snapshot the fork started from."""
    mark = fork.header.get("worktree")
    if isinstance(mark, dict) and isinstance(mark.get("base"), str) and mark["base"]:
        return str(mark["base"])
    point = fork.header.get("fork_point")
    if not isinstance(point, str) or not point:
        return None
    return points.snapshot_at(store, fork, point.encode())


def fork_code(store: SessionStore, env: Mapping[str, str], fork: Head, into: str) -> str | None:
    """The fork's code now: its live worktree snapshotted now, else its newest snapshot."""
    checked = check(store.home, fork.id, fork.header, env)
    if checked.mark is not None and checked.live:
        project = find_project(Path(checked.mark["path"]), env)
        if project is not None:
            message = f"{snapshots.SNAPSHOT_SUBJECT}session {short(fork.id)} before merge into "
            return snapshotter.take(project, env, fork.id, message + short(into)).commit
    newest = points.newest_snapshot(store, fork)
    return newest[0] if newest else None


def merge_code(
    store: SessionStore,
    env: Mapping[str, str],
    into: Head,
    fork: Head,
    workspace: Path,
    force: bool = False,
) -> Merged:
    """Merge the fork's code changes since its fork point into `workspace` (the code of
    session `into`); see the module's invariants. The caller holds `into`'s lease."""
    project = find_project(workspace, env)
    if project is None:
        raise CodeNotMerged(f"cannot merge the code: {workspace} is not in a git repository")
    base = fork_base(store, fork)
    theirs = fork_code(store, env, fork, into.id)
    if base is None or theirs is None:
        raise CodeNotMerged(
            f"cannot merge the code: fork {short(fork.id)} has no code snapshot "
            f"{'at its fork point' if base is None else 'of its own'}; nothing was changed "
            "(--chat merges the conversation alone)"
        )
    if not all(OBJECT_ID.fullmatch(c) for c in (base, theirs)):  # a header or trailer's claim
        raise CodeNotMerged(f"cannot merge the code: fork {short(fork.id)} names no snapshot id")
    trees = [snapshots.tree_of(project, env, c) for c in (base, theirs)]
    captured = capture.capture(project, env)
    in_git, unheld = check_held(store, env, into, project, captured, force)
    ours = snapshots.save_before(project, env, into.id, captured, f"before merge of {fork.id}")
    done = Merged(project.root, base, theirs, ours.commit, saved=ours.commit if unheld else None)
    if trees[0] == trees[1]:
        done.notes.append(f"note: fork {short(fork.id)} changed no code since its fork point")
        return done
    tree, stages = three_way(project, env, base, captured.tree, trees[1], fork.id, into.id)
    done.files = tree_changes(project, env, captured.tree, tree)
    if not done.files:
        return done
    written = {p for _s, p in done.files}
    over = sorted(written & set(captured.left_out))
    if over:  # the snapshot left them out: the workspace's version is in no commit
        raise CodeNotMerged(
            f"cannot merge the code: the merge would write {', '.join(over[:5])}, over the "
            "snapshot size limit ([snapshots] max_file_bytes) here, so in no snapshot; "
            "nothing was changed"
        )
    done.notes.extend(f"note: {h.hint()}" for h in in_git if h.path in written)
    apply_changes(project, env, tree, done.files)
    if stages:
        done.conflicts = sorted({path for path, _line in stages})
        _leave_conflicts(project, env, stages)
    message = (
        f"{snapshots.SNAPSHOT_SUBJECT}session {short(into.id)} {snapshots.MERGE_SUBJECT}{fork.id}"
    )
    done.result = snapshotter.take(project, env, into.id, message).commit
    return done


def three_way(
    project: Project,
    env: Mapping[str, str],
    base: str,
    ours_tree: str,
    theirs_tree: str,
    fork_id: str,
    into_id: str,
) -> tuple[str, list[tuple[str, bytes]]]:
    """The merged tree of `ours_tree` and `theirs_tree` over the snapshot `base` (git's
    `merge-tree`), and each conflicted path's stage lines (`mode oid stage\\tpath`)."""
    sides = []
    for tree, what in ((ours_tree, f"session {into_id}"), (theirs_tree, f"fork {fork_id}")):
        body = f"gitsessions merge: {what}\n".encode()
        sides.append(out(git(project.root, env, "commit-tree", tree, "-p", base, input=body,
                             extra=IDENTITY)))  # fmt: skip
    done = git(project.root, env, "merge-tree", "--write-tree", "--no-messages", "-z", *sides,
               check=False)  # fmt: skip
    if done.returncode not in (0, 1):
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        reason = said[0] if said else f"exit status {done.returncode}"
        raise CodeNotMerged(f"git merge-tree failed (git 2.38 or newer merges): {reason}")
    parts = done.stdout.split(b"\0")
    tree = parts[0].decode()
    stages: list[tuple[str, bytes]] = []
    for entry in parts[1:]:
        if not entry:
            break
        info, _tab, path = entry.partition(b"\t")
        stages.append((path.decode("utf-8", "surrogateescape"), info + b"\t" + path))
    return tree, stages


def _leave_conflicts(
    project: Project, env: Mapping[str, str], stages: list[tuple[str, bytes]]
) -> None:
    """The conflicted paths' stages in the real index, as `git merge` leaves them."""
    zero = b"0 " + b"0" * 40 + b"\t"
    paths = list(dict.fromkeys(line.partition(b"\t")[2] for _p, line in stages))
    payload = b"".join(zero + p + b"\0" for p in paths) + b"".join(
        line + b"\0" for _p, line in stages
    )
    git(project.root, env, "update-index", "-z", "--index-info", input=payload)


def finish_hint(done: Merged) -> list[str]:
    """How to finish a merge with conflicts (the chat and the command say it)."""
    if not done.conflicts:
        return []
    shown = " ".join(done.conflicts[:5]) + (" ..." if len(done.conflicts) > 5 else "")
    return [
        f"conflicts left as git leaves them in {done.root}: {shown}",
        "  edit each file's <<<<<<< ======= >>>>>>> sections (or take one side: "
        "`git checkout --ours FILE` / `--theirs FILE`), then `git add FILE`",
        f"  both sides stay in git: this session's code before the merge is snapshot "
        f"{done.ours[:12]}, the fork's {done.theirs[:12]}",
    ]
