"""What a session's commits say about its turns, read from their trailers: the newest
step of the current turn, and the newest turn whose prompt is still in the context."""

from gitsessions.store.reader import Head, SessionReader
from gitsessions.store.trailers import parse_trailers


def last_step(store: SessionReader, head: Head, turn: int) -> int:
    """The newest step saved in the session's current turn (0: only its prompt)."""
    for _commit_id, commit in store.history(head):
        trailers = parse_trailers(commit.message)[1]
        if "Turn" not in trailers:
            continue  # a compaction inside the turn
        if trailers["Turn"] != str(turn):
            return 0
        if trailers.get("Step", "").isdigit() and int(trailers["Step"]) > 0:
            return int(trailers["Step"])
    return 0


def last_kept_turn(store: SessionReader, head: Head) -> int | None:
    """The newest turn whose prompt is still in the context: the newest turn that
    started (a `Step: 0` commit) and was not undone since, nor rewound away (a
    rewind of the chat to turn N drops the later turns of the commits before it)."""
    undone: set[str] = set()
    below: int | None = None  # turns after this one were rewound away
    for _commit_id, commit in store.history(head):
        subject, trailers = parse_trailers(commit.message)
        event = trailers.get("Event")
        if event == "undo":
            undone.add(trailers.get("Undone-Turn", ""))
        elif event == "rewind" and "chat" in subject.rpartition("(")[2]:
            to = trailers.get("Rewind-To", "")
            if to.isdigit():
                below = int(to) if below is None else min(below, int(to))
        elif event == "turn" and trailers.get("Step") == "0":
            turn = trailers.get("Turn", "")
            if turn.isdigit() and turn not in undone and (below is None or int(turn) <= below):
                return int(turn)
    return None
