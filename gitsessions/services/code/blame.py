"""Which conversation wrote this line: blame over the project's code snapshots.

Invariants:
- Only stock git reads and decides: the snapshots (retention.chains) are laid out as a
  history of their own, written by one `git fast-import` into a throwaway bare repository
  whose objects borrow the project's (`objects/info/alternates`), and `git blame -M` over
  that history says which snapshot each line comes from. Nothing is written to the
  project: no object, no ref.
- The history: each session's snapshots in the order its keep chain holds them. A step of
  a turn (`turn N.S`, S > 0) has one parent, the session's snapshot before it, so what the
  step changed is the turn's. Any other snapshot (the code a prompt found, `N.0`; the
  state before a rewind) is a person's: its parents are the session's previous snapshot,
  the snapshot taken just before it in the whole project (another session's work in the
  same tree), and the newest earlier snapshot of the same tree (what a rewind or a
  worktree fork starts from), so a line that came from one of those is followed there
  and only what none of them holds is the person's. The file being blamed is a last
  commit whose parents are the newest snapshot of the project and then every session's
  newest, newest first: a line no snapshot holds as it is now is a person's.
- `Blame.sessions` names the sessions whose snapshots were seen, so the caller can say
  once which of the project's sessions it could not see (snapshots pruned, or taken in
  another clone).
- Nothing here prints or reads the environment.
"""

import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from gitsessions.services.code.retention import chains
from gitsessions.services.code.snapshots import SNAPSHOT_SUBJECT, Project, git
from gitsessions.values.errors import InvalidInput

STEP = re.compile(r"session ([0-9a-f]+) turn (\d+)\.(\d+)\Z")
TIMEOUT = 300


@dataclass(frozen=True)
class Snapshot:
    """One snapshot in the blame history: whose, which turn and step (None: not a turn's
    step), its tree and commit time."""

    commit: str
    session: str
    tree: str
    time: int
    turn: int | None
    step: int | None

    @property
    def by_agent(self) -> bool:
        return self.step is not None and self.step > 0


@dataclass(frozen=True)
class Line:
    """One line of the blamed file and the snapshot step that last wrote it (None: a
    person's)."""

    number: int
    text: str
    by: Snapshot | None


@dataclass
class Blame:
    path: str
    lines: list[Line] = field(default_factory=list)
    sessions: set[str] = field(default_factory=set)
    snapshots: int = 0


def history(
    project: Project, env: Mapping[str, str], before: int | None = None
) -> list[list[Snapshot]]:
    """Each session's snapshots, oldest first (those taken after `before`, a time, left
    out)."""
    found, nodes = chains(project, env)
    lines: list[list[Snapshot]] = []
    for chain in found:
        line: list[Snapshot] = []
        for commit in reversed(chain.snapshots):
            node = nodes.get(commit)
            if node is None or (before is not None and node.time > before):
                continue
            match = STEP.search(node.subject.removeprefix(SNAPSHOT_SUBJECT))
            turn, step = (int(match[2]), int(match[3])) if match else (None, None)
            line.append(Snapshot(commit, chain.session, node.tree, node.time, turn, step))
        if line:
            lines.append(line)
    return lines


def blame(
    project: Project, env: Mapping[str, str], path: str, text: bytes, before: int | None = None
) -> Blame:
    """Who last wrote each line of `text`, the content of `path` (relative to the
    project's root, `/`-separated)."""
    return blame_files(project, env, {path: text}, before)[path]


def blame_files(
    project: Project, env: Mapping[str, str], files: Mapping[str, bytes], before: int | None
) -> dict[str, Blame]:
    """`blame` of several files (path -> content) over one history."""
    for path, text in files.items():
        if b"\0" in text[:8000]:
            raise InvalidInput(f"{path} is a binary file: nothing to blame line by line")
    lines = history(project, env, before)
    seen = {x[0].session for x in lines}
    results: dict[str, Blame] = {}
    origins: dict[str, dict[int, int]] = {path: {} for path in files}
    order: list[Snapshot] = []
    if lines and files:
        with tempfile.TemporaryDirectory(prefix="gitsessions-blame-") as scratch:
            repo = Path(scratch) / "blame.git"
            git(Path(scratch), env, "init", "--bare", "-q", str(repo))
            objects = (project.common or project.root / ".git") / "objects"
            (repo / "objects" / "info" / "alternates").write_text(f"{objects}\n")
            marks = Path(scratch) / "marks"
            same = _same_content(project, env, lines, files)
            order = _fast_import(repo, env, lines, files, marks, same)
            for path in files:
                origins[path] = _blame(repo, env, path, marks)
    by_mark = dict(enumerate(order, 1))
    for path, text in files.items():
        result = results[path] = Blame(path, sessions=seen, snapshots=sum(map(len, lines)))
        for number, line_text in enumerate(split_lines(text), 1):
            snap = by_mark.get(origins[path].get(number, 0))
            by = snap if snap is not None and snap.by_agent else None
            result.lines.append(Line(number, line_text, by))
    return results


