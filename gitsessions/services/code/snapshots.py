"""Code snapshots as commits in the project: what the rest of code/ stands on (the project,
`find_project`; stock git in it, `git`; the snapshot commits and the session's ref).

Invariants:
- A snapshot writes only objects and `refs/gitsessions/snapshots/<session id>`: never the
  user's HEAD, index, stash or files.
- A snapshot commit's one parent is the project's HEAD; each later one adds a *keep*
  commit to the ref (first parent the snapshot, second the ref's old value), so every
  snapshot stays reachable and retention drops some by rebuilding keep commits alone: a
  snapshot's id, which `Code-Snapshot` trailers name, never changes. (Old chains, second
  parent the previous snapshot, are still read.)
- The ref moves by compare-and-swap (`update-ref NEW OLD`); an unchanged tree and HEAD
  reuse the previous snapshot. Git through projectgit.py.
"""

import subprocess
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from gitsessions.services.code.projectgit import run
from gitsessions.services.code.workspace import no_repository
from gitsessions.values.errors import GitsessionsError
from gitsessions.values.ids import short

REF_PREFIX = "refs/gitsessions/snapshots/"
KEEP_SUBJECT = "gitsessions keep: session "
SNAPSHOT_SUBJECT = "gitsessions snapshot: "
MERGE_SUBJECT = (
    "merge of "  # a merge's result: "<SNAPSHOT_SUBJECT>session X merge of ID" (blame reads it)
)
TIME_TRAILER = "Snapshot-Time"  # when it was taken, in ns: orders a second's snapshots
IDENTITY = {
    "GIT_AUTHOR_NAME": "gitsessions",
    "GIT_AUTHOR_EMAIL": "gitsessions@localhost",
    "GIT_COMMITTER_NAME": "gitsessions",
    "GIT_COMMITTER_EMAIL": "gitsessions@localhost",
}
TIMEOUT = 120
ZERO = "0" * 40


class SnapshotError(GitsessionsError):
    """Stock git failed on the project while taking or reading a snapshot."""


def snapshot_ref(session_id: str) -> str:
    return REF_PREFIX + session_id


def git(
    cwd: Path,
    env: Mapping[str, str],
    *args: str,
    input: bytes | None = None,
    extra: Mapping[str, str] | None = None,
    check: bool = True,
    pass_fds: tuple[int, ...] = (),
) -> subprocess.CompletedProcess[bytes]:
    """Stock git in `cwd`, its command-running config off (projectgit.py);
    `SnapshotError` naming the command when it fails (`check`: `failure`). `pass_fds`:
    files git inherits (worktree_add.py's `flock`)."""
    try:
        # a Ctrl-C at the terminal is the agent's to handle, not a snapshot's to die of
        done = run(cwd, {**env, **(extra or {})}, *args, timeout=TIMEOUT, input=input,
                   text=False, start_new_session=True, pass_fds=pass_fds)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as error:
        raise SnapshotError(f"git {args[0]} failed in {cwd}: {error}") from None
    if check and done.returncode != 0:
        raise failure(cwd, args[0], done)
    return done


def failure(cwd: Path, command: str, done: subprocess.CompletedProcess[bytes]) -> SnapshotError:
    """The one line of a git command that failed: git's own error line (a hint may
    follow it, as after a lock that is left)."""
    said = done.stderr.decode("utf-8", "replace").strip().splitlines()
    errors = [line for line in said if line.startswith(("fatal: ", "error: "))]
    reason = errors[0] if errors else said[-1] if said else "?"
    return SnapshotError(f"git {command} failed in {cwd}: {reason}")


def out(done: subprocess.CompletedProcess[bytes]) -> str:
    return done.stdout.decode("utf-8", "surrogateescape").strip()


@dataclass(frozen=True)
class Project:
    """A git working tree: its root, where its (real) index lives, and its repository's
    common directory (where refs shared by every worktree live)."""

    root: Path
    index: Path
    common: Path | None = None


def find_project(path: Path, env: Mapping[str, str]) -> Project | None:
    """The working tree holding `path`, or None (not in a repository, or a bare one)."""
    if no_repository(path, env):
        return None
    try:
        done = git(path, env, "rev-parse", "--show-toplevel", "--git-path", "index",
                   "--git-common-dir", check=False)  # fmt: skip
    except SnapshotError:  # no git at all
        return None
    lines = out(done).splitlines()
    if done.returncode != 0 or len(lines) != 3 or not lines[0]:
        return None
    root = Path(lines[0])
    index, common = Path(lines[1]), Path(lines[2])
    return Project(
        root,
        index if index.is_absolute() else (path / index).resolve(),
        common if common.is_absolute() else (path / common).resolve(),
    )


@dataclass(frozen=True)
class Captured:
    """One workspace state: its tree, the HEAD it was on, files left out for size."""

    tree: str
    head: str | None
    left_out: tuple[str, ...] = ()


