"""A session's compactions read back from their commits (`show --compaction N`): which
commit made compaction N, and what it took out of the working context.

Invariants:
- Compaction N is the `Event: compact` commit after which `counts.compactions` is N
  (imported records without commits have none: `NoSuchCompaction`); the context before
  is its parent's, after its own. Nothing is written or re-summarised.
- Taken out: a message of the context before whose transcript index is not in the
  context after (unless `cleared` lists it: cleared in place); the summary is the note
  the after context holds and the before one did not. Counts use the counter given.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gitsessions.store.reader import Head, SessionReader
from gitsessions.store.trailers import parse_trailers
from gitsessions.values.clock import iso_of_timestamp
from gitsessions.values.errors import GitsessionsError
from gitsessions.values.messages import Message, text_of
from gitsessions.values.tokens import default_counter

Count = Callable[[list[Message]], int]
FIRST_LINE = 200
UNDO_EVENT = "compact-undo"


class NoSuchCompaction(GitsessionsError):
    """The session has no compaction of that number recorded by a commit."""


@dataclass(frozen=True)
class Found:
    """Compaction `number` of a session: its commit, the states before and after it."""

    number: int
    commit: bytes
    before: Head  # the state at the commit's parent
    after: Head  # the state the compaction commit wrote
    trailers: dict[str, str]
    time: str


def compaction_commits(store: SessionReader, head: Head) -> list[tuple[int, bytes, Any]]:
    """`(number, commit id, commit)` of every compaction commit in `head`'s first-parent
    history, newest first; the number is the session's count of compactions after it."""
    found = []
    for commit_id, commit in store.history(head):
        _subject, trailers = parse_trailers(commit.message)
        if trailers.get("Event") != "compact" or not commit.parents:
            continue
        number = store.head_at(head.id, commit_id).counts.get("compactions", 0)
        found.append((number, commit_id, commit))
    return found


def find(store: SessionReader, head: Head, number: int) -> Found:
    """Compaction `number` (from 1) of the session at `head`."""
    total = head.counts.get("compactions", 0)
    if number < 1 or number > total:
        have = f"compactions 1 to {total}" if total else "no compactions"
        raise NoSuchCompaction(f"session {head.id[:8]} has no compaction {number} ({have})")
    for n, commit_id, commit in compaction_commits(store, head):
        if n == number:
            before = store.head_at(head.id, commit.parents[0])
            if before.counts.get("compactions", 0) != number - 1:
                break
            _subject, trailers = parse_trailers(commit.message)
            after = store.head_at(head.id, commit_id)
            return Found(
                number, commit_id, before, after, trailers, iso_of_timestamp(commit.commit_time)
            )
        if n < number:
            break
    raise NoSuchCompaction(
        f"compaction {number} of session {head.id[:8]} has no commit of its own "
        "(recorded by an import); nothing to show or undo"
    )


def undone_numbers(store: SessionReader, head: Head) -> set[int]:
    """The compactions an undo commit of `head`'s history took back."""
    numbers = set()
    for _commit_id, commit in store.history(head):
        _subject, trailers = parse_trailers(commit.message)
        if trailers.get("Event") == UNDO_EVENT and trailers.get("Compaction", "").isdigit():
            numbers.add(int(trailers["Compaction"]))
    return numbers


def first_line(message: Message) -> str:
    """A message in one line: its text's first non-blank line, else the tools it calls."""
    lines = [line.strip() for line in text_of(message).splitlines() if line.strip()]
    if lines:
        line = lines[0]
    else:
        calls = message.get("tool_calls") or []
        names = [str((c.get("function") or {}).get("name") or "?") for c in calls]
        line = f"calls {', '.join(names)}" if names else ""
    return line if len(line) <= FIRST_LINE else line[: FIRST_LINE - 3] + "..."


def _state(head: Head, lines: list[tuple[Message, int | None]], tokens: int) -> dict[str, Any]:
    return {"commit": head.commit.decode(), "messages": len(lines), "tokens": tokens}