def split_lines(text: bytes) -> list[str]:
    """The file's lines as git counts them: split at newlines only."""
    lines = text.decode("utf-8", "replace").split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


def _fast_import(
    repo: Path,
    env: Mapping[str, str],
    lines: list[list[Snapshot]],
    files: Mapping[str, bytes],
    marks_file: Path,
    same: set[Snapshot],
) -> list[Snapshot]:
    """Write the blame history (see the invariants), its last commit as `HEAD`'s
    branch, its marks to `marks_file`; the snapshots in mark order (mark 1 first)."""
    order = sorted(
        ((s.time, i, j, s) for i, line in enumerate(lines) for j, s in enumerate(line)),
        key=lambda t: (t[0], t[1], t[2]),
    )
    marks: dict[tuple[int, int], int] = {}
    newest_tree: dict[str, int] = {}
    stream: list[bytes] = []
    snapshots: list[Snapshot] = []
    for mark, (_, i, j, snap) in enumerate(order, 1):
        parents: list[int] = []
        own = marks.get((i, j - 1))
        if own is not None:
            parents.append(own)
        if not snap.by_agent or own is None:
            for extra in (mark - 1 if mark > 1 else None, newest_tree.get(snap.tree)):
                if extra is not None and extra not in parents:
                    parents.append(extra)
        marks[(i, j)] = mark
        newest_tree[snap.tree] = mark
        snapshots.append(snap)
        stream.append(_commit(mark, snap.time, parents, f'M 040000 {snap.tree} ""\n'.encode()))
    last = len(order) + 1
    heads = sorted((marks[(i, len(line) - 1)] for i, line in enumerate(lines)), reverse=True)
    alike = sorted((m for m, s in enumerate(snapshots, 1) if s in same), reverse=True)
    parents = list(dict.fromkeys([last - 1, *alike, *heads]))
    body = b"".join(
        b"M 100644 inline " + _quoted(path) + b"\ndata %d\n" % len(text) + text + b"\n"
        for path, text in files.items()
    )
    stream.append(_commit(last, order[-1][0], parents, body))
    git(repo, env, "--git-dir", str(repo), "fast-import", "--quiet", "--force",
        f"--export-marks={marks_file}", input=b"".join(stream))  # fmt: skip
    return snapshots


def _same_content(
    project: Project,
    env: Mapping[str, str],
    lines: list[list[Snapshot]],
    files: Mapping[str, bytes],
) -> set[Snapshot]:
    """Of each session, the newest snapshot holding one of `files` exactly as it is now
    (a rewind's code, not yet snapshotted again): one `cat-file --batch-check`."""
    wanted: dict[str, str] = {}
    for path, text in files.items():
        blob = git(project.root, env, "hash-object", "--stdin", input=text).stdout.strip()
        wanted[path] = blob.decode()
    queries = [(snap, path) for line in lines for snap in line for path in files]
    asked = "".join(f"{snap.tree}:{path}\n" for snap, path in queries).encode()
    done = git(project.root, env, "cat-file", "--batch-check=%(objectname)", input=asked)
    found: dict[str, Snapshot] = {}
    for (snap, path), answer in zip(queries, done.stdout.decode().splitlines(), strict=False):
        if answer == wanted[path]:
            found[snap.session] = snap  # oldest first: the newest stays
    return set(found.values())


def _commit(mark: int, time: int, parents: list[int], changes: bytes) -> bytes:
    head = b"commit refs/heads/blame\nmark :%d\n" % mark
    head += b"committer gitsessions <gitsessions@localhost> %d +0000\ndata 0\n" % time
    if parents:
        head += b"from :%d\n" % parents[0]
        head += b"".join(b"merge :%d\n" % p for p in parents[1:])
    if not parents:  # a root: the branch starts again (else its tip would be the parent)
        return b"reset refs/heads/blame\n" + head + b"deleteall\n" + changes + b"\n"
    return head + changes + b"\n"


