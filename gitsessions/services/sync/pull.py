"""Pull: the remote's session branches brought here, never forced, never lost.

Invariants:
- A pull only creates branches, fast-forwards them, or, when both sides changed, forks
  this home's line into a new session through the writer (forks.py) and moves the branch
  to the remote's (compare-and-swap): every home converges, one divergence one fork
  (bench/convergence.py).
- A session whose lease is held is left and reported; tombstones are merged first.
- What arrives is checked before a branch names it (`checked_head`, refused objects).
- A remote down or refusing, or git older than 2.29, is one line before anything moves.
- Loads only what it needs (writer, catalog, code sync imported where used; the secret
  rules only when sessions arrive, for search's redacted text); nothing read for a
  session whose branch holds the remote's commit; what it reads of a session new here
  (`store.arrivals`, in batches) fills the listing cache and search's index
  (`search_fill`: a search after it reads none of them).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, cast

from gitsessions.services.sessions.revisions import checked_head
from gitsessions.services.sync.deletions import delete_here, fetch_tombstones, remote_had
from gitsessions.services.sync.forks import fork_hooks, fork_line
from gitsessions.services.sync.remotes import pick_remote
from gitsessions.services.sync.report import SWAPPED, Outcome, Progress, Report, quiet
from gitsessions.store import here, history, remoteconfig, tracking, transport
from gitsessions.store.errors import StoreError
from gitsessions.store.lease import Lease, SessionInUse
from gitsessions.store.refnames import is_session_branch
from gitsessions.store.refs import ref_name
from gitsessions.store.tracking import SESSIONS, TOMBSTONES
from gitsessions.store.transport import RemoteError
from gitsessions.values.plural import plural

if TYPE_CHECKING:
    from gitsessions.store.reader import SessionReader
    from gitsessions.store.sessions import SessionStore

    Store = SessionStore | SessionReader


def pull(
    store: Store,
    remote: str | None,
    *,
    progress: Progress = quiet,
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
    the only sessions here a remote's tombstone may delete (None: any). Nothing is read
    for a session whose branch here already holds the remote's commit; the refs it
    writes are compare-and-swaps in one `packed-refs` write, or loose files when few
    (`_move`, `tracking.update_refs_if_equal`)."""
    git = store.git
    transport.require_git(git)
    name = pick_remote(store, remote)
    url = remoteconfig.url_of(git, name)
    report = Report(name, remoteconfig.mask(url))
    full = writable or (lambda: cast("SessionStore", store))  # no `writable`: a full store
    with git.locked():
        progress(f"reading {remoteconfig.mask(url)}")
        indexed = None if keys is None else transport.fetch_indexed(git, url, keys, progress, env)
        local = store.ids()  # read once: the tombstones' merge takes it too (`live`)
        listed, dead, remote_dead = fetch_tombstones(
            store, name, url, progress, env, track=False, listed=indexed, report=report, live=local
        )
        here.start(store.home, local.keys)  # what it brings is not this home's
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
        outcomes, arriving, behind = _judge(
            store, full, name, remote_sessions, theirs, local, refused
        )
        for sid in sorted(doomed):
            outcomes[sid] = delete_here(store, full, name, refs, sid, local[sid])
            had = [] if outcomes[sid].result == "deleted" else remote_had(store, name, refs, sid)
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


def _judge(
    store: Store,
    full: Callable[[], SessionStore],
    name: str,
    remote_sessions: dict[str, bytes],
    theirs: dict[str, bytes],
    local: dict[str, bytes],
    refused: dict[bytes, str],
) -> tuple[dict[str, Outcome], dict[str, bytes], dict[str, tuple[bytes, bytes]]]:
    """Each session the remote lists (`theirs`: those this pull may bring), judged: (the
    outcomes decided now, a diverged one forked by `_bring`; those new here; those
    behind, `id -> (ours, theirs)`, to fast-forward)."""
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
    return outcomes, arriving, behind


