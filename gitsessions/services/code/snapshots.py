"""Code snapshots: the project's exact code state at each turn, as commits in the project.

Invariants:
- A snapshot never touches the user's HEAD, index, stash or files: it works in a copy of
  the real index (`GIT_INDEX_FILE`), so git's stat cache makes an unchanged tree cheap,
  and only ever writes objects and the one ref `refs/gitsessions/snapshots/<session id>`.
- Its tree is the working tree minus ignored files: HEAD plus staged, unstaged and
  untracked-but-not-ignored files (a tracked file stays even when ignored), the same as
  `git add -A` into that copy. Of the paths `git status` reports (so the tree is walked
  once), files and symbolic links are hashed with `git hash-object -w --no-filters` and
  put in with `update-index --index-info`: the snapshot holds their bytes as they are,
  and no clean filter the project's config or attributes name ever runs; gone paths and
  nested repositories go through `update-index --add --remove`, which hashes no file.
  Files over `max_file_bytes` are left out (their index entry, if any, stays) and named.
  The mode is 100755 for a file with its owner's execute bit, else 100644 (with
  `core.fileMode` false: the index entry's mode, as `update-index` keeps it).
- A snapshot commit's only parent is the project's HEAD (as a stash's first is). The ref
  names the first snapshot itself; each later one adds a *keep* commit (subject
  `gitsessions keep: session <id8>`, the snapshot's tree): first parent the new
  snapshot, second what the ref named before. So every snapshot stays reachable and
  `git gc` keeps them, and retention (retention.py) can drop some by rebuilding the keep
  commits alone: a snapshot's id, which `Code-Snapshot` trailers name, never changes.
  (Older gitsessions chained snapshots themselves, second parent the previous one;
  such a chain is still read.) The ref moves by compare-and-swap (`update-ref NEW
  OLD`). A turn whose tree and HEAD did not change reuses the previous snapshot: no
  new commit.
- Only stock `git` is run, in the project, with its command-running config off
  (projectgit.py: fsmonitor, hooks, filters, signing); nothing here reads the
  environment or prints.
"""

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from stat import S_ISLNK, S_ISREG

from gitsessions.services.code.projectgit import filters_listed, run
from gitsessions.services.code.workspace import NO_REPOSITORY_NOTE, no_repository
from gitsessions.services.settings.config import DEFAULT_BUDGET_BYTES, DEFAULT_MAX_FILE_BYTES
from gitsessions.values.errors import GitsessionsError

REF_PREFIX = "refs/gitsessions/snapshots/"
KEEP_SUBJECT = "gitsessions keep: session "
SNAPSHOT_SUBJECT = "gitsessions snapshot: "
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
) -> subprocess.CompletedProcess[bytes]:
    """Stock git in `cwd`, its command-running config off (projectgit.py);
    `SnapshotError` naming the command when it fails (`check`)."""
    try:
        # a Ctrl-C at the terminal is the agent's to handle, not a snapshot's to die of
        done = run(cwd, {**env, **(extra or {})}, *args, timeout=TIMEOUT, input=input,
                   text=False, start_new_session=True)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as error:
        raise SnapshotError(f"git {args[0]} failed in {cwd}: {error}") from None
    if check and done.returncode != 0:
        reason = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise SnapshotError(f"git {args[0]} failed in {cwd}: {reason[-1] if reason else '?'}")
    return done


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


@dataclass(frozen=True)
class Scan:
    """What `git status` says of the working tree against the index: the HEAD commit,
    and the paths whose working-tree side differs or that are untracked."""

    head: str | None
    changed: tuple[bytes, ...]
    raw: bytes


def scan(project: Project, env: Mapping[str, str]) -> Scan:
    """One read-only `git status` (no optional locks: the user's index is not even
    refreshed)."""
    done = git(
        project.root,
        env,
        "status",
        "--porcelain=v2",
        "-z",
        "--branch",
        "--untracked-files=all",
        "--no-renames",
        "--ignore-submodules=dirty",
        extra={"GIT_OPTIONAL_LOCKS": "0"},
    )
    head: str | None = None
    changed: list[bytes] = []
    for entry in done.stdout.split(b"\0"):
        if entry.startswith(b"# branch.oid "):
            oid = entry[len(b"# branch.oid ") :].decode()
            head = oid if oid != "(initial)" else None
        elif entry.startswith(b"1 "):
            fields = entry.split(b" ", 8)
            if fields[1][1:2] != b".":
                changed.append(fields[8])
        elif entry.startswith(b"u "):
            changed.append(entry.split(b" ", 10)[10])
        elif entry.startswith(b"? "):
            changed.append(entry[2:])
    return Scan(head, tuple(changed), done.stdout)


