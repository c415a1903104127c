"""Which conversation wrote this line: blame over the project's code snapshots.

Invariants:
- Only stock git decides: `git blame` over the blame history (blame_history.py) from a
  last commit holding the files as they are. A line from a turn's step is that turn's;
  any other is a person's. A step's claim is believed only for a turn its session, when
  stored here, has (session_turns.py): a forged snapshot ref claims nothing.
- With a cache folder, the newest snapshot's answers are kept per file (`lines/`), so a
  later blame walks only what is newer; whenever the walk ends anywhere else the whole
  history is walked: the kept answers only save time.
- Nothing is written to the project.
"""

import hashlib
import json
import os
import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from gitsessions.services.code.blame_history import History, Snapshot, open_history
from gitsessions.services.code.session_turns import LastTurn
from gitsessions.services.code.snapshots import Project, git
from gitsessions.store.regular import read_regular
from gitsessions.values.errors import InvalidInput

KEPT_FILES = 256  # answers kept in `lines/`, the least recently written dropped first
MAX_FILE = 64 * 1024 * 1024  # a working tree's file blamed: larger is refused, never read


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


def cache_dir(home: Path, project: Project) -> Path:
    """Where a home keeps the blame history and answers of `project`."""
    key = hashlib.sha256(str(project.common or project.root).encode()).hexdigest()[:16]
    return home / "cache" / "blame" / key


def blame(
    project: Project,
    env: Mapping[str, str],
    path: str,
    text: bytes,
    before: int | None = None,
    cache: Path | None = None,
    *,
    last_turn: LastTurn,
) -> Blame:
    """Who last wrote each line of `text`, the content of `path` (relative to the
    project's root, `/`-separated), from the snapshots taken until `before` (a time);
    a snapshot's turn believed only when `last_turn` says its session has it."""
    return blame_files(project, env, {path: text}, before, cache, last_turn=last_turn)[path]


def blame_files(
    project: Project,
    env: Mapping[str, str],
    files: Mapping[str, bytes],
    before: int | None = None,
    cache: Path | None = None,
    *,
    last_turn: LastTurn,
) -> dict[str, Blame]:
    """`blame` of several files (path -> content) over one history."""
    for path, text in files.items():
        if b"\0" in text[:8000]:
            raise InvalidInput(f"{path} is a binary file: nothing to blame line by line")
    with tempfile.TemporaryDirectory(prefix="gitsessions-blame-") as scratch:
        history = open_history(project, env, cache, Path(scratch))
        seen = history.snapshots
        if before is not None:
            seen = [s for s in seen if s.time <= before]  # a prefix: marks go by time
        origins: dict[str, list[int]] = {path: [] for path in files}
        if seen and files:
            overlay = _target(project, env, history, len(seen), files, Path(scratch))
            for path in files:
                origins[path] = _origins(history, env, overlay, len(seen), path, cache)
    results: dict[str, Blame] = {}
    for path, text in files.items():
        result = Blame(path, sessions={s.session for s in seen}, snapshots=len(seen))
        marks = origins[path]
        for number, line_text in enumerate(split_lines(text), 1):
            mark = marks[number - 1] if number <= len(marks) else 0
            snap = history.snapshots[mark - 1] if 0 < mark <= len(seen) else None
            by = snap if snap is not None and _believed(snap, last_turn) else None
            result.lines.append(Line(number, line_text, by))
        results[path] = result
    return results


def _believed(snap: Snapshot, last_turn: LastTurn) -> bool:
    """Whether `snap` is a turn's step of its session: by its subject, and (for a
    session stored here) a turn the session has; a forged ref's claim is not."""
    if not snap.by_agent or snap.turn is None:
        return False
    last = last_turn(snap.session)
    return last is None or snap.turn <= last


def split_lines(text: bytes) -> list[str]:
    """The file's lines as git counts them: split at newlines only."""
    lines = text.decode("utf-8", "replace").split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


