"""Taking snapshots: `take` once (a fork's worktree), `Snapshotter` at each turn.

Invariants:
- A take is a capture recorded on the session's newest snapshot; unchanged tree and HEAD
  name the previous one.
- No project, or a failing git: one note, and the turn goes on (nothing raised). When
  `git status` and the stats of its files are unchanged, the last snapshot is named
  after that one git call.
- Notes said once (no repository, files left out, `budget_bytes` passed); the project's
  `.git` is tidied when enough piles up (footprint.py).
"""

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from gitsessions.services.code.capture import capture, scan
from gitsessions.services.code.snapshots import (
    Project,
    Snapshot,
    SnapshotError,
    find_project,
    newest,
    record,
)
from gitsessions.services.code.workspace import NO_REPOSITORY_NOTE
from gitsessions.services.settings.config import DEFAULT_BUDGET_BYTES, DEFAULT_MAX_FILE_BYTES


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
