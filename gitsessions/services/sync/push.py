"""Push: session branches sent to a remote, never forced, nothing unscanned.

Invariants:
- Sent only when the remote's branch is absent or an ancestor of ours, the remote
  comparing each ref with the value seen (git's compare-and-swap); else "run pull".
- No session the remote lists as deleted is sent; this home's deleted ids (and those it
  forwards) go to the remote's tombstone commit as a fast-forward; only `--prune`
  deletes remote branches, leased on their old value.
- Nothing leaves unscanned: what the remote lacks is scanned with the store's rules and
  refused naming session, message and rule, unless `allow_secrets` (push_scan.py).
- A remote down or refusing, or git older than 2.29, is one line before anything moves;
  tracking refs follow only what was accepted; the project index refs follow the
  sessions sent.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from gitsessions.services.sync.deletions import fetch_tombstones, forwarded
from gitsessions.services.sync.remotes import pick_remote
from gitsessions.services.sync.report import ZERO, Outcome, Progress, Report, quiet
from gitsessions.store import history, projectrefs, remoteconfig, tracking, transport
from gitsessions.store.refs import ref_name
from gitsessions.store.tracking import SESSIONS, TOMBSTONES
from gitsessions.values.plural import plural

if TYPE_CHECKING:
    from gitsessions.store.sessions import SessionStore


def push(
    store: SessionStore,
    remote: str | None,
    ids: list[str] | None,
    *,
    prune: bool = False,
    allow_secrets: bool = False,
    progress: Progress = quiet,
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
        refs, dead, remote_dead = fetch_tombstones(store, name, url, progress, env, report=report)
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
        sent = forwarded(store, dead, remote_dead, refs)
        if sent - remote_dead:
            tip = refs.get(TOMBSTONES)
            commit = history.tombstone_commit(git, sent, [tip] if tip else [], int(time.time()))
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


def push_snapshots(
    store: SessionStore,
    report: Report,
    code_remote: str,
    env: Mapping[str, str],
    here: Path,
    allow_secrets: bool = False,
) -> None:
    """After a push: each session it covered sends its code snapshots too, scanned for
    secrets first (refused with the file named unless `allow_secrets`)."""
    from gitsessions.services.code.code_sync import CodeSession, push_code

    sessions = [
        CodeSession(o.id, o.id, store.head(o.id).header.get("workspace") or {})
        for o in report.sessions
        if o.result in ("new", "updated", "up to date")
    ]
    from gitsessions.services.code.workspace import project_of

    report.code = push_code(sessions, code_remote, env, project_of(here, env), allow_secrets)
