"""Retention of code snapshots in a project: prune, orphans, the size budget.

Invariants:
- A snapshot's commit never changes: pruning rebuilds only a ref's keep commits and moves
  the ref by compare-and-swap (a ref that moved is left and named).
- By default nothing a session can rewind to goes: every snapshot a trailer of this
  home's sessions names, and every unnamed one of a session of this home (what `--force`
  saved). `keep_turns` and `older_than` go further only when asked.
- A deleted session's ref keeps what others name; a ref of a session never here is left
  unless `orphans`. An old-style chain keeps everything below its newest kept snapshot.
- Freed objects are only unreachable: the project's `git gc` removes them later.
"""

import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from gitsessions.services.code.snapshot_chains import Chain, chains
from gitsessions.services.code.snapshots import (
    REF_PREFIX,
    Project,
    SnapshotError,
    git,
    keep_commit,
    out,
    snapshot_ref,
)
from gitsessions.store.catalog import Catalog
from gitsessions.store.sessions import SessionStore
from gitsessions.store.tombstones import deleted
from gitsessions.store.trailers import parse_trailers
from gitsessions.values.errors import BadUsage, GitsessionsError

_AGE = re.compile(r"(\d+)\s*([smhdw])")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_age(text: str) -> int:
    """Seconds of `30d`, `12h`, `2w`, `90m`, `45s`; `BadUsage` otherwise."""
    match = _AGE.fullmatch(text.strip().lower())
    if match is None:
        raise BadUsage(f"expected an age such as 30d, 12h or 2w, got {text!r}")
    return int(match.group(1)) * _SECONDS[match.group(2)]


@dataclass
class Pruned:
    """What a prune did (or, dry, would do) in one project."""

    project: Path
    dropped: dict[str, list[str]] = field(default_factory=dict)  # session -> snapshots
    kept: int = 0
    refs_deleted: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # sessions this home never had
    moved: list[str] = field(default_factory=list)  # refs that moved meanwhile
    dry_run: bool = False

    @property
    def dropped_count(self) -> int:
        return sum(len(v) for v in self.dropped.values())

    def as_dict(self) -> dict[str, object]:
        return {
            "project": str(self.project),
            "dry_run": self.dry_run,
            "dropped": self.dropped,
            "dropped_count": self.dropped_count,
            "kept": self.kept,
            "refs_deleted": self.refs_deleted,
            "skipped": self.skipped,
            "moved": self.moved,
        }


@dataclass(frozen=True)
class Named:
    """The snapshots sessions of this home name: all of them, and those within each
    session's last N turns (when a window was asked for)."""

    every: set[str]
    recent: set[str]


def named(store: SessionStore, sessions: Iterable[str], keep_turns: int | None) -> Named:
    """What the given sessions' `Code-Snapshot` trailers name; `recent`: what their
    last `keep_turns` turns name, and the snapshot at or before the oldest of them (the
    code of a step that named none)."""
    every: set[str] = set()
    recent: set[str] = set()
    for sid in sessions:
        try:
            head = store.head(sid)
        except GitsessionsError:  # a damaged session is doctor's to report
            continue
        turns: set[str] = set()
        window, edge = True, False
        for _commit_id, commit in store.history(head):
            trailers = parse_trailers(commit.message)[1]
            turn = trailers.get("Turn")
            if turn is not None and turn not in turns:
                turns.add(turn)
                if window and keep_turns is not None and len(turns) > keep_turns:
                    window, edge = False, keep_turns > 0
            snap = (trailers.get("Code-Snapshot") or "").strip().lower()
            if not snap:
                continue
            every.add(snap)
            if window or edge:
                recent.add(snap)
                edge = False if not window else edge
    return Named(every, recent)


def _relevant(store: SessionStore, refs: Iterable[str]) -> list[str]:
    """The live sessions that can name a snapshot in these refs: their owners, and every
    fork below them (a fork's history includes its parent's)."""
    headers = Catalog(store).headers()
    parent: dict[str, str | None] = {h["id"]: h.get("parent_id") for h in headers if h.get("id")}
    wanted = set(refs)
    relevant: list[str] = []
    for sid in parent:
        seen: set[str] = set()
        node: str | None = sid
        while node is not None and node not in seen:
            if node in wanted:
                relevant.append(sid)
                break
            seen.add(node)
            node = parent.get(node)
    return relevant