def capture(
    project: Project,
    env: Mapping[str, str],
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    scanned: Scan | None = None,
) -> Captured:
    """The tree of the working tree as it is now (objects written, no commit, no ref):
    the changed paths go into a copy of the real index, whose tree is written."""
    scanned = scanned or scan(project, env)
    keep, left_out = _by_size(project.root, scanned.changed, max_file_bytes)
    with tempfile.TemporaryDirectory(prefix="gitsessions-snap-") as scratch:
        index = Path(scratch) / "index"
        if project.index.exists():
            shutil.copyfile(project.index, index)
        extra = {"GIT_INDEX_FILE": str(index), "GIT_OPTIONAL_LOCKS": "0"}
        env = filters_listed(project.root, env)  # one listing for the commands below
        modes = _index_modes(project.root, env, extra)
        files, others = _hashed(project.root, env, keep, Path(scratch), modes)
        if others:  # gone (removed from the index) or a nested repository (a gitlink)
            payload = b"".join(p + b"\0" for p in others)
            git(project.root, env, "update-index", "--add", "--remove", "-z", "--stdin",
                input=payload, extra=extra)  # fmt: skip
        if files:
            git(project.root, env, "update-index", "-z", "--index-info",
                input=b"".join(files), extra=extra)  # fmt: skip
        tree = out(git(project.root, env, "write-tree", extra=extra))
    return Captured(tree, scanned.head, tuple(left_out))


def _index_modes(
    root: Path, env: Mapping[str, str], extra: Mapping[str, str]
) -> dict[bytes, bytes] | None:
    """None when the execute bit on disk counts (`core.fileMode`, git's default); else
    each index entry's mode, which a changed file then keeps (as `update-index` does)."""
    done = git(root, env, "config", "--type=bool", "core.fileMode", check=False)
    if out(done) != "false":
        return None
    listed = git(root, env, "ls-files", "-s", "-z", extra=extra).stdout.split(b"\0")
    return {e.split(b"\t", 1)[1]: e.split(b" ", 1)[0] for e in listed if b"\t" in e}


def _hashed(
    root: Path,
    env: Mapping[str, str],
    paths: Iterable[bytes],
    scratch: Path,
    modes: dict[bytes, bytes] | None = None,
) -> tuple[list[bytes], list[bytes]]:
    """Blobs of the regular files and symbolic links among `paths`, written with
    `hash-object -w --no-filters` (their bytes as they are: no clean filter or other
    conversion runs), as `--index-info -z` records; and the other paths (gone, or a
    directory: a nested repository), for `update-index --add --remove`. A file's mode
    is 100755 with its owner's execute bit, else 100644; with `modes` (core.fileMode
    false) a file in the index keeps its mode there."""
    entries: list[tuple[bytes, bytes]] = []  # (mode, path)
    sources: list[bytes] = []  # what hash-object reads for each entry
    others: list[bytes] = []
    for path in paths:
        full = os.path.join(bytes(root), path)
        try:
            st = os.lstat(full)
        except OSError:
            others.append(path)
            continue
        if S_ISLNK(st.st_mode):
            target = scratch / f"link-{len(sources)}"  # the blob of a link is its target
            target.write_bytes(os.readlink(full))
            entries.append((b"120000", path))
            sources.append(os.fsencode(target))
        elif S_ISREG(st.st_mode):
            mode = b"100755" if st.st_mode & 0o100 else b"100644"
            if modes is not None:
                mode = modes.get(path, b"100644")
                mode = mode if mode in (b"100644", b"100755") else b"100644"
            entries.append((mode, path))
            sources.append(full)
        else:
            others.append(path)
    if not entries:
        return [], others
    listed = b"".join(_c_quoted(source) + b"\n" for source in sources)
    done = git(root, env, "hash-object", "-w", "--no-filters", "--stdin-paths", input=listed)
    shas = done.stdout.split()
    if len(shas) != len(entries):
        raise SnapshotError(f"git hash-object failed in {root}: {len(shas)} of {len(entries)}")
    pairs = zip(entries, shas, strict=True)
    records = [mode + b" " + sha + b"\t" + path + b"\0" for (mode, path), sha in pairs]
    return records, others


def _c_quoted(path: bytes) -> bytes:
    """A path as one line of `--stdin-paths` (git unquotes a line that starts with `"`)."""
    if b"\n" not in path and not path.startswith(b'"'):
        return path
    escaped = path.replace(b"\\", b"\\\\").replace(b'"', b'\\"').replace(b"\n", b"\\n")
    return b'"' + escaped + b'"'


def _by_size(root: Path, paths: Iterable[bytes], limit: int) -> tuple[list[bytes], list[str]]:
    keep: list[bytes] = []
    left_out: list[str] = []
    for path in paths:
        try:
            stat = os.lstat(os.path.join(bytes(root), path))
        except OSError:
            keep.append(path)  # gone: update-index --remove takes it out
            continue
        if stat.st_size > limit and not os.path.islink(os.path.join(bytes(root), path)):
            left_out.append(path.decode("utf-8", "replace"))
        else:
            keep.append(path)
    return keep, left_out


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
    commit = out(git(project.root, env, *args, input=body.encode(), extra=IDENTITY))
    old = (previous.tip or previous.commit) if previous else ZERO
    below = old if previous else None
    tip = keep_commit(project, env, session_id, commit, captured.tree, below)
    git(project.root, env, "update-ref", snapshot_ref(session_id), tip, old)
    return Snapshot(commit, captured.tree, captured.head, captured.left_out, True)


