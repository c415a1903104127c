"""Finding the state a revision names (`values/revision.py` parses the text).

Invariants:
- Only the session's first-parent history is searched (a fork's reaches into its
  parent's): a revision never reaches another commit.
- `@turn:N` is the newest `Event: turn` commit of turn N (an undo's commit is not part
  of it; a fork continues its parent's numbering); `~N` steps back along first parents.
- The state is a `Head` of the session whose commit it is: before a fork, the parent's.
- `checked_head` is the check a pull and `doctor --repair` make of a head they did not
  write: a readable header of that very session (no dulwich imported).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gitsessions.store.errors import StoreError
from gitsessions.store.reader import Head, SessionReader
from gitsessions.store.sessions import SessionStore
from gitsessions.store.trailers import parse_trailers
from gitsessions.values.ids import is_session_id, short
from gitsessions.values.plural import plural
from gitsessions.values.revision import BadRevision, Revision, parse_revision, shown


@dataclass(frozen=True)
class State:
    """One side of a comparison: the revision as typed, the session it named and the
    state it resolved to (`head.id` is the session whose commit it is)."""

    revision: str
    session: str
    head: Head


def checked_head(store: SessionReader, sid: str, sha: bytes) -> Head:
    """The head of `sid` at `sha` (a remote's, or one recorded in headlog), read and
    checked: a readable header of this id."""
    head = store.head_at(sid, sha)
    if head.header.get("id") != sid:
        raise StoreError(f"the remote's branch of {short(sid)} holds another session")
    return head


def resolve(store: SessionStore, text: str) -> State:
    """The state `text` names; `BadRevision` (exit 2) when it names nothing."""
    revision = parse_revision(text)
    session_id = store.resolve(revision.session)
    head = store.head(session_id)
    if revision.is_head:
        return State(text, session_id, head)
    walk = _Walk(store, head)
    index = 0
    if revision.turn is not None:
        index = _turn_index(walk, head, revision)
    elif revision.commit is not None:
        index = _commit_index(walk, head, revision)
    found = walk.at(index + revision.back)
    if found is None:
        raise BadRevision(
            f"bad revision {shown(revision.text)}: goes back past the first commit of "
            f"session {short(head.id)}'s history "
            f"({plural(len(walk.seen) - 1 - index, 'commit')} back is the first)"
        )
    commit_id, commit = found
    return State(text, session_id, store.head_at(owner_of(commit) or session_id, commit_id))


class _Walk:
    """A session's first-parent history, read only as far as asked."""

    def __init__(self, store: SessionStore, head: Head) -> None:
        self.history = store.history(head)
        self.seen: list[tuple[bytes, Any]] = []

    def at(self, index: int) -> tuple[bytes, Any] | None:
        while len(self.seen) <= index:
            item = next(self.history, None)
            if item is None:
                return None
            self.seen.append(item)
        return self.seen[index]


def _turn_index(walk: _Walk, head: Head, revision: Revision) -> int:
    last = 0
    index = 0
    while (item := walk.at(index)) is not None:
        trailers = parse_trailers(item[1].message)[1]
        turn = trailers.get("Turn", "")
        if trailers.get("Event") == "turn" and turn.isdigit():
            if int(turn) == revision.turn:
                return index
            last = max(last, int(turn))
        index += 1
    has = f"its last turn is {last}" if last else "it has no turns"
    raise BadRevision(
        f"bad revision {shown(revision.text)}: session {short(head.id)} has no turn "
        f"{revision.turn} ({has})"
    )


def _commit_index(walk: _Walk, head: Head, revision: Revision) -> int:
    assert revision.commit is not None
    prefix = revision.commit.encode()
    found = []
    index = 0
    while (item := walk.at(index)) is not None:
        if item[0].startswith(prefix):
            found.append(index)
        index += 1
    if not found:
        raise BadRevision(
            f"bad revision {shown(revision.text)}: no commit {revision.commit} in the "
            f"history of session {short(head.id)} (`gitsessions log --steps` lists them)"
        )
    if len(found) > 1:
        raise BadRevision(
            f"bad revision {shown(revision.text)}: {revision.commit} names "
            f"{plural(len(found), 'commit')} of session {short(head.id)}; type more characters"
        )
    return found[0]


def owner_of(commit: Any) -> str | None:
    """The session a commit belongs to, from its `Session:` trailer."""
    owner = parse_trailers(commit.message)[1].get("Session", "")
    return owner if is_session_id(owner) else None
