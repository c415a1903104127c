"""The blame history: a project's code snapshots laid out as commits `git blame` can walk.

Invariants:
- Snapshots ordered by time (then session id), each session's in its keep chain's order.
  A turn's step (`N.S`, S > 0) has one parent, its session's snapshot before it; any
  other snapshot is a person's, with parents its session's previous one, the project's
  previous one, and the newest earlier one of the same tree; a merge's result (`merge of
  <id>`, merge_code.py) has the joined session's newest first.
- Written by `git fast-import` into a bare repository borrowing the project's objects
  (alternates): nothing is written to the project.
- Cached with the snapshot refs it was made of: used as is while no ref moved, grown when
  all new snapshots are newer, else rebuilt; files replaced by rename, and a writer that
  finds the lock held builds a throwaway one: never half written.
"""

import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Mapping
from dataclasses import astuple, dataclass, field
from pathlib import Path

from gitsessions.services.code.snapshot_chains import chains, snapshot_refs
from gitsessions.services.code.snapshots import MERGE_SUBJECT, SNAPSHOT_SUBJECT, Project, git

STEP = re.compile(r"session ([0-9a-f]+) turn (\d+)\.(\d+)\Z")
MERGE = re.compile(rf"session [0-9a-f]+ {re.escape(MERGE_SUBJECT)}([0-9a-f]{{32}})\Z")
FORMAT = 3  # 3: a snapshot keeps its ns
STALE_LOCK = 300  # seconds: a lock older than this was left by a killed blame


@dataclass(frozen=True)
class Snapshot:
    """One snapshot: whose, which turn and step (None: not a turn's step), its tree and
    commit time."""

    commit: str
    session: str
    tree: str
    time: int
    turn: int | None
    step: int | None
    merged: str | None = None  # a merge's result: the session whose code it joined
    nanos: int = 0  # when it was taken, in ns (0: an older snapshot says only its second)

    @property
    def at(self) -> int:
        """Its place in time: its ns, else the start of its second."""
        return self.nanos or self.time * 1_000_000_000

    @property
    def by_agent(self) -> bool:
        return self.step is not None and self.step > 0


@dataclass
class History:
    """A written history: its repository, marks file and snapshots (mark N is
    `snapshots[N - 1]`), the commit id of each mark."""

    repo: Path
    marks: Path
    snapshots: list[Snapshot]
    commits: dict[int, str]
    tips: dict[str, str] = field(default_factory=dict)  # the snapshot refs it was made of

    def mark_of(self) -> dict[str, int]:
        return {sha: mark for mark, sha in self.commits.items()}


def snapshot_lines(project: Project, env: Mapping[str, str]) -> dict[str, list[Snapshot]]:
    """{session id: its snapshots, oldest first}."""
    found, nodes = chains(project, env)
    lines: dict[str, list[Snapshot]] = {}
    for chain in found:
        line: list[Snapshot] = []
        for commit in reversed(chain.snapshots):
            node = nodes.get(commit)
            if node is None:
                continue
            subject = node.subject.removeprefix(SNAPSHOT_SUBJECT)
            match = STEP.search(subject)
            turn, step = (int(match[2]), int(match[3])) if match else (None, None)
            joined = MERGE.search(subject)
            line.append(Snapshot(commit, chain.session, node.tree, node.time, turn, step,
                                 joined[1] if joined else None, node.nanos))  # fmt: skip
        if line:
            lines[chain.session] = line
    return lines


def in_order(lines: Mapping[str, list[Snapshot]]) -> list[Snapshot]:
    """Every snapshot by time (its `Snapshot-Time`, else its second's start; `_times`), then
    turn (within an older second: a fork, which goes on counting its parent's turns,
    comes after the parent's snapshots; a merge's result after the joined session's),
    then session id, each session's in its own order."""
    keyed = [
        (at, turn, sid, i, s)
        for sid, line in lines.items()
        for i, (s, at, turn) in enumerate(zip(line, _times(line), _turns(line, lines), strict=True))
    ]
    return [s for *_, s in sorted(keyed, key=lambda k: (k[0], k[1], k[2], k[3]))]


