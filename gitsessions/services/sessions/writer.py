"""The one write path: every change to a stored session goes through here (a test fails if
any module outside the store and this one commits).

Invariants:
- A writer is a pure function from the current head to an `Edit` (`Change`, event,
  subject, trailers) or None; `update` re-reads the head, calls it, commits by
  compare-and-swap, and on a lost race calls it again (`RETRIES`): never on a stale head.
- An edit that changes nothing makes no commit (`Written.committed` False).
- The session's lease is taken unless the caller holds it (the agent's own turns and
  slash commands): a live agent never has its branch moved under it.
- A named operation (`operation=`) appends one audit line: "ok", "unchanged" or "error"
  with its class. `\\title`/`\\pin` in chat are the same operations as `rename`/`pin`.
"""

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeVar

from gitsessions.services.hooks.audit import audit
from gitsessions.store.errors import ConcurrentUpdate
from gitsessions.store.lease import Lease
from gitsessions.store.sessions import Change, Head, SessionStore
from gitsessions.values.errors import GitsessionsError

RETRIES = 5
T = TypeVar("T")


@dataclass(frozen=True)
class Edit:
    """What a writer asks to commit."""

    change: Change
    event: str
    subject: str
    trailers: Mapping[str, Any] = field(default_factory=dict)
    merged: bytes | None = None  # a second parent: another session's head joined in


class Written(NamedTuple):
    head: Head
    committed: bool


def audited(
    store: SessionStore,
    operation: str | None,
    session: str | None,
    run: Callable[[], T],
    outcome: Callable[[T], str] = lambda _: "ok",
    /,  # so that `**extra` at a call cannot stand for `outcome` (and hide `T`)
    **extra: Any,
) -> T:
    """Run `run`, then append one audit line for `operation` (none when it is None)."""
    try:
        result = run()
    except GitsessionsError as error:
        if operation:
            audit(store.home, operation, session, "error", error=type(error).__name__, **extra)
        raise
    if operation:
        audit(store.home, operation, session, outcome(result), **extra)
    return result


def update(
    store: SessionStore,
    session_id: str,
    edit: Callable[[Head], Edit | None],
    *,
    operation: str | None,
    lease_held: bool = False,
    retries: int = RETRIES,
    **extra: Any,
) -> Written:
    """Commit `edit(head)` on the session's current head; see the module's invariants."""

    def run() -> Written:
        if lease_held:
            return _retrying(store, session_id, edit, retries)
        with Lease(store.home, session_id):
            return _retrying(store, session_id, edit, retries)

    return audited(
        store,
        operation,
        session_id,
        run,
        lambda written: "ok" if written.committed else "unchanged",
        **extra,
    )


def commit_on(store: SessionStore, head: Head, edit: Edit) -> Written:
    """Commit `edit` on exactly `head` (a writer that holds the lease and knows its
    head, like the agent): `ConcurrentUpdate` if the branch moved, never a retry."""
    new = store.commit(
        head,
        edit.change,
        event=edit.event,
        subject=edit.subject,
        trailers=edit.trailers,
        skip_unchanged=True,
        merged=edit.merged,
    )
    return Written(new, new.commit != head.commit)


def _retrying(
    store: SessionStore, session_id: str, edit: Callable[[Head], Edit | None], retries: int
) -> Written:
    for attempt in range(retries + 1):
        head = store.head(session_id)
        planned = edit(head)
        if planned is None:
            return Written(head, False)
        try:
            return commit_on(store, head, planned)
        except ConcurrentUpdate:
            if attempt == retries:
                raise
    raise AssertionError("unreachable")


def fork(
    store: SessionStore,
    source: Head,
    new_id: str,
    *,
    title: str | None,
    created_at: str,
    fork_point: bytes | None = None,
    header_updates: Mapping[str, Any] | None = None,
    operation: str | None,
    **extra: Any,
) -> Head:
    """A new session forked from `source` (any head of a session, also one fetched from
    a remote): its one fork commit and its branch; `header_updates`, its header's own
    fields (an imported branch's `imported`)."""
    return audited(
        store,
        operation,
        source.id,
        lambda: store.fork(
            source,
            new_id,
            title=title,
            created_at=created_at,
            fork_point=fork_point,
            header_updates=header_updates,
        ),
        fork=new_id,
        **extra,
    )


def create(
    store: SessionStore,
    header: dict[str, Any],
    change: Change,
    *,
    operation: str | None,
    event: str = "create",
    subject: str | None = None,
    trailers: Mapping[str, Any] | None = None,
    when: int | None = None,
    parts: Iterable[Change] = (),
    **extra: Any,
) -> Head:
    """A new session (create, import): its first commit and its branch; `parts`, the
    earlier commits of a long import (see `SessionStore.create`)."""
    return audited(
        store,
        operation,
        header["id"],
        lambda: store.create(
            header,
            change,
            event=event,
            subject=subject,
            trailers=trailers,
            when=when,
            parts=parts,
        ),
        **extra,
    )
