"""Objects moved to and from a remote by stock git (`stockgit`): refs listed, commits
fetched by id, branches pushed, and the walks around them.

Invariants:
- Git 2.29 or newer does every transfer; else one line before anything happens
  (`require_git`).
- Fetched objects are written under the store's shared lock, into a quarantine of no
  refs but the commits offered (`incoming`: git's walks there are in proportion to what
  comes, not to the store's refs), moved into the store once there and named by a ref
  before the lock is released (a failed pull may leave them unnamed for a later purge).
- Nothing fetched is named unchecked: git's checks, then `treecheck`; when a batch is
  refused each commit is fetched alone, the refused ones reported, the others come.
- The remote's refs move only by compare-and-swap, never forced; a prune is leased.
- Only layout names are taken from a listing (`refnames.sort_listing`); bad ones are
  handed back (`ignored`) to be said in one line.
- Every failure is one `RemoteError` line, URL masked.
"""

from __future__ import annotations

import contextlib
import shutil
import time
from collections.abc import Callable, Iterator, Mapping

from gitsessions.store import history, incoming, refnames, stockgit, treecheck
from gitsessions.store.errors import StoreError
from gitsessions.store.projectrefs import PROJECTS, session_of
from gitsessions.store.refpack import current as ref_value
from gitsessions.store.refpack import read_loose, read_packed
from gitsessions.store.refs import session_refs
from gitsessions.store.remoteconfig import clean, mask
from gitsessions.store.repo import GitStore
from gitsessions.store.tracking import (
    SESSIONS,
    TOMBSTONES,
    Git,
    sending,
    set_tracking,
    tracking_name,
)

ZERO_SHA = b"0" * 40
Entry = tuple[bytes, int, bytes]  # hex id, object type, path (`maintenance.Entry`)
FEW = 200  # objects looked up one by one (`present`); more: by one stock git process
OFFER_ALL = 1000  # session heads offered as common ground at most (`_tips`)
PUSH_BATCH = 2000  # refs per `git push` (its arguments stay well under the OS limit)
Progress = Callable[[str], None]
Env = Mapping[str, str] | None  # the environment stock git runs in (None: this one's)


class RemoteError(StoreError):
    """A remote could not be reached, or refused what was asked; nothing changed here."""


class GitRequired(StoreError):
    """Stock git is missing or older than push and pull need; nothing was done."""


def require_git(store: GitStore | Git | None = None) -> None:
    """Stop with one line unless stock git, new enough, is on PATH (its version noted
    in the store, when given: `stockgit.remember_version`)."""
    if shutil.which("git") is None:
        raise GitRequired("push and pull need git on PATH")
    if store is not None:
        stockgit.remember_version(store.path)
    if stockgit.version() < stockgit.MIN_VERSION:
        found = stockgit.version_text() or "a git that does not say its version"
        wanted = ".".join(str(n) for n in stockgit.MIN_VERSION)
        raise GitRequired(f"push and pull need git {wanted} or newer (found {found})")


@contextlib.contextmanager
def _talking(url: str, what: str) -> Iterator[None]:
    """Any failure of the transport becomes one `RemoteError` line with the URL masked."""
    shown = mask(url)
    try:
        yield
    except stockgit.GitFailed as error:
        reason = str(error)
        if "does not appear to be a git repository" in reason:
            reason = "not a git repository (create one with `git init --bare`)"
        raise RemoteError(f"cannot {what} {shown}: {clean(reason, url)}") from None
    except OSError as error:
        reason = error.strerror or str(error) or type(error).__name__
        raise RemoteError(f"cannot {what} {shown}: {clean(reason, url)}") from None


def _report(progress: Progress | None, url: str, every: float = 1.0) -> stockgit.Relay | None:
    """git's progress as lines for `progress`, at most one a second (it reports every
    object: 140,000 lines for a 1,000-session pull), but each `done`; the secrets of
    `url` masked wherever they appear."""
    if progress is None:
        return None
    last = [0.0]

    def relay(data: bytes) -> None:
        for line in data.decode("utf-8", "replace").replace("\r", "\n").split("\n"):
            line = line.strip()
            now = time.monotonic()
            if line and (now - last[0] >= every or line.endswith(("done.", "done"))):
                last[0] = now
                progress(clean(line, url))

    return relay


