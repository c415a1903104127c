"""OpenAI chat messages as plain dicts, and the checks every stored context must pass.

Invariant (the one that matters most): every tool call has exactly one result, after it
and before the next non-tool message, and every result has its call; servers reject
contexts that break it, so compaction and import both check it.
Transcript-only fields, never in the context or sent: a reply the model did not finish is
an assistant message with `"incomplete": true` (and `"interrupted": true` after a Ctrl-C),
its tool calls moved to `unsent_tool_calls`: never run, so they need no results.
"""

from collections.abc import Iterable, Mapping
from typing import Any

from gitsessions.values.errors import InvalidInput

Message = dict[str, Any]
ROLES = ("system", "user", "assistant", "tool")
# what a tool message with empty content says in a request (some servers refuse empty
# content; the stored message keeps what the tool returned)
NO_OUTPUT = "(no output)"
TRANSCRIPT_ONLY = ("incomplete", "interrupted", "unsent_tool_calls")  # never in a context


class InvalidMessages(InvalidInput):
    """A list of messages is not a valid OpenAI chat context."""


def validate_message(message: Any, where: str) -> None:
    """Raise `InvalidMessages` naming `where` if `message` is not a chat message."""
    if not isinstance(message, Mapping):
        raise InvalidMessages(f"{where}: expected an object, got {type(message).__name__}")
    role = message.get("role")
    if role not in ROLES:
        raise InvalidMessages(f"{where}: role must be one of {', '.join(ROLES)}, got {role!r}")
    content = message.get("content")
    if content is not None and not isinstance(content, str | list):
        raise InvalidMessages(f"{where}: content must be a string, a list or null")
    if role == "tool" and not isinstance(message.get("tool_call_id"), str):
        raise InvalidMessages(f"{where}: a tool message needs a string tool_call_id")
    for flag in ("incomplete", "interrupted"):
        if not isinstance(message.get(flag, False), bool):
            raise InvalidMessages(f"{where}: {flag} must be true or false")
    for key in ("tool_calls", "unsent_tool_calls"):
        calls = message.get(key)
        if calls is None:
            continue
        if role != "assistant":
            raise InvalidMessages(f"{where}: only assistant messages may carry {key}")
        _validate_calls(calls, f"{where}: {key}")


def _validate_calls(calls: Any, where: str) -> None:
    if not isinstance(calls, list):
        raise InvalidMessages(f"{where} must be a list")
    for n, call in enumerate(calls):
        if not isinstance(call, Mapping) or not isinstance(call.get("id"), str):
            raise InvalidMessages(f"{where}[{n}] needs a string id")
        function = call.get("function")
        if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
            raise InvalidMessages(f"{where}[{n}] needs function.name")
        if not isinstance(function.get("arguments", ""), str):
            raise InvalidMessages(f"{where}[{n}].function.arguments must be a string")


def pairing_errors(messages: Iterable[Mapping[str, Any]]) -> list[str]:
    """Every way `messages` breaks call/result pairing; empty when the pairing is valid.

    Each assistant tool call must be answered by exactly one tool message in the run of
    tool messages that directly follows it; each tool message must answer such a call.
    """
    errors: list[str] = []
    open_calls: dict[str, int] = {}
    for index, message in enumerate(messages):
        role = message.get("role")
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id in open_calls:
                del open_calls[call_id]
            else:
                errors.append(f"message {index}: tool result {call_id!r} has no matching call")
            continue
        for call_id, at in open_calls.items():
            errors.append(f"message {at}: tool call {call_id!r} has no result")
        open_calls = {}
        if role == "assistant":
            for call in message.get("tool_calls") or []:
                call_id = call.get("id")
                if call_id in open_calls:
                    errors.append(f"message {index}: duplicate tool call id {call_id!r}")
                open_calls[call_id] = index
    for call_id, at in open_calls.items():
        errors.append(f"message {at}: tool call {call_id!r} has no result")
    return errors


def validate_messages(messages: Any, where: str, *, check_pairing: bool = True) -> None:
    """Raise `InvalidMessages` on the first problem in a list of chat messages."""
    if not isinstance(messages, list):
        raise InvalidMessages(f"{where}: expected a list of messages")
    for index, message in enumerate(messages):
        validate_message(message, f"{where}[{index}]")
    if check_pairing:
        errors = pairing_errors(messages)
        if errors:
            raise InvalidMessages(f"{where}: {errors[0]}")


def text_of(message: Mapping[str, Any]) -> str:
    """The plain text of a message's content (list parts joined), '' when none."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text", "") for p in content if isinstance(p, Mapping)]
        return "\n".join(p for p in parts if isinstance(p, str))
    return ""


def alternating(messages: Iterable[Mapping[str, Any]]) -> list[Message]:
    """`messages` as a request strict chat templates accept: each run of consecutive user
    messages merged into one (their texts joined by a blank line), and an assistant
    message without tool calls merged into the assistant message after it (an imported
    source may hold two replies in a row), so user and assistant take turns (tool
    results aside). A continuation note followed by the kept prompt
    becomes one user message (a prompt after an unanswered one never meets it: the
    agent closes the unanswered one first, `agent/interrupted.py`); a tool message
    whose content is empty (none, blank text, no parts) says `NO_OUTPUT`. What is
    stored is not changed. Other messages are passed on as they are (copied)."""
    merged: list[Message] = []
    for message in messages:
        last = merged[-1] if merged else {}
        role = message.get("role")
        if role == "user" and last.get("role") == "user":
            merged[-1] = {**last, "content": _joined(last, message)}
        elif role == "assistant" and last.get("role") == "assistant" and not last.get("tool_calls"):
            merged[-1] = {**message, "content": _joined(last, message) or None}
        elif role == "tool" and _empty(message.get("content")):
            merged.append({**message, "content": NO_OUTPUT})
        else:
            merged.append(dict(message))
    return merged


def _empty(content: Any) -> bool:
    """Whether a message's content says nothing: none, blank text or no parts."""
    return content is None or content == [] or (isinstance(content, str) and not content.strip())


def _joined(first: Mapping[str, Any], second: Mapping[str, Any]) -> str | list[Any]:
    a, b = first.get("content"), second.get("content")
    if isinstance(a, list) or isinstance(b, list):  # content parts: keep them parts
        return [*_parts(a), *_parts(b)]
    return "\n\n".join(t for t in (a or "", b or "") if t)


def _parts(content: Any) -> list[Any]:
    if isinstance(content, list):
        return list(content)
    return [{"type": "text", "text": content}] if content else []