def prune(
    store: SessionStore,
    project: Project,
    env: Mapping[str, str],
    *,
    keep_turns: int | None = None,
    older_than: int | None = None,
    orphans: bool = False,
    dry_run: bool = False,
    only: Iterable[str] | None = None,
    now: float | None = None,
) -> Pruned:
    """Drop the snapshots the rules in the module's docstring do not keep, in `project`
    (`only`: those sessions' refs alone)."""
    result = Pruned(project.root, dry_run=dry_run)
    found, nodes = chains(project, env)
    if only is not None:
        wanted = set(only)
        found = [c for c in found if c.session in wanted]
    live = set(store.ids())
    gone = deleted(store.git.path)
    names = named(store, _relevant(store, [c.session for c in found]), keep_turns)
    cutoff = None if older_than is None else int((now or time.time()) - older_than)
    for chain in found:
        if chain.session not in live and chain.session not in gone and not orphans:
            result.skipped.append(chain.session)
            continue
        keep = _kept(chain, chain.session in live, names, keep_turns)
        if cutoff is not None:
            keep = [s for s in keep if s not in nodes or nodes[s].time >= cutoff]
        _rebuild(project, env, chain, keep, result)
    return result


def _kept(chain: Chain, live: bool, names: Named, keep_turns: int | None) -> list[str]:
    """The chain's snapshots the rules keep (before `older_than`): those a session
    names (within its window, with `keep_turns`), and, of a live session, those no
    turn names (what `--force` saved, a prompt's snapshot a step's tools replaced):
    all of them, or with `keep_turns` those newer than the oldest the window keeps."""
    if keep_turns is None:
        return [s for s in chain.snapshots if s in names.every or live]
    window = [i for i, s in enumerate(chain.snapshots) if s in names.recent]
    edge = max(window) if window else -1
    return [
        s
        for i, s in enumerate(chain.snapshots)
        if s in names.recent or (live and s not in names.every and i < edge)
    ]


def _rebuild(
    project: Project, env: Mapping[str, str], chain: Chain, keep: list[str], result: Pruned
) -> None:
    """Rebuild the chain's keep commits over `keep` (newest first)."""
    kept = set(keep)
    # an old-style snapshot kept keeps everything below it
    for i, snap in enumerate(chain.snapshots):
        if snap in kept and snap in chain.linked:
            kept |= set(chain.snapshots[i:])
            break
    dropped = [s for s in chain.snapshots if s not in kept]
    result.kept += len(chain.snapshots) - len(dropped)
    if not dropped:
        return
    result.dropped[chain.session] = dropped
    ref = snapshot_ref(chain.session)
    if not kept:
        result.refs_deleted.append(chain.session)
        if not result.dry_run:
            _move(project, env, ref, None, chain.tip, result)
        return
    if result.dry_run:
        return
    order = [s for s in chain.snapshots if s in kept]
    base_at = next((i for i, s in enumerate(order) if s in chain.linked), len(order) - 1)
    tip: str | None = order[base_at]
    for snap in reversed(order[:base_at]):
        tree = out(git(project.root, env, "rev-parse", f"{snap}^{{tree}}"))
        tip = keep_commit(project, env, chain.session, snap, tree, tip)
    _move(project, env, ref, tip, chain.tip, result)


def _move(
    project: Project, env: Mapping[str, str], ref: str, new: str | None, old: str,
    result: Pruned,
) -> None:  # fmt: skip
    args = ["update-ref", "-d", ref, old] if new is None else ["update-ref", ref, new, old]
    try:
        git(project.root, env, *args)
    except SnapshotError:
        result.moved.append(ref[len(REF_PREFIX) :])


def snapshot_bytes(project: Project, env: Mapping[str, str]) -> int:
    """Bytes on disk of the objects only the snapshot refs reach (git's own count)."""
    done = git(project.root, env, "rev-list", "--objects", "--disk-usage",
               f"--glob={REF_PREFIX}*", "--not", "--branches", "--tags", "--remotes")  # fmt: skip
    text = out(done)
    return int(text) if text.isdigit() else 0


def repository_bytes(project: Project, env: Mapping[str, str]) -> int:
    """Bytes of the project's objects, loose and packed (`git count-objects`): cheap,
    and never less than what the snapshots take."""
    done = git(project.root, env, "count-objects", "-v")
    sizes = dict(line.split(": ", 1) for line in out(done).splitlines() if ": " in line)
    return (int(sizes.get("size", 0)) + int(sizes.get("size-pack", 0))) * 1024


def over_budget(project: Project, env: Mapping[str, str], budget: int) -> int | None:
    """The snapshots' bytes when they are over `budget` (0: no budget), else None."""
    if budget <= 0 or repository_bytes(project, env) <= budget:
        return None
    used = snapshot_bytes(project, env)
    return used if used > budget else None
