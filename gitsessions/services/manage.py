"""Session management operations: rename, archive, fork, delete, gc, import.

Each operation re-reads the session head and retries when another writer won the race,
so a rename never silently undoes a concurrent turn (and vice versa). Every operation
appends one line to the audit log, whatever its outcome. A delete leaves nothing of the
session behind outside the store either: cache rows, chat history lines, lease file.
"""

from collections.abc import Callable
from typing import Any, TypeVar

from gitsessions.services import chat_history
from gitsessions.services.audit import audit
from gitsessions.services.search import SearchIndex
from gitsessions.store import background, maintenance
from gitsessions.store.catalog import Catalog
from gitsessions.store.errors import ConcurrentUpdate
from gitsessions.store.lease import Lease
from gitsessions.store.sessions import Change, Head, SessionStore, touch
from gitsessions.values.clock import now_iso
from gitsessions.values.errors import GitsessionsError, InvalidInput
from gitsessions.values.ids import check_title, new_id
from gitsessions.values.secrets import redact

RETRIES = 5
T = TypeVar("T")


def _audited(
    store: SessionStore, operation: str, session: str | None, run: Callable[[], T], **extra: Any
) -> T:
    try:
        result = run()
    except GitsessionsError as error:
        # the error's kind only: its message may quote titles or text of the session
        audit(store.home, operation, session, "error", error=type(error).__name__, **extra)
        raise
    audit(store.home, operation, session, "ok", **extra)
    return result


def _update(
    store: SessionStore, session_id: str, event: str, subject: str, make: Callable[[Head], Change]
) -> Head:
    with Lease(store.home, session_id):  # a live chat on it would lose its next commit
        return _retrying(store, session_id, event, subject, make)


def _retrying(
    store: SessionStore, session_id: str, event: str, subject: str, make: Callable[[Head], Change]
) -> Head:
    for attempt in range(RETRIES):
        head = store.head(session_id)
        try:
            return store.commit(head, make(head), event=event, subject=subject)
        except ConcurrentUpdate:
            if attempt == RETRIES - 1:
                raise
    raise AssertionError("unreachable")


def rename(store: SessionStore, session_id: str, title: str) -> Head:
    title = check_title(title)
    return _audited(
        store,
        "rename",
        session_id,
        lambda: _update(
            store,
            session_id,
            "rename",
            f"rename: {title}",
            lambda head: Change(header=touch(head.header, title=title)),
        ),
    )


def set_archived(store: SessionStore, session_id: str, archived: bool) -> Head:
    event = "archive" if archived else "unarchive"
    return _audited(
        store,
        event,
        session_id,
        lambda: _update(
            store,
            session_id,
            event,
            event,
            lambda head: Change(header=touch(head.header, archived=archived)),
        ),
    )


def fork(store: SessionStore, session_id: str, title: str | None = None) -> Head:
    if title is not None:
        title = check_title(title)
    fork_id = new_id()
    return _audited(
        store,
        "fork",
        session_id,
        lambda: store.fork(store.head(session_id), fork_id, title=title, created_at=now_iso()),
        fork=fork_id,
    )


def delete(store: SessionStore, session_id: str) -> None:
    def run() -> None:
        with Lease(store.home, session_id) as lease:
            store.delete(store.head(session_id))
            Catalog(store).forget(session_id)
            SearchIndex(store).forget(session_id)
            chat_history.forget(store.home, session_id)
            lease.discard()

    _audited(store, "delete", session_id, run)


def gc(store: SessionStore) -> dict[str, object]:
    def run() -> dict[str, object]:
        with background.maintenance_quiet(store.git.path):
            return maintenance.repack(store.git, prune=True)

    return _audited(store, "gc", None, run)


def pin(store: SessionStore, session_id: str, text: str) -> list[str]:
    """Add a note that survives every compaction verbatim; returns all pins."""
    if not text.strip():
        raise InvalidInput("a pin needs some text")
    pins: list[str] = []

    def change(head: Head) -> Change:
        pins[:] = [*store.read(head, "pins"), text.strip()]
        return Change(header=touch(head.header), pins=list(pins))

    _audited(
        store,
        "pin",
        session_id,
        lambda: _update(store, session_id, "pin", f"pin: {redact(text.strip())[0][:60]}", change),
    )
    return pins


def unpin(store: SessionStore, session_id: str, number: int) -> str:
    """Remove pin `number` (1-based, as `pins` lists them); returns its text."""
    removed: list[str] = []

    def change(head: Head) -> Change:
        pins = list(store.read(head, "pins"))
        if not 1 <= number <= len(pins):
            raise InvalidInput(f"no pin {number}: the session has {len(pins)} pins")
        removed[:] = [pins.pop(number - 1)]
        return Change(header=touch(head.header), pins=pins)

    _audited(
        store,
        "unpin",
        session_id,
        lambda: _update(store, session_id, "unpin", f"unpin: {number}", change),
    )
    return removed[0]