def fetch(
    git: Git,
    url: str,
    wants: Callable[[dict[bytes, bytes]], list[bytes]],
    progress: Progress | None = None,
    *,
    name: str,
    env: Env = None,
    listed: dict[bytes, bytes] | None = None,
    track: bool = True,
    refused: dict[bytes, str] | None = None,
    ignored: set[bytes] | None = None,
) -> dict[bytes, bytes]:
    """Fetch the commits `wants(remote refs)` names (and all they need) into the store;
    returns the remote's refs as listed (or `listed`, the caller's listing just
    before, of the layout's names alone: a `fetch`'s or `fetch_indexed`'s). The
    commits the store lacks are fetched by their ids (git writes no ref: a thousand
    loose ones cost it a second, and matching a thousand names more), and
    the remote-tracking refs of `name` set for what came, unless not `track` (the
    caller's own write names them). A wanted commit whose objects fail the checks is
    left out and put in `refused` (`{commit: why}`); without `refused`, that fails the
    fetch (`RemoteError`). A ref that moved on the remote since the listing is fetched
    as listed (protocol v2 serves any id it has; a v0-only server refuses it, and the
    pull fails with one line: run it again). Only the refs of the store's layout are
    listed; the bad names the remote gave go into `ignored` (`refnames.sort_listing`).
    The caller holds `git.locked()`."""
    stockgit.remember_version(git.path)
    with _talking(url, "fetch from"):
        refs, bad_names = (
            refnames.sort_listing(stockgit.ls_remote(git.path, url, env))
            if listed is None
            else (listed, [])  # the caller's: of the layout already
        )
        if ignored is not None:
            ignored.update(bad_names)
        asked = set(wants(refs))
        wanted = asked - present(git, asked, env)
        chosen = sorted(ref for ref, sha in refs.items() if sha in wanted)
        if not chosen:
            return refs
        relay = _report(progress, url)
        bad: dict[bytes, str] = {}
        with incoming.quarantine(git.path, _tips(git, name, chosen)) as stage:
            try:
                stockgit.fetch(stage, url, sorted(wanted), env, relay)
            except stockgit.ObjectsRefused:
                if refused is None:
                    raise
                for sha in sorted(wanted):  # each alone: which ones are bad
                    try:
                        stockgit.fetch(stage, url, [sha], env, relay)
                    except stockgit.ObjectsRefused as alone:
                        bad[sha] = str(alone)
            incoming.admit(stage, git.path)
            git.rescan()
            here = present(git, wanted, env)
            bad |= treecheck.refused(stage, sorted(here - bad.keys()), env)
    if bad and refused is None:
        raise RemoteError(f"cannot fetch from {mask(url)}: {next(iter(bad.values()))}")
    lacking = sorted(wanted - bad.keys() - here)
    if lacking:
        raise RemoteError(
            f"cannot fetch from {mask(url)}: commit {lacking[0].decode()[:12]} did not come"
        )
    if refused is not None:
        refused |= bad
    if track:
        set_tracking(git, name, {ref: refs[ref] for ref in chosen if refs[ref] not in bad})
    return refs


def present(git: Git, ids: set[bytes], env: Env = None) -> set[bytes]:
    """Those of `ids` the store holds: one `cat-file --batch-check` for thousands (a
    lookup each through the packs' indexes costs more past a few hundred)."""
    if len(ids) < FEW:
        return {sha for sha in ids if history.has(git, sha)}
    listing = b"".join(sha + b"\n" for sha in sorted(ids))
    out = stockgit.run(
        git.path, ["cat-file", "--batch-check=%(objectname) %(objecttype)"], env, listing
    )
    return {line[:40] for line in out.splitlines() if line[41:] != b"missing"} & ids


def fetch_indexed(
    git: Git, url: str, keys: list[bytes], progress: Progress | None = None, env: Env = None
) -> dict[bytes, bytes]:
    """One project's sessions and the tombstones, asked of the remote by its project
    index (`projectrefs`) alone: `{session branch or TOMBSTONES: commit}`, as a listing
    for `fetch` (`listed`), their objects already here and checked (a refusal fails the
    whole fetch: one `RemoteError`). git writes what came under this process's
    `sending` space, dropped before this returns. The caller holds `git.locked()`."""
    stockgit.remember_version(git.path)
    listed: dict[bytes, bytes] = {}
    with _talking(url, "fetch from"), sending(git, {}) as space:
        specs = [f"+{PROJECTS.decode()}{key.decode()}/*:{space.decode()}index/{key.decode()}/*"
                 for key in keys]  # fmt: skip
        specs.append(f"+{TOMBSTONES.decode()}*:{space.decode()}tombstones*")
        stockgit.fetch_refspecs(git.path, url, specs, env, _report(progress, url))
        came = {
            **read_packed(git.path / "packed-refs", strict=False),
            **read_loose(git.path, space),
        }
        for ref, sha in sorted(came.items()):
            if ref == space + b"tombstones":
                listed[TOMBSTONES] = sha
            elif ref.startswith(space + b"index/"):
                sid = session_of(PROJECTS + ref[len(space) + len(b"index/") :])
                if sid is not None:
                    listed.setdefault(SESSIONS + sid.encode(), sha)
        git.rescan()
        bad = treecheck.refused(git.path, sorted(set(listed.values())), env)
    if bad:
        raise RemoteError(f"cannot fetch from {mask(url)}: {next(iter(bad.values()))}")
    return listed