def _target(
    project: Project,
    env: Mapping[str, str],
    history: History,
    count: int,
    files: Mapping[str, bytes],
    scratch: Path,
) -> Path:
    """A throwaway repository (borrowing the history's objects and the project's) whose
    `refs/heads/blame` holds `files` over the first `count` snapshots (see the module's
    invariants)."""
    repo = scratch / "target"
    git(scratch, env, "init", "--bare", "-q", str(repo))
    objects = (project.common or project.root / ".git") / "objects"
    (repo / "objects" / "info" / "alternates").write_text(
        f"{history.repo / 'objects'}\n{objects}\n"
    )
    seen = history.snapshots[:count]
    heads: dict[str, int] = {}
    for mark, snap in enumerate(seen, 1):
        heads[snap.session] = mark
    alike = _same_content(project, env, seen, files)
    parents = list(dict.fromkeys([count, *sorted(alike, reverse=True),
                                  *sorted(heads.values(), reverse=True)]))  # fmt: skip
    body = b"".join(
        b"M 100644 inline " + _quoted(path) + b"\ndata %d\n" % len(text) + text + b"\n"
        for path, text in files.items()
    )
    mark = len(history.snapshots) + 1
    when = seen[-1].time
    stream = b"commit refs/heads/blame\nmark :%d\n" % mark
    stream += b"committer gitsessions <gitsessions@localhost> %d +0000\ndata 0\n" % when
    stream += b"from :%d\n" % parents[0] + b"".join(b"merge :%d\n" % p for p in parents[1:])
    stream += body + b"\n"
    git(repo, env, "--git-dir", str(repo), "fast-import", "--quiet", "--force",
        f"--import-marks={history.marks}", input=stream)  # fmt: skip
    return repo


def _same_content(
    project: Project, env: Mapping[str, str], seen: list[Snapshot], files: Mapping[str, bytes]
) -> set[int]:
    """The marks of each session's newest snapshot holding one of `files` exactly as it
    is (one `cat-file --batch-check` for all)."""
    wanted = {
        path: git(project.root, env, "hash-object", "--stdin", input=text).stdout.strip()
        for path, text in files.items()
    }
    queries = [(mark, snap, path) for mark, snap in enumerate(seen, 1) for path in files]
    asked = "".join(f"{snap.tree}:{path}\n" for _m, snap, path in queries).encode()
    done = git(project.root, env, "cat-file", "--batch-check=%(objectname)", input=asked)
    found: dict[str, int] = {}
    for (mark, snap, path), answer in zip(queries, done.stdout.splitlines(), strict=False):
        if answer == wanted[path]:
            found[snap.session] = mark  # oldest first: the newest stays
    return set(found.values())


def _quoted(path: str) -> bytes:
    """A path as fast-import reads it: C-quoted when it needs to be."""
    raw = path.encode("utf-8", "surrogateescape")
    if not re.search(rb'[\x00-\x1f"\\\x7f]', raw) and not raw.startswith(b'"'):
        return raw
    escaped = raw.replace(b"\\", b"\\\\").replace(b'"', b'\\"').replace(b"\n", b"\\n")
    return b'"' + escaped + b'"'


def _origins(
    history: History,
    env: Mapping[str, str],
    overlay: Path,
    count: int,
    path: str,
    cache: Path | None,
) -> list[int]:
    """The mark each line of `path` in the overlay's last commit comes from (0: that
    commit itself), walking from the newest snapshot's kept answer when there is one."""
    newest = history.commits[count]
    mark_of = history.mark_of()
    kept = _kept(cache, path) if cache is not None else None
    base: tuple[str, list[int]] | None = None
    if kept is not None and kept[0] == newest:
        base = kept
    elif cache is not None:  # the newest snapshot's answer, from the one kept before
        answer = _walk(history.repo, env, newest, path, mark_of, kept)
        if answer is not None:
            _keep(cache, path, newest, answer)
            base = (newest, answer)
    found = _walk(overlay, env, "refs/heads/blame", path, mark_of, base)
    return found if found is not None else []


