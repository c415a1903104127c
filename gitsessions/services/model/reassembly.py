"""A server's answer as a `Completion`: a body parsed, or a stream's chunks put together.

Invariants:
- The same plain data streamed or not; anything that is not a chat completion (HTML, no
  choices, a call without a name) is `BadResponse`.
- A stream ending before its finish reason raises `IncompleteReply`, and every error
  while streaming carries what arrived (`partial`), so the caller keeps the text and
  never runs the calls, whose arguments may be cut.
- Tool call ids are unique within a reply (`-2`, `-3`... suffixes; a missing id made).
- The SDK is never imported here (recognised through `sys.modules`).
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from gitsessions.services.model.completion import Completion, Message, Usage
from gitsessions.services.model.errors import BadResponse, IncompleteReply, ModelError


def as_dict(obj: Any) -> dict[str, Any]:
    if isinstance(obj, dict):
        return obj
    sdk = sys.modules.get("openai")  # only the SDK's client returns its models
    if sdk is not None and isinstance(obj, sdk.BaseModel):
        data: dict[str, Any] = obj.to_dict()  # the SDK's module, looked up: untyped here
        return data
    if isinstance(obj, str | bytes):  # the SDK hands over a body that is not JSON as it came
        text = obj.decode("utf-8", "replace") if isinstance(obj, bytes) else obj
        head = text.lstrip()[:200].lower()
        if head.startswith(("<!doctype html", "<html", "<head", "<body")) or "<html" in head:
            raise BadResponse(
                "the model server answered with HTML, not JSON (is --base-url right? "
                "it should end in /v1)"
            )
        shown = " ".join(text.split())[:80]
        raise BadResponse(f"the model server answered with text, not JSON: {shown!r}")
    raise BadResponse(f"the model server sent a {type(obj).__name__}, not a chat completion")


def _usage(data: Any) -> Usage | None:
    if not isinstance(data, Mapping):
        return None
    prompt, completion = data.get("prompt_tokens"), data.get("completion_tokens")
    if not isinstance(prompt, int) or not isinstance(completion, int):
        return None
    return Usage(prompt, completion)


def parse_completion(data: dict[str, Any], model: str) -> Completion:
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        raise BadResponse("the model server's response has no choices")
    message = choices[0].get("message")
    if not isinstance(message, Mapping):
        raise BadResponse("the model server's response has no message")
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        raise BadResponse("the model server's message content is not text")
    calls = message.get("tool_calls") or []
    if not isinstance(calls, list):
        raise BadResponse("the model server's tool_calls is not a list")
    return Completion(
        message=_assistant_message(content or "", _unique_ids([_tool_call(c) for c in calls])),
        usage=_usage(data.get("usage")),
        finish_reason=choices[0].get("finish_reason"),
        model=data.get("model") or model,
    )


def _tool_call(call: Any) -> Message:
    function = call.get("function") if isinstance(call, Mapping) else None
    if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
        raise BadResponse("the model server sent a tool call without a function name")
    arguments = function.get("arguments")
    return {
        "id": call.get("id") or f"call_{uuid.uuid4().hex[:12]}",
        "type": "function",
        "function": {
            "name": function["name"],
            "arguments": arguments if isinstance(arguments, str) and arguments else "{}",
        },
    }


def _unique_ids(calls: list[Message]) -> list[Message]:
    """`calls` with every id unique: a repeated id gets the first free `-2`, `-3`...
    suffix, so each result answers exactly one call."""
    seen: set[str] = set()
    for call in calls:
        base = call["id"]
        n = 1
        while call["id"] in seen:
            n += 1
            call["id"] = f"{base}-{n}"
        seen.add(call["id"])
    return calls


def _assistant_message(text: str, calls: list[Message]) -> Message:
    message: Message = {"role": "assistant", "content": text or (None if calls else "")}
    if calls:
        message["tool_calls"] = calls
    return message


class Assembly:
    """A streamed reply as its chunks arrive; what arrived is kept if the stream fails."""

    def __init__(self, model: str) -> None:
        self.requested = model  # the model asked for (error messages name it)
        self.model = model
        self.reply: Completion | None = None  # a reply that was not streamed
        self.text: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.usage: Usage | None = None
        self.finish_reason: str | None = None
        self.saw_choice = False

    def feed(self, data: Mapping[str, Any], on_text: Callable[[str], None] | None) -> None:
        self.model = data.get("model") or self.model
        self.usage = _usage(data.get("usage")) or self.usage
        for choice in data.get("choices") or []:
            self.saw_choice = True
            self.finish_reason = choice.get("finish_reason") or self.finish_reason
            delta = choice.get("delta") or {}
            piece = delta.get("content")
            if isinstance(piece, str) and piece:
                self.text.append(piece)
                if on_text is not None:
                    on_text(piece)
            for part in delta.get("tool_calls") or []:
                _merge_call_delta(self.calls, part)

    def completion(self, partial: bool = False) -> Completion:
        """The reply; `partial` skips calls cut before their name arrived."""
        ordered = [self.calls[i] for i in sorted(self.calls)]
        calls = [_tool_call(c) for c in ordered if c["function"]["name"] or not partial]
        message = _assistant_message("".join(self.text), _unique_ids(calls))
        return Completion(message, self.usage, self.finish_reason, self.model)

    def partial(self) -> Completion | None:
        """What arrived so far, None when nothing did."""
        return self.completion(partial=True) if self.text or self.calls or self.usage else None

    def attach(self, error: ModelError) -> ModelError:
        """`error`, carrying what arrived before it (if anything did)."""
        if error.partial is None:
            error.partial = self.partial()
        return error

    def finish(self, url: str) -> Completion:
        if not self.saw_choice:
            raise BadResponse("the model server's stream carried no choices")
        if self.finish_reason is None:
            raise self.attach(
                IncompleteReply(
                    f"the model server at {url} ended its stream before the reply was "
                    "finished (no finish reason)"
                )
            )
        return self.completion()


def _merge_call_delta(calls: dict[int, dict[str, Any]], part: Mapping[str, Any]) -> None:
    """Fold one streamed tool-call fragment into `calls`, keyed by its index."""
    index = part.get("index")
    if not isinstance(index, int):  # servers that omit the index send whole calls
        index = len(calls) if part.get("id") or not calls else max(calls)
    call = calls.setdefault(index, {"id": None, "function": {"name": None, "arguments": ""}})
    call["id"] = part.get("id") or call["id"]
    function = part.get("function") or {}
    if function.get("name"):
        call["function"]["name"] = function["name"]
    if isinstance(function.get("arguments"), str):
        call["function"]["arguments"] += function["arguments"]
