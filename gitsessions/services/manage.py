"""Session management operations: rename, archive, pin, unpin, fork, delete, gc.

Each is an edit function handed to `services.writer` (the one write path: lease,
compare-and-swap retry on a fresh head, no commit when nothing changes, one audit line).
From the chat, the agent's process already holds the lease (`lease_held=True`). A delete
leaves nothing of the session behind outside the store either: cache rows, chat history
lines, lease file.
"""

from gitsessions.services import chat_history, writer
from gitsessions.services.search import SearchIndex
from gitsessions.services.writer import Edit, Written
from gitsessions.store import background, maintenance
from gitsessions.store.catalog import Catalog
from gitsessions.store.lease import Lease
from gitsessions.store.sessions import Change, Head, SessionStore, touch
from gitsessions.values.clock import now_iso
from gitsessions.values.errors import InvalidInput
from gitsessions.values.ids import check_title, new_id
from gitsessions.values.plural import plural
from gitsessions.values.secrets import redact


def rename(store: SessionStore, session_id: str, title: str, lease_held: bool = False) -> Written:
    title = check_title(title)

    def edit(head: Head) -> Edit | None:
        if head.header.get("title") == title:
            return None
        return Edit(Change(header=touch(head.header, title=title)), "rename", f"rename: {title}")

    return writer.update(store, session_id, edit, operation="rename", lease_held=lease_held)


def set_archived(store: SessionStore, session_id: str, archived: bool) -> Written:
    event = "archive" if archived else "unarchive"

    def edit(head: Head) -> Edit | None:
        if bool(head.header.get("archived")) == archived:
            return None
        return Edit(Change(header=touch(head.header, archived=archived)), event, event)

    return writer.update(store, session_id, edit, operation=event)


def fork(store: SessionStore, session_id: str, title: str | None = None) -> Head:
    if title is not None:
        title = check_title(title)
    fork_id = new_id()
    return writer.audited(
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

    writer.audited(store, "delete", session_id, run)


def gc(store: SessionStore) -> dict[str, object]:
    def run() -> dict[str, object]:
        with background.maintenance_quiet(store.git.path):
            return maintenance.repack(store.git)

    return writer.audited(store, "gc", None, run)


def pin(
    store: SessionStore, session_id: str, text: str, lease_held: bool = False
) -> tuple[Written, list[str]]:
    """Add a note that survives every compaction verbatim; returns all pins."""
    text = text.strip()
    if not text:
        raise InvalidInput("a pin needs some text")
    pins: list[str] = []

    def edit(head: Head) -> Edit:
        pins[:] = [*store.read(head, "pins"), text]
        return Edit(
            Change(header=touch(head.header), pins=list(pins)),
            "pin",
            f"pin: {redact(text)[0][:60]}",
        )

    written = writer.update(store, session_id, edit, operation="pin", lease_held=lease_held)
    return written, pins


def unpin(store: SessionStore, session_id: str, number: int) -> str:
    """Remove pin `number` (1-based, as `pins` lists them); returns its text."""
    removed: list[str] = []

    def edit(head: Head) -> Edit:
        pins = list(store.read(head, "pins"))
        if not 1 <= number <= len(pins):
            raise InvalidInput(f"no pin {number}: the session has {plural(len(pins), 'pin')}")
        removed[:] = [pins.pop(number - 1)]
        return Edit(Change(header=touch(head.header), pins=pins), "unpin", f"unpin: {number}")

    writer.update(store, session_id, edit, operation="unpin")
    return removed[0]