def take(
    project: Project,
    env: Mapping[str, str],
    session_id: str,
    message: str,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
) -> Snapshot:
    """Capture the working tree and record it as the session's newest snapshot."""
    previous = newest(project, env, session_id)
    captured = capture(project, env, max_file_bytes)
    return record(project, env, session_id, captured, message, previous)


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


@dataclass
class Snapshotter:
    """Takes one session's snapshots at its turns: finds the project once, says once
    when there is none, names files left out for size once per set."""

    workspace: Path
    env: Mapping[str, str]
    session_id: str
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    budget_bytes: int = DEFAULT_BUDGET_BYTES
    notes: list[str] = field(default_factory=list)
    _project: Project | None = None
    _looked: bool = False
    _said_left_out: tuple[str, ...] = ()
    last: Snapshot | None = None
    _signature: object = None
    _budget_checked: bool = False
    _since_tidy: int = 0

    def project(self) -> Project | None:
        if not self._looked:
            self._looked = True
            self._project = find_project(self.workspace, self.env)
            if self._project is None:
                self.notes.append(NO_REPOSITORY_NOTE)
        return self._project

    def __call__(self, message: str) -> str | None:
        """Take a snapshot; its commit id, or None (no repository, or git failed: one
        note says why, and the turn goes on)."""
        project = self.project()
        if project is None:
            return None
        try:
            snap = self._take(project, message)
        except SnapshotError as error:
            self.notes.append(f"note: no code snapshot this step: {error}")
            return None
        if snap.left_out and snap.left_out != self._said_left_out:
            self._said_left_out = snap.left_out
            limit = size_text(self.max_file_bytes)
            shown = ", ".join(snap.left_out[:5])
            more = f" and {len(snap.left_out) - 5} more" if len(snap.left_out) > 5 else ""
            self.notes.append(f"note: left out of the code snapshot (over {limit}): {shown}{more}")
        self.last = snap
        if snap.new:
            self._tidy(project)
        if snap.new and not self._budget_checked:
            self._budget_checked = True
            self._check_budget(project)
        return snap.commit

    def _tidy(self, project: Project) -> None:
        """Pack the snapshot refs and objects once enough are loose (footprint.py)."""
        from gitsessions.services.code.footprint import TIDY_AFTER, tidy

        self._since_tidy += 1
        try:
            if tidy(project, self.env, force=self._since_tidy >= TIDY_AFTER) is not None:
                self._since_tidy = 0
        except SnapshotError:
            pass  # a busy lock or a failing git: the next one, or `gitsessions gc`, packs

    def _check_budget(self, project: Project) -> None:
        """One warning a process when the project's snapshots pass the budget."""
        from gitsessions.services.code.retention import over_budget

        try:
            used = over_budget(project, self.env, self.budget_bytes)
        except SnapshotError:
            return
        if used is not None:
            self.notes.append(
                f"warning: code snapshots take {approx_size(used)} in {project.root}, over "
                f"the budget of {approx_size(self.budget_bytes)} ([snapshots] budget_bytes); "
                "`gitsessions snapshot prune --keep 20` keeps each session's last 20 turns"
            )

    def _take(self, project: Project, message: str) -> Snapshot:
        """A snapshot; when `git status` says what it said last time and every file it
        names has the same size, times and inode, the tree is the same: the last
        snapshot is named again after that one git call."""
        scanned = scan(project, self.env)
        signature = (scanned.raw, _stats(project.root, scanned.changed))
        last = self.last
        if last is not None and signature == self._signature:
            return Snapshot(last.commit, last.tree, last.head, last.left_out, False)
        captured = capture(project, self.env, self.max_file_bytes, scanned)
        previous = newest(project, self.env, self.session_id)
        snap = record(project, self.env, self.session_id, captured, message, previous)
        self._signature = signature
        return snap


def _stats(root: Path, paths: Iterable[bytes]) -> tuple[tuple[int, int, int, int], ...]:
    """(size, mtime ns, ctime ns, inode) of each path (zeros when it is gone)."""
    stats = []
    for path in paths:
        try:
            st = os.lstat(os.path.join(bytes(root), path))
        except OSError:
            stats.append((0, 0, 0, 0))
            continue
        stats.append((st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino))
    return tuple(stats)


def size_text(size: int) -> str:
    """`10 MiB`, `512 KiB`, `100 bytes`."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size:,} bytes"


def approx_size(size: int) -> str:
    """`1.5 GiB`, `12.0 MiB`, `300 KiB`, `100 bytes`."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size // 1024} KiB" if size >= 1024 else f"{size} bytes"
