"""A branch of a source file (a prompt edited, a turn rewound) imported as a fork of the
session it leaves, sharing its history up to the branch.

Invariants:
- The fork point is the newest commit whose import had written exactly the outputs the
  branch begins with (same count and chained SHA-256: `imported.outputs`, `digest`); the
  fork is the store's one fork there (nothing copied), the rest appended by `mirror`.
- When the session's import in this run passed the fork line it left a `Snapshot` there
  and the branch reads only its own lines; else outputs are assembled and matched
  (`find_base`).
- A branch sharing no commit is a session of its own (`parent_id` set); one with nothing
  past the fork point is not made; an imported fork re-imports as any session.
"""

import copy
from dataclasses import dataclass

from gitsessions.services.imports.assemble import Assembler, Entry, Output
from gitsessions.services.imports.mirror import (
    assembled,
    chained,
    done_of,
    header_time,
    import_source,
    stored_title,
)
from gitsessions.services.imports.source import Outcome, Source
from gitsessions.services.imports.titles import prompt_title
from gitsessions.services.sessions import writer
from gitsessions.services.sessions.manage import fork_title
from gitsessions.store.lease import Lease
from gitsessions.store.sessions import Head, SessionStore


@dataclass
class _Past:
    """What a branch's outputs past its fork point say: the title of its first prompt
    typed, its first and its last time."""

    title: str | None = None
    first: str | None = None
    last: str | None = None

    def take(self, output: Output) -> None:
        if not isinstance(output, Entry):
            return
        time = output.meta.get("time")
        self.first, self.last = self.first or time, time or self.last
        if self.title is None and _typed(output):
            self.title = prompt_title(output.message.get("content"))


@dataclass
class Base:
    """Where a branch leaves its session: that session's state there, the outputs it
    had written and their digest, all the branch's outputs, and what those past it say."""

    head: Head
    outputs: int
    digest: str
    total: int
    past: _Past  # the title and times of the outputs past the fork point


def import_one(store: SessionStore, source: Source, now: str) -> Outcome | None:
    """Import `source`: a branch of a file as a fork of its session (`import_branch`); a
    path that moved in the source since its session was imported (a prompt edited or
    rewound there: the import diverged) as a fork of that session, its outcome's
    `moved_from` naming it. None: a branch the session holds whole."""
    if source.fork_of is not None:
        return import_branch(store, source, now)
    outcome = import_source(store, source, now)
    if outcome.status != "diverged" or source.moved is None:
        return outcome
    moved = source.moved(store.head(source.session_id).header)
    if moved is None:
        return outcome
    moved.finished = source.finished
    branch = import_branch(store, moved, now)
    if branch is not None:
        branch.moved_from = source.session_id
    return branch


def import_branch(store: SessionStore, source: Source, now: str) -> Outcome | None:
    """Import `source`, a branch of the session `source.fork_of` (see the invariants);
    None when the session already holds all of it (nothing made)."""
    assert source.fork_of is not None
    if store.exists(source.session_id) or not store.exists(source.fork_of):
        return import_source(store, source, now)
    base = _from_snapshot(store, source) or find_base(store, source)
    if base is None:
        source.parent = source.fork_of
        return import_source(store, source, now)
    if base.total == base.outputs:
        return None
    if base.past.first is not None:
        source.first_time, source.last_time = base.past.first, base.past.last
    done = {
        **done_of(base.head),
        **source.extra,
        "id": source.source_id,
        "title": None,
        "summary": None,
        "resume": None,
    }
    done.pop("settled", None)
    with Lease(store.home, source.session_id):
        writer.fork(
            store,
            base.head,
            source.session_id,
            title=stored_title(base.past.title) or fork_title(base.head.header.get("title") or ""),
            created_at=header_time(source.first_time, now) or now,
            header_updates={"imported": done, "summary": ""},
            operation=None,
        )
    outcome = import_source(store, source, now)
    if outcome.status == "appended":
        outcome.status = "created"
    return outcome


def _from_snapshot(store: SessionStore, source: Source) -> Base | None:
    """Where the branch leaves its session as that session's import in this run saw it
    (`Snapshot`, at the branch's fork line): the branch then reads only its lines past
    it, going on from that import's assembler. None when there is no such snapshot, or
    the branch's outputs do not begin with what the snapshot's commit holds."""
    snap = source.snapshots.get(source.fork_line) if source.fork_line is not None else None
    if snap is None or snap.commit is None or source.items_after is None:
        return None
    assert source.fork_of is not None and source.fork_line is not None
    line, after = source.fork_line, source.items_after
    count, digest, holds = snap.outputs, snap.digest, snap.committed == snap.outputs
    past = _Past()
    for output in assembled(copy.deepcopy(snap.assembler), after(line), source.finished, []):
        count += 1
        digest = chained(digest, output)
        if count == snap.committed:
            holds = digest == snap.committed_digest
        if count > snap.committed:
            past.take(output)
    if not holds:
        return None
    source.items = lambda: after(line)
    source.assembler = copy.deepcopy(snap.assembler)
    source.start = {
        "outputs": snap.outputs,
        "digest": snap.digest,
        "turn": snap.assembler.turn,
        "step": snap.assembler.step,
        "line": line,
    }
    head = store.head_at(source.fork_of, snap.commit)
    return Base(head, snap.committed, snap.committed_digest, count, past)


def find_base(store: SessionStore, source: Source) -> Base | None:
    """The newest commit of `source.fork_of` whose import wrote the outputs the branch
    begins with; None when there is none. Reads the branch once, writes nothing."""
    assert source.fork_of is not None
    main = store.head(source.fork_of)
    key = done_of(main).get("id")
    points: dict[tuple[int, str], bytes] = {}
    for commit_id, _commit in store.history(main):
        done = done_of(store.head_at(main.id, commit_id))
        if done.get("id") != key:
            break  # past the session's own first commit
        points.setdefault((int(done.get("outputs", 0)), str(done.get("digest"))), commit_id)
    found: tuple[int, str, bytes] | None = None
    past = _Past()
    digest, count = "", 0
    for output in assembled(Assembler(), source.items(), source.finished, []):
        count += 1
        digest = chained(digest, output)
        if (count, digest) in points:
            found, past = (count, digest, points[(count, digest)]), _Past()
        else:
            past.take(output)
    if found is None:
        return None
    count_at, digest_at, commit = found
    return Base(store.head_at(main.id, commit), count_at, digest_at, count, past)


def _typed(entry: Entry) -> bool:
    return entry.message.get("role") == "user" and entry.meta.get("step") == 0
