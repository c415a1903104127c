"""A model's reply as plain data: the assistant message in the standard chat shape, the
usage the server reported, the finish reason and the model that answered.

Invariant: pure values, the same whether the reply was streamed or not; nothing here
talks to a server or imports the SDK.
"""

from typing import Any, NamedTuple

Message = dict[str, Any]


class Usage(NamedTuple):
    """Tokens the server says the request used."""

    prompt_tokens: int
    completion_tokens: int


class Completion(NamedTuple):
    """One assistant reply as plain data."""

    message: Message
    usage: Usage | None
    finish_reason: str | None
    model: str
