"""Session management operations: rename, archive, pin, unpin, fork, delete, set aside
(a remote's tombstone) and undelete, gc.

Each is an edit function handed to `services.sessions.writer` (the one write path: lease,
compare-and-swap retry on a fresh head, no commit when nothing changes, one audit line).
From the chat, the agent's process already holds the lease (`lease_held=True`). A delete
leaves nothing of the session behind outside the store either: cache rows, chat history
lines, lease file; `code/delete.py` adds what it left in the project.
"""

from typing import Any

from gitsessions.services.hooks.hooks import NO_HOOKS, Hooks
from gitsessions.services.sessions import chat_history, granted, points, writer
from gitsessions.services.sessions.search import SearchIndex
from gitsessions.services.sessions.writer import Edit, Written
from gitsessions.store import background, maintenance, tracking, trash
from gitsessions.store.catalog import Catalog
from gitsessions.store.lease import Lease
from gitsessions.store.sessions import Change, Head, SessionStore, touch
from gitsessions.values.clock import now_iso
from gitsessions.values.errors import InvalidInput
from gitsessions.values.ids import MAX_TITLE, check_prefix, check_title, new_id
from gitsessions.values.plural import plural
from gitsessions.values.secrets import redact

FORK_MARK = " (fork)"


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


def fork(
    store: SessionStore,
    session_id: str,
    title: str | None = None,
    hooks: Hooks = NO_HOOKS,
    at: str | None = None,
) -> Head:
    """A fork titled `title`, else "<parent title> (fork)", at the session's head or at
    `at` (`turn:N` or a commit of its history); its usage starts at zero."""
    if title is not None:
        title = check_title(title)
    fork_id = new_id()

    def run() -> Head:
        source = store.head(session_id)
        commit = points.resolve(store, source, at)
        if commit != source.commit:  # an earlier state: of this session, or its parent's
            state = store.head_at(session_id, commit)
            owner = str(state.header.get("id") or session_id)
            source = state if owner == session_id else store.head_at(owner, commit)
        named = title
        if named is None:
            parent = source.header.get("title") or source.header.get("summary") or ""
            named = fork_title(parent)
        return store.fork(source, fork_id, title=named, created_at=now_iso())

    head = writer.audited(store, "fork", session_id, run, fork=fork_id)
    hooks.run("post-fork", head.id, head.commit.decode(), **fork_details(head))
    return head


def fork_details(fork: Head) -> dict[str, Any]:
    """What the post-fork hook is told of a fork, from its header."""
    return {key: fork.header.get(key) for key in ("parent_id", "fork_point", "worktree")}


def fork_title(parent: str) -> str:
    """`<parent title> (fork)`, within a title's length; empty for an untitled parent."""
    parent = " ".join(parent.split())  # a stored title is data: one line, whatever it holds
    if not parent:
        return ""
    return f"{parent[: MAX_TITLE - len(FORK_MARK)]}{FORK_MARK}"


def delete(store: SessionStore, session_id: str, hooks: Hooks = NO_HOOKS) -> Head:
    """Delete the session from the store, with its cache rows, chat history lines,
    granted approvals and lease file; the head it had. What it left in the project goes
    with it through `code/delete.py` (the command's delete)."""
    deleted: list[Head] = []

    def run() -> None:
        with Lease(store.home, session_id) as lease:
            deleted.append(store.head(session_id))
            tracking.forget_session(store.git, session_id)  # its objects go with it
            store.delete(deleted[0])
            Catalog(store).forget(session_id)
            SearchIndex(store).forget(session_id)
            chat_history.forget(store.home, session_id)
            granted.forget(store.home, session_id)
            lease.discard()

    writer.audited(store, "delete", session_id, run)
    hooks.run("post-delete", session_id, deleted[0].commit.decode())
    return deleted[0]


def set_aside(store: SessionStore, head: Head, why: str, keep: bool = True) -> bool:
    """Delete a session a remote's tombstone lists, keeping its head in the trash for
    `undelete` (`SessionStore.set_aside`; not with `keep=False`: a fork holds its whole
    line): its cache rows, chat history lines, approvals and remote-tracking refs go as
    a delete's do. The caller holds the session's lease (and discards it). False when the branch
    moved meanwhile (nothing changed)."""

    def run() -> bool:
        if not store.set_aside(head, why, keep):
            return False
        tracking.forget_session(store.git, head.id)
        Catalog(store).forget(head.id)
        SearchIndex(store).forget(head.id)
        chat_history.forget(store.home, head.id)
        granted.forget(store.home, head.id)
        return True

    return writer.audited(store, "set aside", head.id, run, lambda won: str(won))


def undelete(store: SessionStore, session_id: str) -> Head:
    """Bring back a session a remote's tombstone set aside: a new session (its id is
    deleted everywhere) forked from the head it had, titled as it was; the trash
    entry goes once the fork is written. `session_id`: the id or a prefix of it."""
    prefix = check_prefix(session_id)
    found = [e for e in trash.entries(store.git) if e.id.startswith(prefix)]
    if not found:
        why = f"nothing set aside matches {prefix!r} (`gitsessions undelete` lists it)"
        raise InvalidInput(why)
    if len(found) > 1:
        raise InvalidInput(f"{prefix!r} names several sessions set aside: give more of the id")
    entry = found[0]
    fork_id = new_id()

    def run() -> Head:
        source = store.head_at(entry.id, entry.head)  # its title stays as it was
        made = store.fork(
            source, fork_id, title=None, created_at=now_iso(), held_by=trash.ref_of(entry.id)
        )
        trash.drop(store.git, entry)
        return made

    return writer.audited(store, "undelete", entry.id, run, fork=fork_id)


def drop_expired(store: SessionStore) -> int:
    """`gc`'s part: trash entries older than `trash.KEEP_DAYS` days go (their objects
    with the repack that follows); how many."""
    return sum(trash.drop(store.git, e) for e in trash.expired(store.git))


def gc(store: SessionStore) -> dict[str, Any]:
    def run() -> dict[str, Any]:
        with background.maintenance_quiet(store.git.path):
            dropped = drop_expired(store)
            done = maintenance.repack(store.git)
            return {**done, "set_aside_dropped": dropped}

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
