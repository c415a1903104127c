"""Sync: sessions pushed to and pulled from git remotes.

Invariants:
- Nothing is ever lost or forced. A push sends a session only when the remote's branch
  is absent or an ancestor of ours; the remote itself compares each ref with the old
  value the client saw (the git protocol's compare-and-swap; see `store.transport`), and
  a prune is refused if the branch moved since we looked. A pull only creates branches,
  fast-forwards them, or, when both sides changed, makes this home's line a new session
  (a fork: fresh id, `parent_id` the original, `fork_point` the merge base, committed
  through `services.sessions.writer`) and then moves the branch to the remote's line
  (compare-and-swap on ours). So sync converges: the id holds the line the remote took
  first in every home, the other line goes to the remote as the fork on the next push,
  and one divergence makes one fork, whichever homes pull it (bench/convergence.py).
- A session whose lease is held (a running agent) is not moved; it is reported and
  left for the next pull.
- Tombstones win, and nothing is lost. Deleted ids (`store.tombstones`) sync as a set
  union through the remote's `refs/gitsessions/tombstones` (a commit listing them,
  always a fast-forward of the remote's): a pull never creates a session deleted on
  either side, and only `push --prune` deletes remote branches (compare-and-swap on
  their old value). A session live here that the remote lists as deleted is deleted
  here by the pull, holding its lease, but set aside first (`store.trash`: `undelete`
  brings it back as a new session, `gc` drops it after 30 days); when it has history
  the remote never had (its head is not the remote's branch, as listed now or last
  fetched, nor an ancestor of it), that line is instead forked to a new session first,
  which the next push sends. So a hostile remote's tombstone costs a session nothing but a
  new id. A push sends no session the remote lists as deleted (`deleted there`: the
  pull decides). A session whose branch is lost here (this home recorded heads for
  it) is not marked deleted, so `doctor --repair` still restores it (`Report.kept`).
- Nothing leaves unscanned: push checks every file version and commit message it
  sends (only what the remote lacks) with the store's secret rules and refuses, naming
  session, message index and rule (or the file, for an older version), unless
  `allow_secrets` (`services.sync.push_scan`).
- A remote that is down or refuses fails with one line before any branch here moves;
  so does a push or pull without stock git 2.29 or newer (`transport.require_git`),
  which moves every object (`store.transport`).
- A pull loads only what it needs: the secret rules, the writer, the catalog and the
  code-snapshot sync are imported where they are used (a fork, a push, `--code`).
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitsessions.services.sessions.revisions import checked_head
from gitsessions.store import (
    headlog,
    history,
    projectrefs,
    remoteconfig,
    tombstones,
    tracking,
    transport,
)
from gitsessions.store.errors import StoreCorrupt, StoreError
from gitsessions.store.formats import check_header
from gitsessions.store.lease import Lease, SessionInUse
from gitsessions.store.reader import Head, SessionReader
from gitsessions.store.refs import ref_name
from gitsessions.store.tracking import SESSIONS, TOMBSTONES
from gitsessions.store.transport import RemoteError
from gitsessions.values.errors import BadUsage
from gitsessions.values.ids import MAX_TITLE, is_session_id, new_id, short
from gitsessions.values.plural import plural

if TYPE_CHECKING:
    from gitsessions.services.code.code_sync import CodeOutcome
    from gitsessions.store.sessions import SessionStore

    Store = SessionStore | SessionReader

ZERO = b"0" * 40
SWAPPED = "diverged: this home's line"  # a pull's fork: the branch took the remote's line
NOT_SENT = ("diverged", "behind", "refused", "deleted there")  # push results: exit code 1
Progress = Callable[[str], None]


# a lifecycle hook a pull calls for: its event, session, commit and details
HookCall = tuple[str, str, str, dict[str, Any]]


class Outcome:
    """What a sync did to one session (a plain class: `dataclasses` costs a pull's
    start-up 5 ms)."""

    __slots__ = ("detail", "fork", "hooks", "id", "result")

    def __init__(
        self,
        id: str,
        result: str,
        detail: str = "",
        fork: str | None = None,
        hooks: list[HookCall] | None = None,
    ) -> None:
        self.id = id
        # push: new, updated, up to date, diverged, behind, deleted there, pruned, refused;
        # pull: created, updated, unchanged, forked, busy, deleted (by the remote's
        # tombstone), deleted here (not created), refused
        self.result = result
        self.detail = detail
        self.fork = fork
        # the lifecycle hooks it calls for (a pull's forks and deletes), which the caller
        # runs once the pull is done
        self.hooks = hooks or []

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Outcome):
            return NotImplemented
        return self.as_dict() == other.as_dict()

    def __repr__(self) -> str:
        return f"Outcome({self.id!r}, {self.result!r}, {self.detail!r}, {self.fork!r})"

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "result": self.result}
        if self.detail:
            out["detail"] = self.detail
        if self.fork:
            out["fork"] = self.fork
        return out


class Report:
    """What a sync did (a plain class, as `Outcome`)."""

    def __init__(self, remote: str, url: str) -> None:
        self.remote = remote
        self.url = url  # masked
        self.sessions: list[Outcome] = []
        self.remaining_deleted = 0  # push: remote copies of sessions deleted here
        self.tombstones = 0  # deleted ids known after the sync
        self.kept: list[tuple[str, str]] = []  # (id, why): lost here, deleted on the remote
        self.code: list[CodeOutcome] | None = None  # with --code: each session's snapshots

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for outcome in self.sessions:
            out[outcome.result] = out.get(outcome.result, 0) + 1
        return out

    def as_dict(self) -> dict[str, Any]:
        return {
            "remote": self.remote,
            "url": self.url,
            "summary": self.counts(),
            "remaining_deleted": self.remaining_deleted,
            "tombstones": self.tombstones,
            "kept": [{"id": sid, "detail": why} for sid, why in self.kept],
            "sessions": [o.as_dict() for o in self.sessions],
            **({"code": [c.as_dict() for c in self.code]} if self.code is not None else {}),
        }


def _quiet(_line: str) -> None:
    pass


def pick_remote(store: Store, name: str | None) -> str:
    """The named remote, else the only one, else `origin`."""
    known = remoteconfig.remotes(store.git)
    if name is not None:
        remoteconfig.url_of(store.git, name)
        return name
    if len(known) == 1:
        return next(iter(known))
    if "origin" in known:
        return "origin"
    if not known:
        raise BadUsage("no remote yet: gitsessions remote add NAME URL")
    raise BadUsage(f"several remotes ({', '.join(sorted(known))}): name one")


# -- tombstones --------------------------------------------------------------------------


def _merge_tombstones(
    store: Store, name: str, refs: dict[bytes, bytes]
) -> tuple[set[str], set[str], list[tuple[str, str]]]:
    """Fold the remote's deleted ids into ours, except those of sessions live here (a
    pull deletes them: `_delete_here`) and those whose branch is lost here (this home
    recorded heads for them, `headlog`: `doctor --repair` restores them): (every
    deleted id, the remote's, `(id, why)` for each lost one the remote lists)."""
    remote_dead: set[str] = set()
    tip = refs.get(TOMBSTONES)
    if tip is not None and history.has(store.git, tip):
        remote_dead = history.tombstone_ids(store.git, tip)
    live = store.ids()
    local = tombstones.deleted(store.git.path) - live.keys()
    new = remote_dead - local - live.keys()
    lost = new & headlog.heads(store.git.path).keys() if new else set()
    for sid in sorted(new - lost):
        tombstones.record(store.git.path, sid)
    kept = [
        (sid, f"deleted on {name}, but its branch here is lost, not deleted "
         "(`gitsessions doctor --repair` restores it)")
        for sid in sorted(lost)
    ]  # fmt: skip
    return local | (remote_dead - lost), remote_dead, kept


def _remote_had(store: Store, name: str, refs: dict[bytes, bytes], sid: str) -> list[bytes]:
    """The heads the remote is known to have had for `sid`: its branch as listed now and
    as last fetched (each one present here)."""
    git = store.git
    ref = ref_name(sid)
    seen = [refs.get(ref), git.ref(tracking.tracking_prefix(name) + ref[len(b"refs/heads/") :])]
    return [sha for sha in dict.fromkeys(seen) if sha is not None and history.has(git, sha)]


def _delete_here(
    store: Store,
    full: Callable[[], SessionStore],
    name: str,
    refs: dict[bytes, bytes],
    sid: str,
    mine: bytes,
) -> Outcome:
    """A session live here that the remote lists as deleted: set aside (`undelete`
    brings it back), or, when the remote never had all of it, its line forked to a new
    session first (which then holds it all: nothing goes to the trash); left, holding
    nothing, when a running agent holds its lease."""
    from gitsessions.services.sessions import manage

    git = store.git
    try:
        lease = Lease(store.home, sid)
    except SessionInUse:
        why = f"deleted on {name}; in use by a running agent, so left for the next pull"
        return Outcome(sid, "busy", why)
    with lease:
        try:
            writing = full()
            ours = writing.head_at(sid, mine)
            had = _remote_had(store, name, refs, sid)
            forked = None
            if not any(sha == mine or history.is_ancestor(git, mine, sha) for sha in had):
                bases = [history.merge_base(git, mine, sha) for sha in had]
                base = next((b for b in bases if b is not None), None)
                forked = _fork_line(writing, ours, f"deleted on {name}", base)
            fork = forked.id if forked is not None else None
            hooks = _fork_hooks(forked, name)
            if not manage.set_aside(writing, ours, f"deleted on {name}", keep=fork is None):
                why = "changed here meanwhile; pull again"
                return Outcome(sid, "busy", why, fork=fork, hooks=hooks)
            lease.discard()
        except StoreError as error:
            return Outcome(sid, "refused", str(error))
    hooks.append(("post-delete", sid, mine.decode(), {"remote": name, "fork": fork}))
    if fork is not None:
        why = f"deleted on {name}; what {name} never had"
    else:
        why = f"deleted on {name}; `gitsessions undelete {short(sid)}` brings it back"
    return Outcome(sid, "deleted", why, fork, hooks)


def _fetch_tombstones(
    store: Store,
    name: str,
    url: str,
    progress: Progress,
    env: transport.Env,
    *,
    track: bool = True,
    listed: dict[bytes, bytes] | None = None,
) -> tuple[dict[bytes, bytes], set[str], set[str], list[tuple[str, str]]]:
    """The remote's refs (or `listed`, what the caller asked of it), with its tombstone
    commit fetched, tracked (unless the caller writes that ref itself: not `track`), and
    merged into ours (`_merge_tombstones`). The caller holds the store's shared lock."""
    refused: dict[bytes, str] = {}  # a tombstone commit that fails the checks: none
    refs = transport.fetch(
        store.git,
        url,
        lambda r: [r[TOMBSTONES]] if TOMBSTONES in r else [],
        progress,
        name=name,
        env=env,
        listed=listed,
        refused=refused,
    )
    if TOMBSTONES in refs and track and history.has(store.git, refs[TOMBSTONES]):
        tracking.set_tracking(store.git, name, {TOMBSTONES: refs[TOMBSTONES]})
    dead, remote_dead, kept = _merge_tombstones(store, name, refs)
    return refs, dead, remote_dead, kept


# -- push --------------------------------------------------------------------------------


def push(
    store: SessionStore,
    remote: str | None,
    ids: list[str] | None,
    *,
    prune: bool = False,
    allow_secrets: bool = False,
    progress: Progress = _quiet,
    env: transport.Env = None,
) -> Report:
    """Push session branches (`ids`, or all when None); see the module's invariants.
    `env`: the environment stock git runs in (None: this process's)."""
    git = store.git
    transport.require_git(git)
    name = pick_remote(store, remote)
    url = remoteconfig.url_of(git, name)
    local = store.ids()
    chosen = sorted(local) if ids is None else sorted({store.resolve(i) for i in ids})
    report = Report(name, remoteconfig.mask(url))
    with git.locked():
        progress(f"reading {remoteconfig.mask(url)}")
        refs, dead, remote_dead, report.kept = _fetch_tombstones(store, name, url, progress, env)
        report.tombstones = len(dead)
        plan: dict[bytes, tuple[bytes | None, bytes]] = {}  # ref -> (remote old, new)
        outcomes: dict[str, Outcome] = {}
        for sid in chosen:
            if sid in remote_dead:  # a pull deletes it here (forking what is new here)
                why = f"deleted on {name}: run gitsessions pull"
                outcomes[sid] = Outcome(sid, "deleted there", why)
                continue
            outcome, old = _push_decision(store, sid, local[sid], refs.get(ref_name(sid)))
            outcomes[sid] = outcome
            if outcome.result in ("new", "updated"):
                plan[ref_name(sid)] = (old, local[sid])
        sessions_plan = dict(plan)
        for ref, sha in _index(store, outcomes, local).items():
            if refs.get(ref) != sha:
                plan[ref] = (refs.get(ref), sha)
        stale = sorted(sid for sid in dead if sid not in local and ref_name(sid) in refs)
        if prune:
            for sid in stale:
                plan[ref_name(sid)] = (refs[ref_name(sid)], ZERO)
                outcomes[sid] = Outcome(sid, "pruned")
            gone = set(stale)
            for ref, sha in refs.items():
                if projectrefs.session_of(ref) in gone:
                    plan[ref] = (sha, ZERO)
        else:
            report.remaining_deleted = len(stale)
        if dead - remote_dead:
            tip = refs.get(TOMBSTONES)
            commit = history.tombstone_commit(git, dead, [tip] if tip else [], int(time.time()))
            plan[TOMBSTONES] = (tip, commit)
        from gitsessions.store.mainbranch import MAIN_REF

        main = git.ref(MAIN_REF)
        if main is not None and MAIN_REF not in refs:
            plan[MAIN_REF] = (None, main)
        if plan:
            if sessions_plan and not allow_secrets:
                from gitsessions.services.sync.push_scan import scan_sent

                wants = {new for _old, new in plan.values() if new != ZERO}
                haves = {sha for sha in refs.values() if sha != ZERO}
                entries = transport.missing(git, wants, haves, env)
                progress(f"scanning {plural(len(sessions_plan), 'session')} for secrets")
                scan_sent(store, entries, sessions_plan, env)
            progress(f"sending {plural(len(sessions_plan), 'session')}")
            status = transport.send(git, url, plan, progress, env)
            _record_sent(store, name, plan, status, outcomes)
    report.sessions = [outcomes[sid] for sid in sorted(outcomes)]
    return report


def _index(
    store: SessionStore, outcomes: dict[str, Outcome], local: dict[str, bytes]
) -> dict[bytes, bytes]:
    """The project index refs (`projectrefs`) the remote should hold for the sessions
    this push sends or finds up to date: each under its project's keys (a fork with
    none recorded, under its nearest ancestor's)."""
    from gitsessions.services.code.project_id import recorded
    from gitsessions.store.catalog import Catalog

    sending = [sid for sid, o in outcomes.items() if o.result in ("new", "updated", "up to date")]
    if not sending:
        return {}
    headers = {str(h.get("id")): h for h in Catalog(store).headers()}
    wanted: dict[bytes, bytes] = {}
    for sid in sending:
        node, seen = headers.get(sid), set()
        identity = None
        while node is not None and identity is None and node.get("id") not in seen:
            seen.add(node.get("id"))
            identity = recorded(node)
            node = headers.get(str(node.get("parent_id"))) if node.get("parent_id") else None
        for ref in projectrefs.refs_of(sid, identity):
            wanted[ref] = local[sid]
    return wanted


def _push_decision(
    store: SessionStore, sid: str, mine: bytes, theirs: bytes | None
) -> tuple[Outcome, bytes | None]:
    git = store.git
    if theirs is None:
        return Outcome(sid, "new"), None
    if theirs == mine:
        return Outcome(sid, "up to date"), theirs
    related = history.relation(git, mine, theirs) if history.has(git, theirs) else "diverged"
    if related == "ahead":
        return Outcome(sid, "updated"), theirs
    if related == "behind":
        return Outcome(sid, "behind", "run gitsessions pull"), theirs
    return Outcome(sid, "diverged", "run gitsessions pull"), theirs


def _record_sent(
    store: SessionStore,
    name: str,
    plan: dict[bytes, tuple[bytes | None, bytes]],
    status: dict[bytes, str | None],
    outcomes: dict[str, Outcome],
) -> None:
    """Remote-tracking refs follow what the remote accepted; refusals are reported."""
    moved: dict[bytes, bytes | None] = {}
    for ref, (_old, new) in plan.items():
        why = status.get(ref, "not sent")
        sid = ref[len(SESSIONS) :].decode() if ref.startswith(SESSIONS) else None
        if why is None:
            moved[ref] = None if new == ZERO else new
        elif sid is not None and sid in outcomes:
            outcomes[sid] = Outcome(sid, "refused", why)
    if moved:
        from gitsessions.store.mainbranch import MAIN_REF

        tracked = {
            r: s
            for r, s in moved.items()
            if r != MAIN_REF and not r.startswith(projectrefs.PROJECTS)
        }
        tracking.set_tracking(store.git, name, tracked)


# -- pull --------------------------------------------------------------------------------


def pull(
    store: Store,
    remote: str | None,
    *,
    progress: Progress = _quiet,
    env: transport.Env = None,
    writable: Callable[[], SessionStore] | None = None,
    keys: list[bytes] | None = None,
    scope: set[str] | None = None,
) -> Report:
    """Fetch the remote's session branches and bring each here; see the invariants.
    `env`: the environment stock git runs in (None: this process's). `writable`: the
    full store, opened when a fork is to be written (default: `store` itself). `keys`:
    only the sessions the remote's project index lists under them (`pull --here`: one
    project's, asked of the remote by their prefixes alone; `projectrefs`). `scope`:
    the only sessions here a remote's tombstone may delete (None: any).

    Nothing is read for a session whose branch here already holds the remote's
    commit; the branches that move (created, fast-forwarded) and the remote-tracking
    refs go in one `packed-refs` write per 256 branches, each a compare-and-swap."""
    git = store.git
    transport.require_git(git)
    name = pick_remote(store, remote)
    url = remoteconfig.url_of(git, name)
    report = Report(name, remoteconfig.mask(url))
    full = writable or (lambda: store)  # type: ignore[assignment,return-value]
    with git.locked():
        progress(f"reading {remoteconfig.mask(url)}")
        indexed = None if keys is None else transport.fetch_indexed(git, url, keys, progress, env)
        listed, dead, remote_dead, report.kept = _fetch_tombstones(
            store, name, url, progress, env, track=False, listed=indexed
        )
        local = store.ids()
        doomed = {s for s in remote_dead & local.keys() if scope is None or s in scope}
        wants: list[bytes] = []

        def brought(sid: str) -> bool:  # a remote session this pull may bring here
            return sid not in doomed and (sid in local or sid not in dead)

        seen: list[tuple[dict[bytes, bytes], dict[str, bytes]]] = []  # refs, their sessions

        def wanted(refs: dict[bytes, bytes]) -> list[bytes]:
            seen[:] = [(refs, _sessions(refs))]
            wants[:] = [
                sha for sid, sha in seen[0][1].items() if local.get(sid) != sha and brought(sid)
            ]
            return wants

        refused: dict[bytes, str] = {}  # commits whose objects failed the checks: why
        refs = transport.fetch(
            git, url, wanted, progress, name=name, env=env, listed=listed,
            track=False, refused=refused,
        )  # fmt: skip
        remote_sessions = seen[0][1] if seen and seen[0][0] is refs else _sessions(refs)
        theirs = {s: sha for s, sha in remote_sessions.items() if brought(s)}
        tracked: dict[bytes, bytes | None] = {
            ref_name(s): sha for s, sha in theirs.items() if sha not in refused
        }
        if TOMBSTONES in refs and history.has(git, refs[TOMBSTONES]):
            tracked[TOMBSTONES] = refs[TOMBSTONES]
        report.tombstones = len(dead)
        progress(f"merging {plural(len(theirs), 'session')}")
        outcomes: dict[str, Outcome] = {}
        arriving: dict[str, bytes] = {}
        behind: dict[str, tuple[bytes, bytes]] = {}  # id -> (ours, theirs): fast-forwards
        for sid, sha in sorted(remote_sessions.items()):
            mine = local.get(sid)
            if sid not in theirs:
                outcomes[sid] = Outcome(sid, "deleted here", "not created")
            elif sha in refused:
                outcomes[sid] = Outcome(sid, "refused", refused[sha])
            elif mine == sha:
                outcomes[sid] = Outcome(sid, "unchanged")
            elif mine is None:
                arriving[sid] = sha
            else:
                outcome = _bring(store, full, name, sid, mine, sha)
                if outcome is None:
                    behind[sid] = (mine, sha)
                else:
                    outcomes[sid] = outcome
        for sid in sorted(doomed):
            outcomes[sid] = _delete_here(store, full, name, refs, sid, local[sid])
            had = [] if outcomes[sid].result == "deleted" else _remote_had(store, name, refs, sid)
            if had:  # left here: the next pull still knows what the remote had of it
                tracked[ref_name(sid)] = had[0]
        for sid, why in _check_arriving(store, arriving, env).items():
            if why is not None:
                outcomes[sid] = Outcome(sid, "refused", why)
        new = {sid: sha for sid, sha in arriving.items() if sid not in outcomes}
        replace = keys is None  # one project's pull leaves the others' tracking refs alone
        outcomes |= _move(store, new, behind, tracking.Tracking(name, tracked, replace=replace))
    if wants and getattr(store, "background_maintenance", True):
        _maintain(store)
    report.sessions = [outcomes[sid] for sid in sorted(outcomes)]
    return report


def _move(
    store: Store,
    new: dict[str, bytes],
    behind: dict[str, tuple[bytes, bytes]],
    tracked: tracking.Tracking,
    batch: int = 256,
) -> dict[str, Outcome]:
    """Create the sessions `new` here and fast-forward those `behind`, each branch by
    compare-and-swap, `batch` branches a `packed-refs` write (the first also writes
    `tracked`). A fast-forward holds the session's lease: one a running agent holds
    is left for the next pull."""
    git = store.git
    outcomes: dict[str, Outcome] = {}
    order = sorted({*new, *behind})
    for start in range(0, max(len(order), 1), batch):
        with contextlib.ExitStack() as leases:
            moves: dict[bytes, tuple[bytes | None, bytes]] = {}
            for sid in order[start : start + batch]:
                if sid in new:
                    moves[ref_name(sid)] = (None, new[sid])
                    continue
                try:
                    leases.enter_context(Lease(store.home, sid))
                except SessionInUse:
                    why = "in use by a running agent; left for the next pull"
                    outcomes[sid] = Outcome(sid, "busy", why)
                    continue
                moves[ref_name(sid)] = behind[sid]
            moved = tracking.update_refs_if_equal(git, moves, tracked if start == 0 else None)
        for ref in moves:
            sid = ref[len(SESSIONS) :].decode()
            if ref in moved:
                outcomes[sid] = Outcome(sid, "created" if sid in new else "updated")
            elif sid in new:
                outcomes[sid] = Outcome(sid, "busy", "created here meanwhile; pull again")
            else:
                outcomes[sid] = Outcome(sid, "busy", "changed here meanwhile; pull again")
    return outcomes


def _maintain(store: Store) -> None:
    """What a pull fetched piles up like a writer's commits (packs, here): background
    maintenance merges them past the same thresholds."""
    from gitsessions.store import background, piles

    if piles.needs_maintenance(store.git.path):
        background.schedule(store.git.path)


def _sessions(refs: dict[bytes, bytes]) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    for ref, sha in refs.items():
        if ref.startswith(SESSIONS):
            sid = ref[len(SESSIONS) :].decode("ascii", "replace")
            if is_session_id(sid):
                out[sid] = sha
    return out


def _bring(
    store: Store,
    full: Callable[[], SessionStore],
    name: str,
    sid: str,
    mine: bytes,
    theirs: bytes,
) -> Outcome | None:
    """A session both sides have, at different commits: None when ours is behind the
    remote's (the caller fast-forwards it), else what happened to it. Diverged: our line
    becomes a fork (written through `full()`, the full store), then the branch moves to
    the remote's line, holding the lease (a branch that moved here meanwhile stays, and
    the next pull forks its newer line)."""
    git = store.git
    try:
        checked_head(store, sid, theirs)  # the remote's line is a readable session of sid
        relation = history.relation(git, mine, theirs)
        if relation == "behind":
            return None
        if relation == "ahead":
            return Outcome(sid, "unchanged")
        try:
            lease = Lease(store.home, sid)
        except SessionInUse:
            return Outcome(sid, "busy", "in use by a running agent; left for the next pull")
        with lease:
            writing = full()
            base = history.merge_base(git, mine, theirs)
            ours = writing.head_at(sid, mine)
            fork = _fork_line(writing, ours, f"diverged from {name}", base)
            ref = ref_name(sid)
            why = SWAPPED
            if ref not in tracking.update_refs_if_equal(git, {ref: (mine, theirs)}):
                why = "diverged; changed here meanwhile, so it stays: pull again"
            return Outcome(sid, "forked", why, fork=fork.id, hooks=_fork_hooks(fork, name))
    except RemoteError:
        raise
    except StoreError as error:
        return Outcome(sid, "refused", str(error))


def _check_arriving(
    store: Store, arriving: dict[str, bytes], env: transport.Env
) -> dict[str, str | None]:
    """`{id: None when the remote's head of a session new here is a readable header of
    that id, else why not}`, as `checked_head` decides, all headers read in one go."""
    order = sorted(arriving)
    raws = transport.files_at(store.git, [(arriving[sid], "session.json") for sid in order], env)
    out: dict[str, str | None] = {}
    for sid, raw in zip(order, raws, strict=True):
        try:
            if raw is None:
                raise StoreCorrupt(f"session {sid[:8]}: session.json is missing")
            try:
                header = json.loads(raw)
            except ValueError as error:
                raise StoreCorrupt(f"session.json of {short(sid)}: {error}") from None
            if not isinstance(header, dict):
                raise StoreCorrupt(f"session {sid[:8]}: session.json is missing")
            check_header(header, sid)
            if header.get("id") != sid:
                raise StoreError(f"the remote's branch of {short(sid)} holds another session")
            out[sid] = None
        except StoreError as error:
            out[sid] = str(error)
    return out


def _fork_line(writing: SessionStore, ours: Head, why: str, base: bytes | None) -> Head:
    """This home's line of a session made a new session by a pull (`why` marks its
    title), its fork point `base`, the last commit the remote had of it."""
    from gitsessions.services.sessions import writer
    from gitsessions.values.clock import now_iso

    title = _fork_title(ours, why)
    return writer.fork(
        writing, ours, new_id(), title=title, created_at=now_iso(), fork_point=base,
        operation="pull",
    )  # fmt: skip


def _fork_hooks(fork: Head | None, remote: str) -> list[HookCall]:
    """The post-fork hook call for a fork a pull made (none for None)."""
    from gitsessions.services.sessions.manage import fork_details

    if fork is None:
        return []
    return [("post-fork", fork.id, fork.commit.decode(), {**fork_details(fork), "remote": remote})]


def _fork_title(head: Head, why: str) -> str:
    title = str(head.header.get("title") or short(head.id))
    mark = f" ({why})"
    return title[: MAX_TITLE - len(mark)] + mark


# -- code snapshots ----------------------------------------------------------------------


def push_snapshots(
    store: SessionStore, report: Report, code_remote: str, env: Mapping[str, str], here: Path
) -> None:
    """After a push: each session it covered sends its code snapshots too."""
    from gitsessions.services.code.code_sync import CodeSession, push_code

    sessions = [
        CodeSession(o.id, o.id, store.head(o.id).header.get("workspace") or {})
        for o in report.sessions
        if o.result in ("new", "updated", "up to date")
    ]
    from gitsessions.services.code.workspace import project_of

    report.code = push_code(sessions, code_remote, env, project_of(here, env))


def fetch_snapshots(
    store: Store, report: Report, code_remote: str, env: Mapping[str, str], here: Path
) -> None:
    """After a pull: each session it brought fetches its code snapshots (a diverged
    one's here go to the fork that now holds this home's line first)."""
    from gitsessions.services.code.code_sync import CodeSession, fetch_code

    sessions: list[CodeSession] = []
    for o in report.sessions:
        if o.result in ("created", "updated"):
            sessions.append(CodeSession(o.id, o.id, store.head(o.id).header.get("workspace") or {}))
        elif o.result == "forked" and o.fork and o.detail == SWAPPED:  # else it stays here
            workspace = store.head(o.id).header.get("workspace") or {}
            sessions.append(CodeSession(o.id, o.id, workspace, kept_as=o.fork))
    from gitsessions.services.code.workspace import project_of

    report.code = fetch_code(sessions, code_remote, env, project_of(here, env))


# -- remotes -----------------------------------------------------------------------------


def add_remote(store: SessionStore, name: str, url: str, cwd: Path) -> str:
    """Configure a remote; returns its URL as stored (a local path made absolute)."""
    from gitsessions.services.sessions import writer

    url = remoteconfig.normalize(url, cwd)
    writer.audited(
        store, "remote add", None, lambda: remoteconfig.add(store.git, name, url), remote=name
    )
    return url


def list_remotes(store: SessionStore) -> list[dict[str, str]]:
    """Each remote with its URL masked and its kind."""
    return [
        {"name": name, "url": remoteconfig.mask(url), "kind": remoteconfig.kind(url)}
        for name, url in sorted(remoteconfig.remotes(store.git).items())
    ]


def remove_remote(store: SessionStore, name: str) -> int:
    """Forget a remote and its remote-tracking refs (nothing on the remote changes)."""
    from gitsessions.services.sessions import writer

    return writer.audited(
        store, "remote remove", None, lambda: remoteconfig.remove(store.git, name), remote=name
    )
