"""Stage 1 of compaction ("clear"): giant messages cut, old tool outputs stubbed.

Invariant: clearing never changes its input (what it cuts or clears is in a new list)
and never loses text the transcript does not hold.
A giant message is cut only when it is found in the transcript, and a cleared tool
output becomes a stub naming its transcript message index and `read_session`, so every
removed character can be read back. A context tool message is matched to the transcript
by `tool_call_id`, in order, from the end (see `transcript_indices`).
"""

import bisect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from gitsessions.services.compaction.compaction_policy import GIANT_MIN_TOKENS, Policy
from gitsessions.services.compaction.giants import cut_message, last_index_of
from gitsessions.values.messages import Message, text_of

Count = Callable[[Sequence[Message]], int]

STUB_PREFIX = "[cleared tool output:"


def stub_for(message: Mapping[str, Any], index: int, tokens: int) -> str:
    """The text that replaces a cleared tool output: its size and how to read it back."""
    chars = len(text_of(message))
    return (
        f"{STUB_PREFIX} {chars} chars, ~{tokens} tokens. Read it back with "
        f"read_session(start={index}, end={index + 1}): transcript message {index}.]"
    )


def is_stub(message: Mapping[str, Any]) -> bool:
    """Whether a tool message was already cleared."""
    return message.get("role") == "tool" and text_of(message).startswith(STUB_PREFIX)


def transcript_indices(
    messages: Sequence[Mapping[str, Any]], transcript: Sequence[Mapping[str, Any]]
) -> list[int | None]:
    """For each message, the transcript index of the same tool result (None for other
    messages or when not found), matching tool_call_id from the end backwards: the
    context's tail is the transcript's tail, and servers that reuse ids (`call_0` every
    turn) would otherwise match an earlier turn's result."""
    where: dict[Any, list[int]] = {}
    for j, message in enumerate(transcript):
        if message.get("role") == "tool":
            where.setdefault(message.get("tool_call_id"), []).append(j)
    result: list[int | None] = [None] * len(messages)
    position = len(transcript)
    for at in range(len(messages) - 1, -1, -1):
        message = messages[at]
        if message.get("role") != "tool":
            continue
        found = where.get(message.get("tool_call_id"), [])
        k = bisect.bisect_left(found, position) - 1
        if k >= 0:
            result[at] = found[k]
            position = found[k]
    return result


def _located(
    messages: Sequence[Message], record: Sequence[Message], start: int
) -> list[int | None]:
    """`transcript_indices` of `messages` in `record`, the transcript from `start` on."""
    return [None if i is None else i + start for i in transcript_indices(messages, record)]


def candidates(
    messages: list[Message], record: Sequence[Message], start: int, policy: Policy, count: Count
) -> tuple[list[tuple[int, int, str, int]], int]:
    """Clearable (position, transcript index, stub, tokens saved), oldest first, and how many
    unprotected outputs were kept because the transcript does not hold them."""
    tools = [i for i, m in enumerate(messages) if m.get("role") == "tool"]
    if not tools:
        return [], 0
    users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
    latest_user = users[-1] if users else 0
    protected = {tools[-1]}
    fixed = count([])  # per-request overhead (tool schemas, priming): not the message's
    used = 0
    for position in reversed([i for i in tools if i > latest_user]):
        used += count([messages[position]]) - fixed
        if used > policy.current_turn_allowance:
            break
        protected.add(position)
    keep = policy.keep_recent_tool_results
    protected |= {i for i in (tools[-keep:] if keep else []) if i < latest_user}
    indices = _located(messages, record, start)
    found: list[tuple[int, int, str, int]] = []
    unmatched = 0
    for position in tools:
        message = messages[position]
        if position in protected or is_stub(message):
            continue
        index = indices[position]
        if index is None:
            unmatched += 1
            continue
        tokens = count([message]) - fixed
        stub = stub_for(message, index, tokens)
        saved = tokens + fixed - count([{**message, "content": stub}])
        if saved > 0:
            found.append((position, index, stub, saved))
    return found, unmatched


def clear(
    messages: list[Message],
    record: Sequence[Message],
    start: int,
    policy: Policy,
    count: Count,
    total: int,
) -> tuple[list[Message], list[tuple[int, int]], int, int]:
    """Stage 1: a copy with giant messages cut and old outputs stubbed until at or under
    the target, the (position, transcript index) of each cut or cleared message, the
    unmatched count and how many giants were cut."""
    if total <= policy.target_tokens:
        return messages, [], 0, 0
    result, cleared = _cut_giants(messages, record, start, policy, count)
    giants = len(cleared)
    estimate = count(result) if cleared else total
    if estimate <= policy.target_tokens:
        return result, cleared, 0, giants
    found, unmatched = candidates(result, record, start, policy, count)
    cut = {position for position, _ in cleared}
    for position, index, stub, saved in found:
        result[position] = {**result[position], "content": stub}
        if position not in cut:  # a cut giant output stubbed after all: listed once
            cleared.append((position, index))
        estimate -= saved
        if estimate <= policy.target_tokens:
            estimate = count(result)  # the per-message savings are an estimate: verify
            if estimate <= policy.target_tokens:
                break
    return result, sorted(cleared), unmatched, giants


def _cut_giants(
    messages: list[Message], record: Sequence[Message], start: int, policy: Policy, count: Count
) -> tuple[list[Message], list[tuple[int, int]]]:
    """A copy with each giant message found in the transcript cut to a head and a tail,
    and the (position, transcript index) of each."""
    fixed = count([])
    limit = max(GIANT_MIN_TOKENS, policy.giant_share * policy.max_context_tokens)
    giants = [
        p
        for p, m in enumerate(messages)
        if p and m.get("role") != "system" and count([m]) - fixed > limit
    ]
    if not giants:
        return list(messages), []
    tools = _located(messages, record, start)
    result = list(messages)
    cut: list[tuple[int, int]] = []
    bound = start + len(record)
    for position in reversed(giants):
        message = messages[position]
        index = tools[position] if message.get("role") == "tool" else None
        if index is None:
            found = last_index_of(record, message, bound - start)
            index = None if found is None else found + start
        if index is None:
            continue  # not in the transcript: cutting it would lose its text
        bound = index
        result[position] = cut_message(message, index, policy.giant_keep_chars)
        cut.append((position, index))
    return result, sorted(cut)
