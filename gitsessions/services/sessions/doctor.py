"""`gitsessions doctor`: what `git fsck` cannot see, and its repair. A branch's place comes
only from `store.headlog` (a `Session:` trailer alone never moves a branch: anything
fetched may carry one), and a recorded head is used only if it names its session and
passes a pull's checks (`revisions.checked_head`).

Checks: refs holding no commit id or with names git refuses; lost sessions (a recorded
head, no branch, not deleted), unfinished ones (a pull killed creating them; a pull
still writing is waited for) and branches behind their newest recorded head; broken
sessions (a missing or unreadable object, a pack record `packrecords` refuses, a zlib
stream not inflating to its declared size: `check_streams`); damaged packs (named, never
repaired); stale lock files and dead leases; cache rows of gone sessions.

Invariant: repair only adds or fast-forwards a branch (compare-and-swap), removes stale
locks and leases, moves unreadable refs aside (`store.git/gitsessions/corrupt/`) and
deletes caches; it never deletes a commit or rewrites history.
"""

import contextlib
import fcntl
import os
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gitsessions.services.sessions.revisions import checked_head
from gitsessions.store import headlog, maintenance, tombstones
from gitsessions.store.background import maintenance_quiet
from gitsessions.store.errors import StoreError
from gitsessions.store.packrecords import DamagedObject
from gitsessions.store.refnames import breaks_rules, shown
from gitsessions.store.refpack import (
    bad_names,
    drop_unfinished,
    is_sha,
    packed_lock,
    read_packed,
    read_ref_file,
    recover_stale,
    unfinished,
    writers_done,
)
from gitsessions.store.refs import SESSION_REF_PREFIX, damaged_id, ref_name
from gitsessions.store.repo import STALE_LOCK_SECONDS, UNREADABLE
from gitsessions.store.sessions import SessionStore
from gitsessions.store.storelock import PACKED_WRITER, flocked


@dataclass
class Finding:
    kind: str  # refs, lost, unfinished, behind, broken, lock, lease, cache
    subject: str  # a session id or a file, relative to the home
    detail: str
    repaired: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "subject": self.subject,
            "detail": self.detail,
            "repaired": self.repaired,
        }


@dataclass
class Report:
    sessions: int = 0
    commits: int = 0
    findings: list[Finding] = field(default_factory=list)

    @property
    def healthy(self) -> bool:
        return all(f.repaired for f in self.findings)

    def as_dict(self) -> dict[str, Any]:
        return {
            "sessions": self.sessions,
            "commits": self.commits,
            "healthy": self.healthy,
            "findings": [f.as_dict() for f in self.findings],
        }


def doctor(store: SessionStore, repair: bool = False) -> Report:
    report = Report()
    with maintenance_quiet(store.git.path):
        damaged: set[bytes] = set()
        for pack, why, shas in maintenance.damaged_packs(store.git):
            report.findings.append(Finding("pack", f"store.git/{pack}", why))
            damaged |= shas
        _check_ref_files(store, report, repair)
        recorded = headlog.heads(store.git.path)
        writers_done(store.git.path)  # a head recorded by then has its ref, or never will
        refs, damaged_refs = _session_refs(store, report)
        report.sessions = len(refs)
        _check_commits(store, refs, recorded, report, repair, damaged_refs)
        _check_broken(store, refs, report, damaged)
        _check_locks(store, report, repair)
        if repair:
            drop_unfinished(store.git.path)
        _check_leases(store, refs, report, repair)
        _check_caches(store, refs, report, repair)
    return report


def _relative(store: SessionStore, path: Path) -> str:
    with contextlib.suppress(ValueError):
        return str(path.relative_to(store.home))
    return str(path)


def _check_ref_files(store: SessionStore, report: Report, repair: bool) -> None:
    git_path = store.git.path
    packed_path = git_path / "packed-refs"
    try:
        read_packed(packed_path)
    except StoreError as error:
        finding = Finding("refs", _relative(store, packed_path), str(error))
        if repair:  # keep the good lines; the bad ones are saved beside it
            with packed_lock(git_path) as commit:
                good = read_packed(packed_path, strict=False)
                _keep_aside(packed_path)
                commit(good)
            finding.repaired = True
        report.findings.append(finding)
    _check_ref_names(store, report, repair)
    folder = git_path / os.fsdecode(SESSION_REF_PREFIX)
    for file in sorted(folder.glob("*")) if folder.exists() else []:
        if file.name.endswith(".lock") or not file.is_file():
            continue
        value = read_ref_file(file)
        if value is not None and not is_sha(value):
            finding = Finding(
                "refs", _relative(store, file), "does not hold a commit id (moved aside)"
            )
            if repair:
                _keep_aside(file)
                finding.repaired = True
            report.findings.append(finding)


