"""What the turn loop (agent/loop.py `Agent`) uses of its session, as a protocol:
`AgentSession` (agent/session.py) is the stored one, and a test can hand the loop one
kept in memory (tests/test_loop_session.py).

Like openai-agents' four-method `Session`, the core is the items and their saving:
`context` (the messages sent next), `add` (a message for the context and the record),
`withdraw` (take back what was added and never saved), `checkpoint` (save what is
pending as one commit). The rest is what a turn notes besides: the record alone
(`record`), usage, header fields, and the questions a turn asks of its state.

`store` is read for the home's files (`home`: token counts, the audit line) in every
turn; compaction, undo and a retried turn's step number read its history too.
"""

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Protocol

from gitsessions.store.reader import Head
from gitsessions.values.messages import Message


class LoopStore(Protocol):
    """What a turn reads of the store itself (compaction takes the whole store)."""

    home: Path

    def history(self, head: "Head") -> Iterable[tuple[bytes, Any]]: ...


class LoopSession(Protocol):
    turn: int  # the number of the turn running (or last run)
    context: list[Message]  # the working context: what the model is sent next
    pending: list[Message]  # added or recorded, not committed yet

    @property
    def id(self) -> str: ...

    @property
    def head(self) -> "Head": ...

    @property
    def store(self) -> LoopStore: ...

    @property
    def dirty(self) -> bool: ...

    def add(self, message: Message, **meta: Any) -> None: ...

    def withdraw(self, count: int) -> None: ...

    def checkpoint(
        self, subject: str, event: str = "turn", trailers: Mapping[str, Any] | None = None
    ) -> bool: ...

    def record(self, message: Message, **meta: Any) -> None: ...

    def count_usage(self, model: str, prompt: int, completion: int, cost: float) -> None: ...

    def update_header(self, **fields: Any) -> None: ...

    def note_header(self, **fields: Any) -> None: ...

    def set_context(self, messages: list[Message]) -> None: ...

    def unanswered_prompt(self) -> str | None: ...

    def last_record(self) -> Message | None: ...

    def open_calls(self) -> list[str]: ...

    def adopt(self, head: "Head") -> None: ...