def _times(line: list[Snapshot]) -> list[int]:
    """Each snapshot's time for ordering, never going back along its line (one without
    its ns, at the start of its second, after an earlier one with them)."""
    out: list[int] = []
    for s in line:
        out.append(max(s.at, out[-1]) if out else s.at)
    return out


def _turns(line: list[Snapshot], lines: Mapping[str, list[Snapshot]]) -> list[float]:
    """Each snapshot's turn for ordering, never going back along its line: one that is
    no turn's step (a fork's first) takes the turn before it, or, leading the line,
    just before the first turn after it; a merge's result takes, too, just past the
    newest turn the joined session had by then (so its snapshots come first)."""
    known = [s.turn for s in line if s.turn is not None]
    last = known[0] - 0.5 if known else 0.0
    out: list[float] = []
    for s in line:
        last = max(last, float(s.turn)) if s.turn is not None else last
        if s.merged is not None:
            joined = [t.turn for t in lines.get(s.merged, []) if t.turn is not None
                      and t.time <= s.time]  # fmt: skip
            last = max([last, *(t + 0.5 for t in joined)])
        out.append(last)
    return out


def open_history(
    project: Project, env: Mapping[str, str], cache: Path | None, scratch: Path
) -> History:
    """The project's blame history as it is now: the cached one (grown as needed) when
    `cache` is given and free, else one built in `scratch`."""
    tips = snapshot_refs(project, env)
    if cache is not None:
        cache.mkdir(parents=True, exist_ok=True, mode=0o700)
        lock = cache / "lock"
        if _take_lock(lock):
            try:
                return _cached(project, env, tips, cache)
            finally:
                lock.unlink(missing_ok=True)
    return _build(project, env, in_order(snapshot_lines(project, env)), scratch / "history", [])