def _check_ref_names(store: SessionStore, report: Report, repair: bool) -> None:
    """Ref names that break git's rules, in `packed-refs` or loose: stock git and
    dulwich refuse to read a store that holds one. Repair drops them from
    `packed-refs` (the file as it was kept aside) and moves the loose files aside."""
    git_path = store.git.path
    packed, loose = bad_names(git_path)
    if packed:
        path = git_path / "packed-refs"
        more = f" and {len(packed) - 1} more" if len(packed) > 1 else ""
        why = f"holds a ref name that {breaks_rules(packed[0])}: {shown(packed[0])}{more}"
        finding = Finding("refs", _relative(store, path), why)
        if repair:
            with packed_lock(git_path) as commit:
                good = read_packed(path, strict=False)  # skips them
                _keep_aside(path)
                commit(good)
            finding.repaired = True
        report.findings.append(finding)
    for name in loose:
        path = git_path / os.fsdecode(name)
        subject = "store.git/" + shown(name)[1:-1]
        finding = Finding("refs", subject, f"a ref name that {breaks_rules(name)} (moved aside)")
        if repair:
            with contextlib.suppress(FileNotFoundError):
                _keep_aside(path)
            finding.repaired = True
        report.findings.append(finding)


def _keep_aside(path: Path) -> None:
    """Move a damaged file to `store.git/gitsessions/corrupt/` (outside `refs/`, where
    git would trip on it), keeping its content for whoever wants to look."""
    git_path = next(p for p in path.parents if p.name == "store.git")
    aside = git_path / "gitsessions" / "corrupt"
    aside.mkdir(mode=0o700, parents=True, exist_ok=True)
    name = path.relative_to(git_path).as_posix().replace("/", "%")[:200]
    os.replace(path, aside / f"{name}.{int(time.time())}")


def _session_refs(store: SessionStore, report: Report) -> tuple[dict[str, bytes], set[str]]:
    """The refs that can be read, and the sessions whose ref is damaged (named by
    `_check_ref_files`): one damaged ref leaves the others checked."""
    try:
        scanned = store.scan()
    except StoreError as error:  # still unreadable (no --repair): go on without refs
        report.findings.append(Finding("refs", "store.git", str(error)))
        return {}, set()
    return scanned.ids, {sid for d in scanned.damaged if (sid := damaged_id(d)) is not None}


def _check_commits(
    store: SessionStore,
    refs: dict[str, bytes],
    heads: dict[str, list[bytes]],
    report: Report,
    repair: bool,
    damaged: frozenset[str] | set[str] = frozenset(),
) -> None:
    """Find lost and lagging branches from the heads this home gave them (`headlog`:
    `heads`, read before `refs`), never from a commit's trailer alone (and say so of a
    branch that is there but damaged: `--repair` restores it, once its file is moved
    aside). A branch a killed pull was creating (its interrupted `packed-refs` write
    names it: `refpack.unfinished`) is `unfinished`, not lost: it never was here."""
    git = store.git
    report.commits, by_session = maintenance.session_commits(git)
    deleted = tombstones.deleted(git.path)
    creating = unfinished(git.path)
    for sid, recorded in sorted(heads.items()):
        commits = by_session.get(sid, {})
        tip = _newest_recorded(store, sid, recorded, commits)
        if tip is None:
            continue
        head = refs.get(sid)
        if head is None:
            if sid in deleted:
                continue
            what = "its branch is damaged" if sid in damaged else "no branch"
            finding = Finding("lost", sid, f"{what}; its newest commit is {tip.decode()[:12]}")
            if sid not in damaged and creating.get(ref_name(sid)) == tip:
                why = "being created by a pull that stopped before writing its branch"
                finding = Finding("unfinished", sid, f"{why}; its head is {tip.decode()[:12]}")
            if repair:
                with git.locked(), git.ref_locked(ref_name(sid)):
                    finding.repaired = git.move_ref(ref_name(sid), None, tip)
            report.findings.append(finding)
        elif head != tip and head in commits and _descends(commits, tip, head):
            finding = Finding(
                "behind", sid, f"branch at {head.decode()[:12]}, newer commit {tip.decode()[:12]}"
            )
            if repair:
                with git.locked(), git.ref_locked(ref_name(sid)):
                    finding.repaired = git.move_ref(ref_name(sid), head, tip)
            report.findings.append(finding)


def _newest_recorded(
    store: SessionStore,
    sid: str,
    recorded: list[bytes],
    commits: dict[bytes, tuple[list[bytes], int]],
) -> bytes | None:
    """The newest head recorded for `sid` that is still here, names `sid` in its
    trailer and passes the checks a pull makes (`revisions.checked_head`: a format this build
    reads, the tree's session id `sid`); None when there is none."""
    for sha in reversed(recorded):
        if sha not in commits:
            continue
        try:
            checked_head(store, sid, sha)
        except StoreError:
            continue
        return sha
    return None


def _descends(commits: dict[bytes, tuple[list[bytes], int]], tip: bytes, head: bytes) -> bool:
    sha: bytes | None = tip
    while sha is not None and sha in commits:
        if sha == head:
            return True
        parents = commits[sha][0]
        sha = parents[0] if parents else None
    return False