def _move(
    store: Store,
    new: dict[str, bytes],
    behind: dict[str, tuple[bytes, bytes]],
    tracked: tracking.Tracking,
    batch: int = 256,
) -> dict[str, Outcome]:
    """Create the sessions `new` here and fast-forward those `behind`, each branch by
    compare-and-swap: every creation, `tracked` and the first `batch` fast-forwards in
    one `packed-refs` write (one transaction; loose files when few:
    `tracking.update_refs_if_equal`), further fast-forwards `batch` a write (a
    fast-forward holds the session's lease and its branch's flock: a file each). One a
    running agent holds is left for the next pull."""
    git = store.git
    outcomes: dict[str, Outcome] = {}
    order = sorted(behind)
    for start in range(0, max(len(order), 1), batch):
        with contextlib.ExitStack() as leases:
            moves: dict[bytes, tuple[bytes | None, bytes]] = {}
            if start == 0:
                moves = {ref_name(sid): (None, sha) for sid, sha in new.items()}
            for sid in order[start : start + batch]:
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
    """The session branches of a listing: `{id: sha}`."""
    out: dict[str, bytes] = {}
    for ref, sha in refs.items():
        if is_session_branch(ref):
            out[ref[len(SESSIONS) :].decode()] = sha
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
            fork = fork_line(writing, ours, f"diverged from {name}", base)
            ref = ref_name(sid)
            why = SWAPPED
            if ref not in tracking.update_refs_if_equal(git, {ref: (mine, theirs)}):
                why = "diverged; changed here meanwhile, so it stays: pull again"
            return Outcome(sid, "forked", why, fork=fork.id, hooks=fork_hooks(fork, name))
    except RemoteError:
        raise
    except StoreError as error:
        return Outcome(sid, "refused", str(error))


def _check_arriving(
    store: Store, arriving: dict[str, bytes], env: transport.Env
) -> dict[str, str | None]:
    """`{id: None when the remote's head of a session new here is a readable header of
    that id, else why not}`, as `checked_head` decides, the headers read in batches
    (`arrivals`); each accepted one's row goes into the listing cache now, before its
    branch is made (a row of a branch that never came is dropped by the next listing),
    and so does its text into search's index (`search_fill`)."""
    if not arriving:
        return {}
    from gitsessions.services.sessions import search_fill  # sqlite: only when sessions arrive
    from gitsessions.store import arrivals, catalog
    from gitsessions.store.sessions import SessionStore

    out: dict[str, str | None] = {}

    texts: arrivals.Texts | None = None
    if isinstance(store, SessionStore):  # its redaction setting known: search's
        full = store
        texts = lambda batch, reads: search_fill.fill(full, batch, env, reads)  # noqa: E731

    def rows() -> Iterator[catalog.Row]:
        for batch in arrivals.read(store.git, arriving, env, texts):
            for arrival in batch:
                out[arrival.id] = arrival.why
                if arrival.header is not None and arrival.prompt is not None:
                    commit = arrival.commit.decode()
                    yield catalog.row(arrival.id, commit, arrival.header, arrival.prompt)

    catalog.fill(store.home, rows())
    return out


def fetch_snapshots(
    store: Store,
    report: Report,
    code_remote: str,
    env: Mapping[str, str],
    here: Path,
    lacking: Iterable[str] = (),
) -> None:
    """After a pull: each session it brought fetches its code snapshots (a diverged
    one's here go to the fork that now holds this home's line first); so does each of
    `lacking` (the current project's sessions) whose snapshot ref the repository lacks."""
    from gitsessions.services.code.code_sync import CodeSession, fetch_code

    sessions: list[CodeSession] = []
    for o in report.sessions:
        if o.result in ("created", "updated"):
            sessions.append(CodeSession(o.id, o.id, store.head(o.id).header.get("workspace") or {}))
        elif o.result == "forked" and o.fork and o.detail == SWAPPED:  # else it stays here
            workspace = store.head(o.id).header.get("workspace") or {}
            sessions.append(CodeSession(o.id, o.id, workspace, kept_as=o.fork))
    changed = {s.id for s in sessions}
    for sid in dict.fromkeys(lacking):
        if sid not in changed and store.exists(sid):
            workspace = store.head(sid).header.get("workspace") or {}
            sessions.append(CodeSession(sid, sid, workspace, if_missing=True))
    from gitsessions.services.code.workspace import project_of

    report.code = fetch_code(sessions, code_remote, env, project_of(here, env))