def _take_lock(lock: Path) -> bool:
    try:
        if time.time() - lock.stat().st_mtime > STALE_LOCK:
            lock.unlink(missing_ok=True)
    except OSError:
        pass
    try:
        os.close(os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:
        return False
    return True


def _cached(project: Project, env: Mapping[str, str], tips: dict[str, str], cache: Path) -> History:
    kept = _load(cache, project)
    if kept is not None and kept.tips == tips:
        return kept  # no snapshot ref moved: nothing to list
    lines = snapshot_lines(project, env)
    order = in_order(lines)
    if kept is not None:
        old = kept.snapshots
        have = {s.commit for s in old}
        new = [s for s in order if s.commit not in have]
        positions = {s.commit: i for i, s in enumerate(order)}
        still = all(s.commit in positions for s in old)
        newer = not new or not old or min(s.at for s in new) >= max(s.at for s in old)
        if still and newer and _prefixes(old, lines):
            grown = _build(project, env, new, cache / "history", kept.snapshots, kept.marks)
            grown.tips = tips
            _save(cache, project, grown)
            return grown
    shutil.rmtree(cache / "history", ignore_errors=True)
    for name in ("nodes.json", "marks"):
        (cache / name).unlink(missing_ok=True)
    history = _build(project, env, order, cache / "history", [])
    history.tips = tips
    _save(cache, project, history)
    return history


def _prefixes(old: list[Snapshot], lines: Mapping[str, list[Snapshot]]) -> bool:
    """Whether each session's kept snapshots are the start of its line now."""
    by_session: dict[str, list[str]] = {}
    for s in old:
        by_session.setdefault(s.session, []).append(s.commit)
    for sid, commits in by_session.items():
        now = [s.commit for s in lines.get(sid, [])]
        if now[: len(commits)] != commits:
            return False
    return True


def _build(
    project: Project,
    env: Mapping[str, str],
    new: list[Snapshot],
    repo: Path,
    old: list[Snapshot],
    marks_in: Path | None = None,
) -> History:
    """Append `new` to the history of `old` (written in `repo`, marks in `marks_in`)."""
    if not (repo / "objects").is_dir():
        git(repo.parent, env, "init", "--bare", "-q", str(repo))
        objects = (project.common or project.root / ".git") / "objects"
        (repo / "objects" / "info" / "alternates").write_text(f"{objects}\n")
    snapshots = [*old, *new]
    last_of: dict[str, int] = {}
    newest_tree: dict[str, int] = {}
    for mark, snap in enumerate(old, 1):
        last_of[snap.session] = mark
        newest_tree[snap.tree] = mark
    stream: list[bytes] = []
    for mark, snap in enumerate(new, len(old) + 1):
        parents: list[int] = []
        own = last_of.get(snap.session)
        if own is not None:
            parents.append(own)
        if not snap.by_agent or own is None:
            joined = last_of.get(snap.merged) if snap.merged else None
            for extra in (joined, mark - 1 if mark > 1 else None, newest_tree.get(snap.tree)):
                if extra is not None and extra not in parents:
                    parents.append(extra)
        last_of[snap.session] = mark
        newest_tree[snap.tree] = mark
        stream.append(commit_text(mark, snap.time, parents, f'M 040000 {snap.tree} ""\n'.encode()))
    marks_out = repo.parent / f"marks.{os.getpid()}"
    args = ["--git-dir", str(repo), "fast-import", "--quiet", "--force",
            f"--export-marks={marks_out}"]  # fmt: skip
    if marks_in is not None and marks_in.exists():
        args.append(f"--import-marks={marks_in}")
    git(repo, env, *args, input=b"".join(stream))
    marks = repo.parent / "marks"
    os.replace(marks_out, marks)
    return History(repo, marks, snapshots, read_marks(marks))


def commit_text(mark: int, when: int, parents: list[int], changes: bytes) -> bytes:
    """One fast-import commit on `refs/heads/blame`, mark `mark`."""
    head = b"commit refs/heads/blame\nmark :%d\n" % mark
    head += b"committer gitsessions <gitsessions@localhost> %d +0000\ndata 0\n" % when
    if not parents:  # a root: the branch starts again (else its tip would be the parent)
        return b"reset refs/heads/blame\n" + head + b"deleteall\n" + changes + b"\n"
    head += b"from :%d\n" % parents[0]
    head += b"".join(b"merge :%d\n" % p for p in parents[1:])
    return head + changes + b"\n"


def read_marks(path: Path) -> dict[int, str]:
    found: dict[int, str] = {}
    for entry in path.read_text().splitlines():
        mark, _, sha = entry.partition(" ")
        found[int(mark.lstrip(":"))] = sha
    return found


def _load(cache: Path, project: Project) -> History | None:
    try:
        kept = json.loads((cache / "nodes.json").read_text())
        if kept.get("format") != FORMAT or kept.get("project") != str(project.common):
            return None
        snapshots = [Snapshot(*row) for row in kept["snapshots"]]
        tips = {str(k): str(v) for k, v in kept["tips"].items()}
        commits = read_marks(cache / "marks")
    except (OSError, ValueError, TypeError, KeyError):
        return None
    if len(commits) != len(snapshots) or not (cache / "history" / "objects").is_dir():
        return None
    return History(cache / "history", cache / "marks", snapshots, commits, tips)


def _save(cache: Path, project: Project, history: History) -> None:
    body = {
        "format": FORMAT,
        "project": str(project.common),
        "tips": history.tips,
        "snapshots": [list(astuple(s)) for s in history.snapshots],
    }
    with tempfile.NamedTemporaryFile("w", dir=cache, delete=False, suffix=".tmp") as file:
        json.dump(body, file)
    os.replace(file.name, cache / "nodes.json")
