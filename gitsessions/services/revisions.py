"""Finding the state a revision names (`values/revision.py` parses the text).

Invariants:
- Only the named session's first-parent history is searched (its own commits, then,
  for a fork, its parent's up to the fork point and beyond): a revision never reaches a
  commit that is not in that history.
- `@turn:N` is the newest commit recording turn N (a fork continues its parent's
  numbering, so a fork's `@turn:2` may be a commit of its parent); `~N` then steps N
  commits back along first parents.
- The state comes back as a `Head` of the session whose commit it is (its `Session:`
  trailer): a state before a fork is the parent's state at that commit.
"""

from dataclasses import dataclass

from gitsessions.store.sessions import Head, SessionStore
from gitsessions.store.trailers import parse_trailers
from gitsessions.values.ids import is_session_id, short
from gitsessions.values.revision import BadRevision, Revision, parse_revision, shown


@dataclass(frozen=True)
class State:
    """One side of a comparison: the revision as typed, the session it named and the
    state it resolved to (`head.id` is the session whose commit it is)."""

    revision: str
    session: str
    head: Head


def resolve(store: SessionStore, text: str) -> State:
    """The state `text` names; `BadRevision` (exit 2) when it names nothing."""
    revision = parse_revision(text)
    session_id = store.resolve(revision.session)
    head = store.head(session_id)
    if revision.is_head:
        return State(text, session_id, head)
    commit = head.commit
    if revision.turn is not None:
        commit = _turn_commit(store, head, revision)
    elif revision.commit is not None:
        commit = _named_commit(store, head, revision)
    commit = _back(store, head, commit, revision)
    owner = owner_of(store, commit) or session_id
    return State(text, session_id, store.head_at(owner, commit))


def _turn_commit(store: SessionStore, head: Head, revision: Revision) -> bytes:
    last = 0
    for commit_id, commit in store.history(head):
        _subject, trailers = parse_trailers(commit.message)
        turn = trailers.get("Turn", "")
        if not turn.isdigit():
            continue
        if int(turn) == revision.turn:
            return commit_id
        last = max(last, int(turn))
    has = f"its last turn is {last}" if last else "it has no turns"
    raise BadRevision(
        f"bad revision {shown(revision.text)}: session {short(head.id)} has no turn "
        f"{revision.turn} ({has})"
    )


def _named_commit(store: SessionStore, head: Head, revision: Revision) -> bytes:
    assert revision.commit is not None
    prefix = revision.commit.encode()
    found = [commit_id for commit_id, _c in store.history(head) if commit_id.startswith(prefix)]
    if not found:
        raise BadRevision(
            f"bad revision {shown(revision.text)}: no commit {revision.commit} in the "
            f"history of session {short(head.id)} (`gitsessions log --steps` lists them)"
        )
    if len(found) > 1:
        raise BadRevision(
            f"bad revision {shown(revision.text)}: {revision.commit} names "
            f"{len(found)} commits of session {short(head.id)}; type more characters"
        )
    return found[0]


def _back(store: SessionStore, head: Head, commit_id: bytes, revision: Revision) -> bytes:
    for step in range(revision.back):
        parents = getattr(store.git.get(commit_id), "parents", [])
        if not parents:
            raise BadRevision(
                f"bad revision {shown(revision.text)}: goes back past the first commit "
                f"of session {short(head.id)}'s history ({step} commits back is the first)"
            )
        commit_id = parents[0]
    return commit_id


def owner_of(store: SessionStore, commit_id: bytes) -> str | None:
    """The session a commit belongs to, from its `Session:` trailer."""
    message = getattr(store.git.get(commit_id), "message", b"")
    owner = parse_trailers(message)[1].get("Session", "")
    return owner if is_session_id(owner) else None
