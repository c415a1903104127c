"""A giant message cut to a head and a tail (compaction's stage 1): pure values.

Invariant: the cut message names the transcript message that holds it whole and how to
read it back (`read_session`); a cut tool-call argument stays valid JSON (an object
{"head", "cut", "tail"}); the input is never mutated.
"""

import json
from collections.abc import Sequence

from gitsessions.values.messages import Message, text_of


def last_index_of(record: Sequence[Message], message: Message, bound: int) -> int | None:
    """The last transcript index before `bound` holding `message`."""
    for index in range(min(bound, len(record)) - 1, -1, -1):
        if record[index] == message:
            return index
    return None


def _cut_text(text: str, keep: int, where: str) -> str:
    if len(text) <= keep:
        return text
    half = keep // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half} chars cut; {where}]\n{text[-half:]}"


def cut_message(message: Message, index: int, keep: int) -> Message:
    """`message` with its text and each tool-call argument cut to about `keep` chars; a
    cut argument becomes a JSON object {"head", "cut", "tail"}, so it stays valid JSON."""
    where = (
        f"the whole message is transcript message {index}: "
        f"read_session(start={index}, end={index + 1})"
    )
    cut: Message = dict(message)
    content = message.get("content")
    if isinstance(content, str):
        cut["content"] = _cut_text(content, keep, where)
    elif isinstance(content, list):
        cut["content"] = _cut_text(text_of(message), keep, where)
    calls = []
    for call in message.get("tool_calls") or []:
        arguments = str((call.get("function") or {}).get("arguments", ""))
        if len(arguments) > keep:
            half = keep // 2
            note = f"{len(arguments) - 2 * half} chars of the arguments cut; {where}"
            arguments = json.dumps(
                {"head": arguments[:half], "cut": note, "tail": arguments[-half:]},
                ensure_ascii=False,
            )
            call = {**call, "function": {**call["function"], "arguments": arguments}}
        calls.append(call)
    if calls:
        cut["tool_calls"] = calls
    return cut
