"""Points in a session's history: `turn:N` or a commit, and the code snapshot there.

Invariants:
- `turn:N` names the newest commit of turn N (its last step): the chat as turn N left
  it. A commit names itself, given whole or as a unique prefix of 4+ hex characters; it
  must be in the session's first-parent history (a fork's includes its parent's).
- The code at a commit is the newest `Code-Snapshot` trailer at or before it: a step
  that changed no file names the snapshot before it, so any commit has its code.
"""

import re
from collections.abc import Iterator

from gitsessions.store.sessions import Head, SessionStore
from gitsessions.store.trailers import parse_trailers
from gitsessions.values.errors import BadUsage, InvalidInput

_TURN = re.compile(r"turn:(\d+)")
_HEX = re.compile(r"[0-9a-f]{4,40}")


class NoSuchPoint(InvalidInput):
    """`--at` or `--to` names no turn or commit of the session."""


def _trailers(store: SessionStore, head: Head) -> Iterator[tuple[bytes, dict[str, str]]]:
    for commit_id, commit in store.history(head):
        yield commit_id, parse_trailers(commit.message)[1]


def turn_commit(store: SessionStore, head: Head, turn: int) -> bytes:
    """The newest commit of turn `turn` (`NoSuchPoint` names the last turn there is)."""
    last = 0
    for commit_id, trailers in _trailers(store, head):
        number = trailers.get("Turn", "")
        if trailers.get("Event") == "turn" and number.isdigit():
            if int(number) == turn:
                return commit_id
            last = max(last, int(number))
    has = f"its last turn is {last}" if last else "it has no turns"
    raise NoSuchPoint(f"session {head.id[:8]} has no turn {turn} ({has})")


def parse_turn(text: str) -> int:
    """N of `turn:N` (or a bare N)."""
    match = _TURN.fullmatch(text.strip()) or re.fullmatch(r"(\d+)", text.strip())
    if match is None:
        raise BadUsage(f"expected turn:N, got {text!r}")
    return int(match.group(1))


def resolve(store: SessionStore, head: Head, at: str | None) -> bytes:
    """The commit `at` names (None: the session's head)."""
    if at is None:
        return head.commit
    text = at.strip().lower()
    if text.startswith("turn:"):
        return turn_commit(store, head, parse_turn(text))
    if not _HEX.fullmatch(text):
        raise BadUsage(f"--at takes turn:N or a commit of the session, got {at!r}")
    found = [c for c, _ in store.history(head) if c.decode().startswith(text)]
    if not found:
        raise NoSuchPoint(f"commit {text} is not in the history of session {head.id[:8]}")
    if len(found) > 1:
        raise BadUsage(f"commit prefix {text} is ambiguous; type more characters")
    return found[0]


def snapshot_at(store: SessionStore, head: Head, commit: bytes) -> str | None:
    """The code snapshot recorded at or before `commit`, or None."""
    seen = False
    for commit_id, trailers in _trailers(store, head):
        seen = seen or commit_id == commit
        if seen and trailers.get("Code-Snapshot"):
            return trailers["Code-Snapshot"]
    return None


def newest_snapshot(store: SessionStore, head: Head) -> tuple[str, int | None] | None:
    """The newest code snapshot the session's history names, and the turn whose commit
    names it (None: a commit of no turn, as a fork's own), or None when none does."""
    for _commit_id, trailers in _trailers(store, head):
        if trailers.get("Code-Snapshot"):
            turn = trailers.get("Turn", "")
            return trailers["Code-Snapshot"], int(turn) if turn.isdigit() else None
    return None


def all_snapshots(store: SessionStore, head: Head) -> list[str]:
    """Every code snapshot the session's history names, newest first, once each."""
    found: dict[str, None] = {}
    for _commit_id, trailers in _trailers(store, head):
        if trailers.get("Code-Snapshot"):
            found.setdefault(trailers["Code-Snapshot"])
    return list(found)


def turn_of(store: SessionStore, commit: bytes) -> int | None:
    """The turn a commit belongs to, if its trailers say."""
    turn = parse_trailers(store.git.commit(commit).message)[1].get("Turn", "")
    return int(turn) if turn.isdigit() else None