@dataclass(frozen=True)
class Previous:
    """A recorded snapshot: its commit, tree and first parent (the HEAD it was on), and
    what the session's ref names (the snapshot itself, or a keep commit on it)."""

    commit: str
    tree: str
    head: str | None
    tip: str = ""


@dataclass(frozen=True)
class Snapshot:
    """A snapshot commit (maybe reused) and what it holds."""

    commit: str
    tree: str
    head: str | None
    left_out: tuple[str, ...] = ()
    new: bool = True


def newest(project: Project, env: Mapping[str, str], session_id: str) -> Previous | None:
    """The session's newest snapshot, or None."""
    done = git(
        project.root,
        env,
        "for-each-ref",
        "--format=%(objectname) %(tree) %(parent)%09%(subject)",
        snapshot_ref(session_id),
    )
    line, _tab, subject = out(done).partition("\t")
    fields = line.split()
    if len(fields) < 2:
        return None
    if not subject.startswith(KEEP_SUBJECT) or len(fields) < 3:
        return Previous(fields[0], fields[1], fields[2] if len(fields) > 2 else None, fields[0])
    commit = fields[2]  # a keep commit: its first parent is the newest snapshot
    body = git(project.root, env, "cat-file", "commit", commit).stdout.split(b"\n\n", 1)[0]
    heads = [h[7:].decode() for h in body.split(b"\n") if h.startswith(b"parent ")]
    return Previous(commit, fields[1], heads[0] if heads else None, fields[0])


def keep_commit(
    project: Project, env: Mapping[str, str], session_id: str, snapshot: str, tree: str,
    below: str | None,
) -> str:  # fmt: skip
    """A keep commit holding `snapshot` (first parent) on `below` (second), or the
    snapshot itself when nothing is below it."""
    if below is None:
        return snapshot
    body = (
        f"{KEEP_SUBJECT}{session_id[:8]}\n\nHolds the session's code snapshots: the first "
        "parent is the newest, the second holds the ones before."
    )
    args = ["commit-tree", tree, "-p", snapshot, "-p", below]
    return out(git(project.root, env, *args, input=body.encode(), extra=IDENTITY))


def save_before(
    project: Project, env: Mapping[str, str], session_id: str, captured: Captured, what: str
) -> Snapshot:
    """Snapshot the workspace as found, before `what` writes over it ("before rewind")."""
    message = f"{SNAPSHOT_SUBJECT}session {short(session_id)} {what}"
    return record(project, env, session_id, captured, message, newest(project, env, session_id))


def record(
    project: Project,
    env: Mapping[str, str],
    session_id: str,
    captured: Captured,
    message: str,
    previous: Previous | None,
) -> Snapshot:
    """Commit `captured` as the session's newest snapshot (or reuse `previous` when its
    tree and HEAD are the same). `SnapshotError` when the ref moved meanwhile."""
    if previous is not None and previous.tree == captured.tree:
        on_head = previous.head == captured.head or (
            captured.head is None and previous.head is not None  # unborn: parent is a snapshot
        )
        if on_head:
            return Snapshot(previous.commit, captured.tree, captured.head, captured.left_out, False)
    args = ["commit-tree", captured.tree] + (["-p", captured.head] if captured.head else [])
    body = message
    if captured.left_out:
        body += "\n\nLeft out (over the size limit):\n" + "\n".join(captured.left_out)
    body += f"\n\n{TIME_TRAILER}: {time.time_ns()}\n"
    commit = out(git(project.root, env, *args, input=body.encode(), extra=IDENTITY))
    old = (previous.tip or previous.commit) if previous else ZERO
    below = old if previous else None
    tip = keep_commit(project, env, session_id, commit, captured.tree, below)
    git(project.root, env, "update-ref", snapshot_ref(session_id), tip, old)
    return Snapshot(commit, captured.tree, captured.head, captured.left_out, True)


def tree_of(project: Project, env: Mapping[str, str], commit: str) -> str:
    """The tree of a snapshot commit; `SnapshotError` when the project lacks it."""
    done = git(project.root, env, "rev-parse", "-q", "--verify", commit + "^{tree}", check=False)
    if done.returncode != 0:
        raise SnapshotError(
            f"snapshot {commit[:12]} is not in the project {project.root} (pruned by "
            "`gitsessions snapshot prune`, or not pulled: `pull --code`)"
        )
    return out(done)


def trees_of(project: Project, env: Mapping[str, str], commits: Iterable[str]) -> set[str]:
    """The trees of those snapshot commits the project has (one git call)."""
    wanted = [c for c in commits if c]
    if not wanted:
        return set()
    payload = "".join(f"{c}^{{tree}}\n" for c in wanted).encode()
    done = git(project.root, env, "cat-file", "--batch-check=%(objectname) %(objecttype)",
               input=payload)  # fmt: skip
    return {line.split()[0] for line in out(done).splitlines() if line.endswith(" tree")}