def _walk(
    repo: Path,
    env: Mapping[str, str],
    rev: str,
    path: str,
    mark_of: Mapping[str, int],
    base: tuple[str, list[int]] | None,
) -> list[int] | None:
    """`git blame` of `path` at `rev` as marks, from `base` (a commit and its answer)
    when given and the walk ends there only, else over the whole history; None when
    `rev` lacks the path."""
    if base is not None:
        rows = _porcelain(repo, env, rev, path, base[0])
        if rows is not None:
            marks = []
            for sha, orig, name, boundary in rows:
                if not boundary:
                    marks.append(mark_of.get(sha, 0))
                elif sha == base[0] and name == path and 0 < orig <= len(base[1]):
                    marks.append(base[1][orig - 1])
                else:
                    break
            else:
                return marks
    rows = _porcelain(repo, env, rev, path, None)
    return None if rows is None else [mark_of.get(sha, 0) for sha, *_ in rows]


def _porcelain(
    repo: Path, env: Mapping[str, str], rev: str, path: str, stop: str | None
) -> list[tuple[str, int, str, bool]] | None:
    """Per line of `path` at `rev`: (commit, line number there, path there, boundary)."""
    args = ["--git-dir", str(repo), "blame", "--porcelain", rev]
    args += [f"^{stop}"] if stop else []
    done = git(repo, env, *args, "--", path, check=False)
    if done.returncode != 0:
        return None
    rows: list[tuple[str, int, str, bool]] = []
    names: dict[str, str] = {}
    boundaries: set[str] = set()
    current: tuple[str, int] | None = None
    for raw in done.stdout.split(b"\n"):
        if raw.startswith(b"\t"):
            if current is not None:
                sha, orig = current
                rows.append((sha, orig, names.get(sha, path), sha in boundaries))
            current = None
        elif current is None and raw[:1].isalnum() and b" " in raw:
            parts = raw.split(b" ")
            current = (parts[0].decode(), int(parts[1]))
        elif raw == b"boundary" and current is not None:
            boundaries.add(current[0])
        elif raw.startswith(b"filename ") and current is not None:
            names[current[0]] = raw[9:].decode("utf-8", "surrogateescape")
    return rows


def _kept(cache: Path, path: str) -> tuple[str, list[int]] | None:
    try:
        kept = json.loads(_kept_file(cache, path).read_text())
        if kept["path"] == path:
            return str(kept["at"]), [int(m) for m in kept["origins"]]
    except (OSError, ValueError, TypeError, KeyError):
        pass
    return None


def _keep(cache: Path, path: str, at: str, origins: list[int]) -> None:
    folder = cache / "lines"
    folder.mkdir(exist_ok=True, mode=0o700)
    with tempfile.NamedTemporaryFile("w", dir=folder, delete=False, suffix=".tmp") as file:
        json.dump({"path": path, "at": at, "origins": origins}, file)
    os.replace(file.name, _kept_file(cache, path))
    kept = sorted(folder.glob("*.json"), key=lambda f: f.stat().st_mtime)
    for old in kept[:-KEPT_FILES]:
        old.unlink(missing_ok=True)


def _kept_file(cache: Path, path: str) -> Path:
    return (
        cache
        / "lines"
        / f"{hashlib.sha256(path.encode('utf-8', 'surrogateescape')).hexdigest()[:32]}.json"
    )


def file_text(
    project: Project, env: Mapping[str, str], path: str, at: str | None
) -> tuple[bytes, int | None]:
    """The file's content (the working tree's, or at revision `at`) and, for a revision,
    its commit time (snapshots taken after it are left out). A working tree's file is
    read only when it is a regular file of at most `MAX_FILE` bytes (a FIFO, device or
    socket: `NotRegularFile`, never waited on)."""
    if at is None:
        try:
            return read_regular(project.root / path, MAX_FILE), None
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
