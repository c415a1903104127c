"""What a snapshot's claim is checked against: the last turn a session stored here has.

A snapshot commit names its session and turn in its subject, and anyone who can write a
ref into the project (a pushed `refs/gitsessions/snapshots/<id>`, pulled with `--code`)
can write any subject. Blame believes a snapshot's turn only when the session it names
has that turn: the session is read here, its commits' `Turn` trailers (of `turn`
events) give its last turn. A session not stored in this home cannot be checked (its
snapshots are shown as "not in this home").

Read-only; nothing here prints or reads the environment.
"""

from collections.abc import Callable

from gitsessions.store.errors import ObjectMissing, SessionNotFound, StoreCorrupt
from gitsessions.store.reader import SessionReader
from gitsessions.store.trailers import parse_trailers

LastTurn = Callable[[str], int | None]  # a session id -> its last turn here (None: not here)


def last_turns(reader: SessionReader) -> LastTurn:
    """The last turn each session stored in `reader` has (0: none), read once a session;
    None for a session not stored here (or whose branch is damaged: `doctor` says so,
    blame judges its snapshots no differently than before)."""
    known: dict[str, int | None] = {}

    def last_turn(session_id: str) -> int | None:
        if session_id not in known:
            known[session_id] = _last_turn(reader, session_id)
        return known[session_id]

    return last_turn


def _last_turn(reader: SessionReader, session_id: str) -> int | None:
    try:
        head = reader.head(session_id)
    except (SessionNotFound, StoreCorrupt, ObjectMissing):
        return None
    last = 0
    for _commit_id, commit in reader.history(head):
        trailers = parse_trailers(commit.message)[1]
        turn = trailers.get("Turn", "")
        if trailers.get("Event") == "turn" and turn.isdigit():
            last = max(last, int(turn))
    return last