def _item(message: Message, ref: int | None, count: Count, turns: dict[int, Any]) -> dict[str, Any]:
    return {
        "index": ref,
        "role": str(message.get("role", "?")),
        "turn": turns.get(ref) if ref is not None else None,
        "tokens": count([message]),
        "first_line": first_line(message),
    }


def view(store: SessionReader, head: Head, number: int) -> dict[str, Any]:
    """What compaction `number` took out of the working context and the summary it left,
    with both states (counted by the process's token counter), as JSON-ready data."""
    count = default_counter().estimate
    found = find(store, head, number)
    before = store.context_lines(found.before)
    after = store.context_lines(found.after)
    records = store.read(found.after, "compactions")
    record = records[number - 1] if len(records) >= number else {}
    if not isinstance(record, dict):  # a damaged record: the commits still tell the rest
        record = {}
    cleared = {int(i) for i in record.get("cleared") or [] if isinstance(i, int)}
    kept_refs = {ref for _m, ref in after if ref is not None}
    kept_inline = [m for m, ref in after if ref is None]
    held_before = [m for m, _ref in before]
    refs = sorted({r for _m, r in before if r is not None})
    turns = _turns(store, found.before, refs)
    summarized, outputs = [], []
    for message, ref in before[1:]:  # the system prompt always stays
        if ref is not None and ref in kept_refs:
            continue
        if ref is None and message in kept_inline:
            continue
        item = _item(message, ref, count, turns)
        if ref is not None and ref in cleared:
            outputs.append(item)
        else:
            summarized.append(item)
    # what stands in for each cleared message: the new inline message of its role
    fresh = [m for m in kept_inline if m not in held_before]
    notes = [m for m in fresh if _is_summary(m)]
    stubs = [m for m in fresh if not _is_summary(m)]
    for item in outputs:
        stub = _stub_for(item, stubs, before)
        item["tokens_after"] = count([stub]) if stub is not None else 0
    summary = notes[0] if notes else None
    trailers = found.trailers
    return {
        "session": head.id,
        "compaction": number,
        "commit": found.commit.decode(),
        "time": found.time,
        "trigger": str(record.get("trigger") or trailers.get("Trigger") or "?"),
        "stages": [str(stage) for stage in record.get("stages") or [] if stage],
        "recorded": {
            "before_tokens": record.get("before_tokens"),
            "after_tokens": record.get("after_tokens"),
        },
        "undone": number in undone_numbers(store, head),
        "before": _state(found.before, before, count(held_before)),
        "after": _state(found.after, after, count([m for m, _r in after])),
        "summarized": summarized,
        "cleared": outputs,
        "summary": None
        if summary is None
        else {"text": text_of(summary), "tokens": count([summary])},
    }


def _is_summary(message: Message) -> bool:
    """The continuation note (the user message compaction writes), not a stub."""
    from gitsessions.services.compaction.continuation import is_note  # the note's shape

    return is_note(message)


def _stub_for(
    item: dict[str, Any], stubs: list[Message], before: list[tuple[Message, int | None]]
) -> Message | None:
    """The new inline message that replaced the cleared message `item` (by its tool call
    id for a tool output, else the first unclaimed one of its role)."""
    original = next((m for m, ref in before if ref == item["index"]), None)
    call = original.get("tool_call_id") if original else None
    for stub in stubs:
        if stub.get("role") != item["role"]:
            continue
        if call is not None and stub.get("tool_call_id") != call:
            continue
        stubs.remove(stub)
        return stub
    return None


def _turns(store: SessionReader, head: Head, refs: list[int]) -> dict[int, Any]:
    """`{transcript index: turn}` for the indices `refs` (sorted)."""
    if not refs:
        return {}
    wanted = set(refs)
    out: dict[int, Any] = {}
    for index, record in store.iter_records(head, refs[0], refs[-1] + 1):
        if index in wanted:
            out[index] = record.get("turn")
    return out