def _tips(git: Git, name: str, chosen: list[bytes]) -> list[bytes]:
    """The commits offered as common ground for `chosen`: what this store has of each
    (its branch, its remote-tracking ref); for one new here (a fork may share history
    with any session), every session's head too while there are at most `OFFER_ALL`
    (past that, offering them all costs a walk of them all, and git's negotiation
    gives up before it finds the few that matter)."""
    tips: list[bytes] = []
    new = False
    for ref in chosen:
        here = [ref_value(git.path, r) for r in (ref, tracking_name(name, ref))]
        new = new or not any(here)
        tips += [sha for sha in here if sha is not None]
    if new:
        heads = session_refs(git.path)
        if len(heads) <= OFFER_ALL:
            tips += heads.values()
    return tips


def send(
    git: GitStore,
    url: str,
    plan: dict[bytes, tuple[bytes | None, bytes]],
    progress: Progress | None = None,
    env: Env = None,
) -> dict[bytes, str | None]:
    """Push `{ref: (the remote's value when looked at, or None; new)}` (ZERO_SHA
    deletes): each update is a compare-and-swap on the old value (the remote refuses a
    ref that moved since). Returns `{ref: None when it moved, else why not}`."""
    status: dict[bytes, str | None] = {}
    refs = sorted(plan)
    with _talking(url, "push to"):
        for start in range(0, len(refs), PUSH_BATCH):
            batch = {ref: plan[ref] for ref in refs[start : start + PUSH_BATCH]}
            sessions = {r: new for r, (_o, new) in batch.items() if _sent_by_glob(r, new)}
            with sending(git, sessions) as space:
                status |= stockgit.push(
                    git.path, url, batch, env, _report(progress, url), space, set(sessions)
                )
    return status


def _sent_by_glob(ref: bytes, new: bytes) -> bool:
    return ref.startswith((SESSIONS, PROJECTS)) and new != ZERO_SHA


def missing(git: GitStore, wants: set[bytes], haves: set[bytes], env: Env = None) -> list[Entry]:
    """The objects `wants` need that the remote lacks, knowing it has `haves` (those the
    store has too): git's own walk (`rev-list --objects`)."""
    known = sorted(sha for sha in haves if history.has(git, sha))
    try:
        return stockgit.objects(git.path, sorted(wants), known, env)
    except stockgit.GitFailed as error:
        raise StoreError(f"cannot list what a push sends: {error}") from None


def contents(git: Git, ids: list[bytes], env: Env = None) -> Iterator[bytes]:
    """The raw content of each object, in order (`cat-file --batch`)."""
    try:
        for sha, raw in zip(ids, stockgit.contents(git.path, ids, env), strict=True):
            if raw is None:
                raise StoreError(f"object {sha.decode()[:12]} is missing from the store")
            yield raw
    except stockgit.GitFailed as error:
        raise StoreError(f"cannot read what a push sends: {error}") from None


def hinted(
    git: Git, ids: list[bytes], needles: tuple[bytes, ...], env: Env = None
) -> set[int] | None:
    """The indexes of the objects in `ids` that hold one of `needles` in any ASCII case,
    searched by stock git and grep without reading the objects here; None when there
    is no grep (the caller reads and searches them itself)."""
    try:
        return stockgit.hinted(git.path, ids, needles, env)
    except stockgit.GitFailed as error:
        raise StoreError(f"cannot read what a push sends: {error}") from None


def sizes_of(git: Git, names: list[bytes], env: Env = None) -> list[int | None]:
    """The size of each object named (an id, or `<commit>:<path>`), None where there is
    none, asked of stock git in one go (`cat-file --batch-check`)."""
    if not names:
        return []
    listing = b"".join(name + b"\n" for name in names)
    try:
        out = stockgit.run(git.path, ["cat-file", "--batch-check=%(objectsize)"], env, listing)
    except stockgit.GitFailed as error:
        raise StoreError(f"cannot read fetched sessions: {error}") from None
    sizes = [int(line) if line.isdigit() else None for line in out.splitlines()]
    if len(sizes) != len(names):
        raise StoreError(f"cannot read fetched sessions: git sized {len(sizes)} of {len(names)}")
    return sizes


def contents_of(git: Git, names: list[bytes], env: Env = None) -> list[bytes | None]:
    """The content of each object named (an id, or `<commit>:<path>`), None where there
    is none, read by stock git in one go."""
    try:
        return list(stockgit.contents(git.path, names, env))
    except stockgit.GitFailed as error:
        raise StoreError(f"cannot read fetched sessions: {error}") from None
