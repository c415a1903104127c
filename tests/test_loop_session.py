"""The turn loop against a session kept in memory (issue 33 item 6): a turn with a tool
call and its answer, against the scripted model server and real tools, with no store at
all. The loop is typed with `AgentSession` (issue 43: the protocol it once had, which
its callers did not keep to, is gone); whatever a plain turn calls of its session
beyond what `MemorySession` has would fail here."""

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from gitsessions.agent.loop import Agent
from gitsessions.agent.turns import AgentConfig
from gitsessions.services.compaction.compaction_policy import Policy
from gitsessions.services.model.model import ModelClient
from gitsessions.services.settings.config import resolve_model_settings
from gitsessions.services.tools import approve_all, create_registry
from gitsessions.values.messages import Message
from gitsessions.values.tokens import TokenCounter
from tests.fake_openai import FakeOpenAI
from tests.tool_helpers import ENV


class MemoryHead(NamedTuple):
    id: str
    commit: bytes
    header: dict[str, Any]


class MemoryStore:
    def __init__(self, home: Path) -> None:
        self.home = home

    def history(self, head: MemoryHead) -> Iterable[tuple[bytes, Any]]:
        return iter(())


class MemorySession:
    """A session whose commits are a list: each checkpoint keeps the subject, the
    trailers and a copy of the context and of the messages it records."""

    def __init__(self, home: Path, system: str) -> None:
        self.turn = 0
        self.context: list[Message] = [{"role": "system", "content": system}]
        self.pending: list[Message] = []
        self.commits: list[dict[str, Any]] = []
        self.usage: list[tuple[str, int, int]] = []
        self.header: dict[str, Any] = {}
        self._store = MemoryStore(home)
        self._dirty = False

    @property
    def id(self) -> str:
        return "memory"

    @property
    def head(self) -> MemoryHead:
        return MemoryHead("memory", b"%040d" % len(self.commits), dict(self.header))

    @property
    def store(self) -> MemoryStore:
        return self._store

    @property
    def dirty(self) -> bool:
        return self._dirty

    def add(self, message: Message, **meta: Any) -> None:
        self.context.append(message)
        self.record(message)

    def record(self, message: Message, **meta: Any) -> None:
        self.pending.append(message)
        self._dirty = True

    def withdraw(self, count: int) -> None:
        del self.context[-count:]
        del self.pending[-count:]

    def checkpoint(
        self, subject: str, event: str = "turn", trailers: Mapping[str, Any] | None = None
    ) -> bool:
        if not self._dirty:
            return False
        self.commits.append(
            {"subject": subject, "trailers": dict(trailers or {}), "recorded": self.pending}
        )
        self.pending, self._dirty = [], False
        return True

    def count_usage(self, model: str, prompt: int, completion: int, cost: float) -> None:
        self.usage.append((model, prompt, completion))
        self._dirty = True

    def update_header(self, **fields: Any) -> None:
        self.header.update(fields)
        self._dirty = True

    def set_context(self, messages: list[Message]) -> None:
        self.context, self._dirty = list(messages), True

    def unanswered_prompt(self) -> str | None:
        last = self.context[-1]
        return str(last.get("content")) if last.get("role") == "user" else None

    def last_record(self) -> Message | None:
        return self.pending[-1] if self.pending else None

    def open_calls(self) -> list[str]:
        return []

    def adopt(self, head: Any) -> None:
        raise AssertionError("nothing else writes an in-memory session")


def test_a_turn_runs_against_an_in_memory_session(
    server: FakeOpenAI, workspace: Path, tmp_path: Path
) -> None:
    session = MemorySession(tmp_path, "you are a test")
    settings = resolve_model_settings({"base_url": server.base_url, "model": "m"}, {}, {})
    write = {"id": "call_w", "name": "write_file", "arguments": {"path": "x.txt", "content": "x"}}
    server.reply(content=None, tool_calls=[write])
    server.reply(content="Wrote x.txt.")
    server.reply(content="A file written")  # the list summary asked after the first turn
    config = AgentConfig(model="m", summary_model="m", policy=Policy(), stream=True)
    with ModelClient(settings) as client:
        agent = Agent(
            session,  # type: ignore[arg-type]  # in memory: what a plain turn uses only
            client,
            create_registry(workspace, ENV, approve=approve_all),
            TokenCounter(),
            config,
            lambda *a: 0.0,
        )
        result = agent.run_turn("write x.txt")
        agent.settle_title()
    assert result.reply == "Wrote x.txt."
    assert (workspace / "x.txt").read_text() == "x"
    roles = [m["role"] for m in session.context]
    assert roles == ["system", "user", "assistant", "tool", "assistant"]
    assert [c["trailers"]["Step"] for c in session.commits[:3]] == [0, 1, 2]
    assert session.header["summary"] == "A file written"  # the title, through update_header
    recorded = [m["role"] for c in session.commits for m in c["recorded"]]
    assert recorded == roles[1:]  # every message saved once, in order
    assert session.commits[0]["subject"] == "turn 1: write x.txt"
    assert len(session.usage) >= 2  # both requests of the turn counted
    first = server.requests[0]
    assert json.dumps(first["messages"][-1]) == json.dumps(
        {"role": "user", "content": "write x.txt"}
    )
