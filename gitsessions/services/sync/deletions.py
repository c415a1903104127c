"""Deleted ids across homes: the remote's tombstones merged into ours, and a pull's delete
of a session live here that the remote lists as deleted.

Invariants:
- Tombstones win and nothing is lost: ids sync through `refs/gitsessions/tombstones`
  (always fast-forwarded); a pull never creates a session deleted on either side.
- Bounded: at most `MAX_LEARNED` new ids recorded a pull, in one write. Ids no session
  here ever had are forwarded only to a remote holding a branch of them (`forwarded`).
- A session live here that the remote deleted is set aside first (`store.trash`), or,
  when it holds history the remote never had, that line is forked to a new session
  first: a hostile tombstone costs a session only its id.
- A session whose branch is lost here (recorded in `headlog`) is not marked deleted, so
  `doctor --repair` can still restore it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from gitsessions.services.sync.forks import fork_hooks, fork_line
from gitsessions.services.sync.report import Outcome, Progress, Report
from gitsessions.store import headlog, history, tombstones, tracking, transport
from gitsessions.store.errors import StoreError
from gitsessions.store.lease import Lease, SessionInUse
from gitsessions.store.refs import ref_name
from gitsessions.store.tracking import TOMBSTONES
from gitsessions.values.ids import short

MAX_LEARNED = 10_000  # deleted ids a remote's tombstones may add here in one pull

if TYPE_CHECKING:
    from gitsessions.store.reader import SessionReader
    from gitsessions.store.sessions import SessionStore

    Store = SessionStore | SessionReader


def merge_tombstones(
    store: Store,
    name: str,
    refs: dict[bytes, bytes],
    report: Report | None = None,
    live: dict[str, bytes] | None = None,
) -> tuple[set[str], set[str]]:
    """Fold the remote's deleted ids into ours, except those of sessions live here (a
    pull deletes them: `delete_here`; `live`: the caller's `store.ids()`, taken under
    the same lock) and those whose branch is lost here (this home
    recorded heads for them, `headlog`: `doctor --repair` restores them, said in
    `report.kept`): (every deleted id, the remote's). The ids recorded are `LEARNED`
    ones (this home never had those sessions), at most `MAX_LEARNED` a call (those the
    remote also lists a branch of first), in one write; how many wait for the next
    pull goes in `report.tombstones_deferred`. Every one of the remote's counts as
    deleted for this pull all the same."""
    remote_dead: set[str] = set()
    tip = refs.get(TOMBSTONES)
    if tip is not None and history.has(store.git, tip):
        remote_dead = history.tombstone_ids(store.git, tip)
    live = store.ids() if live is None else live
    local = tombstones.deleted(store.git.path) - live.keys()
    new = remote_dead - local - live.keys()
    lost = new & headlog.heads(store.git.path).keys() if new else set()
    order = sorted(new - lost, key=lambda sid: (ref_name(sid) not in refs, sid))
    tombstones.record_learned(store.git.path, order[:MAX_LEARNED])
    if report is not None:
        report.tombstones_deferred = max(len(order) - MAX_LEARNED, 0)
        report.kept = [
            (sid, f"deleted on {name}, but its branch here is lost, not deleted "
             "(`gitsessions doctor --repair` restores it)")
            for sid in sorted(lost)
        ]  # fmt: skip
    return local | (remote_dead - lost), remote_dead


def forwarded(
    store: Store, dead: set[str], remote_dead: set[str], refs: dict[bytes, bytes]
) -> set[str]:
    """The deleted ids a push lists in the remote's tombstones: the remote's own, those
    of sessions this home had (`tombstones.seen`), and of the others (learned from
    another remote, never a session here) only those the remote asks for by holding a
    branch of them. So a flood of ids one remote lists never travels on."""
    asked = {sid for sid in dead if ref_name(sid) in refs}
    return remote_dead | (tombstones.seen(store.git.path) & dead) | asked


def remote_had(store: Store, name: str, refs: dict[bytes, bytes], sid: str) -> list[bytes]:
    """The heads the remote is known to have had for `sid`: its branch as listed now and
    as last fetched (each one present here)."""
    git = store.git
    ref = ref_name(sid)
    seen = [refs.get(ref), git.ref(tracking.tracking_prefix(name) + ref[len(b"refs/heads/") :])]
    return [sha for sha in dict.fromkeys(seen) if sha is not None and history.has(git, sha)]


def delete_here(
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
            had = remote_had(store, name, refs, sid)
            forked = None
            if not any(sha == mine or history.is_ancestor(git, mine, sha) for sha in had):
                bases = [history.merge_base(git, mine, sha) for sha in had]
                base = next((b for b in bases if b is not None), None)
                forked = fork_line(writing, ours, f"deleted on {name}", base)
            fork = forked.id if forked is not None else None
            hooks = fork_hooks(forked, name)
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


def fetch_tombstones(
    store: Store,
    name: str,
    url: str,
    progress: Progress,
    env: transport.Env,
    *,
    track: bool = True,
    listed: dict[bytes, bytes] | None = None,
    report: Report | None = None,
    live: dict[str, bytes] | None = None,
) -> tuple[dict[bytes, bytes], set[str], set[str]]:
    """The remote's refs (or `listed`, what the caller asked of it), with its tombstone
    commit fetched, tracked (unless the caller writes that ref itself: not `track`), and
    merged into ours (`merge_tombstones`, with `live`): (its refs, every deleted id,
    the remote's).
    The bad ref names it lists (`transport.fetch`), the lost sessions it lists as
    deleted and the ids left for the next pull go into `report`. The caller holds the
    store's shared lock."""
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
        ignored=report.ignored if report is not None else None,
    )
    if TOMBSTONES in refs and track and history.has(store.git, refs[TOMBSTONES]):
        tracking.set_tracking(store.git, name, {TOMBSTONES: refs[TOMBSTONES]})
    dead, remote_dead = merge_tombstones(store, name, refs, report, live)
    return refs, dead, remote_dead
