"""What gitsessions left in the user's projects, as `doctor` sees it and `gc` cleans it.

Invariants: the projects are those this home's sessions recorded (still a working tree
here) and the current one. A finding is a deleted session's snapshot ref holding
snapshots no remaining session names (repair: retention's prune, compare-and-swap) or
loose snapshot refs past twice what a tidy leaves (repair: a tidy); a ref of a session
never here is not one (`snapshot prune --orphans`). No user ref, HEAD, index or file is
touched.
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from gitsessions.services.code import footprint, retention
from gitsessions.services.code.snapshot_chains import snapshot_refs
from gitsessions.services.code.snapshots import (
    Project,
    SnapshotError,
    find_project,
    snapshot_ref,
)
from gitsessions.services.sessions.doctor import Finding
from gitsessions.store.catalog import Catalog
from gitsessions.store.sessions import SessionStore
from gitsessions.store.tombstones import deleted


def projects(store: SessionStore, env: Mapping[str, str], here: Path | None) -> list[Project]:
    """The git working trees this home's sessions worked in, and `here`'s, once each."""
    roots: list[Path] = [here] if here is not None else []
    for header in Catalog(store).headers():
        root = (header.get("workspace") or {}).get("repo_root")
        if isinstance(root, str) and root:
            roots.append(Path(root))
    found: dict[Path, Project] = {}
    for root in roots:
        if not root.is_dir():
            continue
        project = find_project(root, env)
        if project is not None:
            found.setdefault(project.root, project)
    return list(found.values())


@dataclass(frozen=True)
class Cleaned:
    """What `gc` did in the projects: snapshots of deleted sessions dropped, loose
    snapshot refs and objects packed."""

    projects: int
    dropped: int
    refs_deleted: int
    refs_packed: int = 0
    objects_packed: int = 0


def check(
    store: SessionStore, env: Mapping[str, str], where: Iterable[Project], repair: bool
) -> list[Finding]:
    """Snapshot refs of sessions deleted here, each a finding (pruned with `repair`)."""
    gone = deleted(store.git.path)
    findings: list[Finding] = []
    for project in where:
        try:
            refs = snapshot_refs(project, env)
            orphaned = [sid for sid in refs if sid in gone]
            if not orphaned:
                continue
            pruned = retention.prune(store, project, env, only=orphaned, dry_run=not repair)
        except SnapshotError as error:
            findings.append(Finding("project", str(project.root), str(error)))
            continue
        for sid, dropped in pruned.dropped.items():
            whole = sid in pruned.refs_deleted
            detail = (
                f"{snapshot_ref(sid)} of a deleted session holds {len(dropped)} snapshot(s) "
                + ("no session names" if whole else "no remaining session names")
            )
            fixed = repair and sid not in pruned.moved
            findings.append(Finding("snapshots", f"{project.root}: {sid}", detail, fixed))
    for project in where:
        findings += _loose(project, env, repair)
    return findings


def _loose(project: Project, env: Mapping[str, str], repair: bool) -> list[Finding]:
    try:
        loose = len(footprint.loose_refs(project, env))
        if loose < 2 * footprint.LOOSE_REFS_AT:
            return []
        fixed = repair and footprint.tidy(project, env, force=True) is not None
    except SnapshotError as error:
        return [Finding("project", str(project.root), str(error))]
    detail = f"{loose} loose snapshot refs (and the objects they reach): a tidy packs them"
    return [Finding("loose", str(project.root), detail, fixed)]


def clean(store: SessionStore, env: Mapping[str, str], where: Iterable[Project]) -> Cleaned:
    """Drop the snapshots of sessions deleted here that no remaining session names, and
    pack the loose snapshot refs and objects (a tidy, forced)."""
    gone = deleted(store.git.path)
    count = dropped = refs_deleted = refs_packed = objects_packed = 0
    for project in where:
        count += 1
        try:
            orphaned = [sid for sid in snapshot_refs(project, env) if sid in gone]
            if orphaned:
                pruned = retention.prune(store, project, env, only=orphaned)
                dropped += pruned.dropped_count
                refs_deleted += len(pruned.refs_deleted)
            tidied = footprint.tidy(project, env, force=True)
        except SnapshotError:
            continue
        if tidied is not None:
            refs_packed += tidied.refs
            objects_packed += tidied.objects
    return Cleaned(count, dropped, refs_deleted, refs_packed, objects_packed)