def _check_broken(
    store: SessionStore, refs: dict[str, bytes], report: Report, damaged: set[bytes]
) -> None:
    inflated: set[bytes] = set()  # the objects whose streams were inflated: once each
    for sid, head in sorted(refs.items()):
        problem = session_problem(store, head, damaged, inflated)
        if problem:
            report.findings.append(Finding("broken", sid, problem))


def session_problem(
    store: SessionStore,
    head: bytes,
    damaged: frozenset[bytes] | set[bytes] = frozenset(),
    inflated: set[bytes] | None = None,
) -> str | None:
    """Why a session's history cannot be read whole, or None when it can. `damaged`:
    the objects of packs whose checksum is wrong (their index still names them);
    `inflated`: the objects whose pack records were inflated whole already (added to),
    each checked once however many sessions reach it."""
    inflated = set() if inflated is None else inflated
    git = store.git
    walk = maintenance.walk(git, {b"head": head})
    if walk.broken:
        return next(iter(walk.broken.values()))
    for sha, type_num, path in walk.entries:
        if type_num == 3 and not git.has(sha):
            return f"object {sha.decode()[:12]} is missing"
        if sha in damaged and not git.has_loose(sha):
            return f"object {sha.decode()[:12]} is in a damaged pack"
        if sha not in inflated:
            try:  # every pack record, inflated bounded to its declared size
                git.check_packed(sha, streams=True)
                inflated.add(sha)
            except DamagedObject as error:
                where = path.decode(errors="replace").lstrip("/") or "a commit"
                return f"object {sha.decode()[:12]} ({where}) is damaged: {error.why}"
            except UNREADABLE as error:  # its pack does not open (`damaged_packs` names it)
                error.__traceback__ = None
                return f"object {sha.decode()[:12]} cannot be read ({error})"
    return None


def _check_locks(store: SessionStore, report: Report, repair: bool) -> None:
    """Lock files older than `STALE_LOCK_SECONDS`; `packed-refs.lock` by its writers'
    `flock` instead (its writer is gone when no one holds it), whatever its age."""
    path = store.git.path
    if (path / "packed-refs.lock").exists() and not _packed_writer_running(path):
        where = _relative(store, path / "packed-refs.lock")
        finding = Finding("lock", where, "left by a write that stopped (its writer is gone)")
        if repair:
            recover_stale(path)
            finding.repaired = True
        report.findings.append(finding)
    cutoff = time.time() - STALE_LOCK_SECONDS
    for lock in _lock_files(path):
        try:
            if lock.stat().st_mtime >= cutoff:
                continue
        except FileNotFoundError:
            continue
        finding = Finding("lock", _relative(store, lock), "left by a process that is gone")
        if repair:
            with contextlib.suppress(FileNotFoundError):
                lock.unlink()
            finding.repaired = True
        report.findings.append(finding)


def _packed_writer_running(path: Path) -> bool:
    with flocked(path, PACKED_WRITER, wait=False) as held:
        return not held


def _lock_files(git_path: Path) -> Iterator[Path]:
    for top in ("refs", "objects"):
        for dirpath, _dirs, files in os.walk(git_path / top):
            for name in files:
                if name.endswith(".lock"):
                    yield Path(dirpath) / name
    for name in ("config.lock", "HEAD.lock"):  # packed-refs.lock: `_check_locks`
        if (git_path / name).exists():
            yield git_path / name


def _check_leases(
    store: SessionStore, refs: dict[str, bytes], report: Report, repair: bool
) -> None:
    folder = store.home / "leases"
    for file in sorted(folder.glob("*.lock")) if folder.exists() else []:
        sid = file.stem
        fd = os.open(file, os.O_RDWR)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # a live process holds it
            pid = os.pread(fd, 32, 0).decode("ascii", "replace").partition(" ")[0].strip()
            if not pid and sid in refs:
                continue  # released properly; the file is reused
            detail = f"held by pid {pid}, which is gone" if pid else "its session is gone"
            finding = Finding("lease", sid, detail)
            if repair:
                file.unlink()
                finding.repaired = True
            report.findings.append(finding)
        finally:
            os.close(fd)


def _check_caches(
    store: SessionStore, refs: dict[str, bytes], report: Report, repair: bool
) -> None:
    """Rows of deleted sessions must not linger (a head behind is normal: the next read
    refreshes it; a lost branch's rows are not stale: repair restores it); an unreadable
    cache is reported. Repair deletes the file."""
    queries = {
        "index.sqlite": "SELECT id FROM headers",
        "search.sqlite": "SELECT session FROM meta",
    }
    for name, query in queries.items():
        path = store.home / name
        if not path.exists():
            continue
        try:
            db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            try:
                ids = {row[0] for row in db.execute(query)}
            finally:
                db.close()
        except sqlite3.Error as error:
            problem = f"cannot be read ({error})"
        else:
            lost = {f.subject for f in report.findings if f.kind == "lost"}  # not gone
            stale = len(ids - set(refs) - lost)
            if not stale:
                continue
            problem = f"{stale} rows of sessions that no longer exist"
        finding = Finding("cache", name, problem)
        if repair:
            path.unlink(missing_ok=True)
            finding.repaired = True
        report.findings.append(finding)