def _quoted(path: str) -> bytes:
    """A path as fast-import reads it: C-quoted when it needs to be."""
    raw = path.encode("utf-8", "surrogateescape")
    if not re.search(rb'[\x00-\x1f"\\\x7f]', raw) and not raw.startswith(b'"'):
        return raw
    escaped = raw.replace(b"\\", b"\\\\").replace(b'"', b'\\"').replace(b"\n", b"\\n")
    return b'"' + escaped + b'"'


def _blame(repo: Path, env: Mapping[str, str], path: str, marks_file: Path) -> dict[int, int]:
    """{line number: mark of the commit it comes from} by `git blame --porcelain -M`."""
    done = git(repo, env, "--git-dir", str(repo), "blame", "--porcelain", "-M",
               "refs/heads/blame", "--", path)  # fmt: skip
    marks = {}
    for entry in marks_file.read_text().splitlines():
        mark, _, sha = entry.partition(" ")
        marks[sha] = int(mark.lstrip(":"))
    origins: dict[int, int] = {}
    for raw in done.stdout.split(b"\n"):
        if raw.startswith(b"\t") or not raw:
            continue
        parts = raw.split(b" ")
        if len(parts) >= 3 and len(parts[0]) in (40, 64) and parts[2].isdigit():
            sha = parts[0].decode()
            if sha in marks:
                origins[int(parts[2])] = marks[sha]
    return origins


def file_text(
    project: Project, env: Mapping[str, str], path: str, at: str | None
) -> tuple[bytes, int | None]:
    """The file's content (the working tree's, or at revision `at`) and, for a revision,
    its commit time (snapshots taken after it are left out)."""
    if at is None:
        try:
            return (project.root / path).read_bytes(), None
        except OSError as error:
            raise InvalidInput(f"cannot read {path}: {error.strerror or error}") from None
    commit, stamp = commit_of(project, env, at)
    return blob_at(project, env, commit, path), stamp


def relative(project: Project, where: Path) -> str:
    """`where` as a path inside the project, `/`-separated; refused outside it."""
    try:
        return where.resolve().relative_to(project.root.resolve()).as_posix()
    except ValueError:
        raise InvalidInput(f"{where} is not inside the project {project.root}") from None


HUNK = re.compile(rb"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")


def changed_lines(project: Project, env: Mapping[str, str], rev: str) -> dict[str, set[int]]:
    """{path: the line numbers commit `rev` added or changed} (against its first parent;
    all of a root commit's), text files only."""
    done = git(project.root, env, "-c", "core.quotePath=false", "diff-tree", "-r", "-p",
               "--root", "--no-commit-id", "--no-renames", "--no-ext-diff", "--unified=0",
               rev)  # fmt: skip
    changed: dict[str, set[int]] = {}
    path: str | None = None
    for raw in done.stdout.split(b"\n"):
        if raw.startswith(b"+++ "):
            name = raw[4:]
            path = name[2:].decode("utf-8", "surrogateescape") if name[:2] == b"b/" else None
        elif path is not None and (hunk := HUNK.match(raw)):
            start, count = int(hunk[1]), int(hunk[2] if hunk[2] is not None else 1)
            changed.setdefault(path, set()).update(range(start, start + count))
    return {p: lines for p, lines in changed.items() if lines}


def commit_of(project: Project, env: Mapping[str, str], rev: str) -> tuple[str, int]:
    """`rev`'s commit id and commit time; `InvalidInput` when it names no commit."""
    done = git(project.root, env, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}",
               check=False)  # fmt: skip
    commit = done.stdout.decode().strip()
    if done.returncode != 0 or not commit:
        raise InvalidInput(f"no commit {rev!r} in {project.root}")
    stamp = git(project.root, env, "show", "-s", "--format=%ct", commit).stdout.decode().strip()
    return commit, int(stamp)


def blob_at(project: Project, env: Mapping[str, str], commit: str, path: str) -> bytes:
    shown = git(project.root, env, "cat-file", "blob", f"{commit}:{path}", check=False)
    if shown.returncode != 0:
        raise InvalidInput(f"{path} is not in commit {commit[:12]}")
    return shown.stdout


def head_commit(project: Project, env: Mapping[str, str]) -> str | None:
    """The project's HEAD commit, or None on an unborn branch."""
    done = git(project.root, env, "rev-parse", "--verify", "--quiet", "HEAD", check=False)
    return done.stdout.decode().strip() or None
