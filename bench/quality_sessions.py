"""The planted-fact sessions of bench/compaction_quality.py: how they are written and
how they are stored.

Invariant: a session is a pure function of its module (bench/quality_cart.py,
quality_ingest.py, quality_retry.py): OpenAI chat messages with real tool calls and
results in the shapes the agent's tools produce (`run_shell` results start with
`exit code: N`, `update_plan` saves the plan), the facts a continuing agent must know,
and a hand-written control summary that states every one of them. It is stored through
the store's API, one commit per turn as the agent commits, the plan saved when
update_plan runs, so `gitsessions compact` reads it as any session.
"""

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.quality_scoring import Fact
from gitsessions.agent.prompts import system_prompt
from gitsessions.store.sessions import Change, SessionStore
from gitsessions.values.clock import now_iso
from gitsessions.values.ids import new_id
from gitsessions.values.records import new_header

Message = dict[str, Any]


@dataclass(frozen=True)
class Planted:
    """A session, its facts and its control summary."""

    name: str
    messages: list[Message]
    facts: tuple[Fact, ...]
    control: str
    title: str


@dataclass
class Script:
    """Writes a session a message at a time, as the agent would have recorded it."""

    workspace: str
    messages: list[Message] = field(default_factory=list)
    _calls: int = 0

    def __post_init__(self) -> None:
        self.messages.append({"role": "system", "content": system_prompt(self.workspace)})

    def user(self, text: str) -> None:
        self.messages.append({"role": "user", "content": text})

    def say(self, text: str) -> None:
        self.messages.append({"role": "assistant", "content": text})

    def tool(self, name: str, arguments: dict[str, Any], result: str, say: str = "") -> None:
        """One assistant message with one tool call, then the tool's result."""
        self.tools([(name, arguments, result)], say)

    def tools(self, calls: Sequence[tuple[str, dict[str, Any], str]], say: str = "") -> None:
        """One assistant message with these tool calls, then their results in order."""
        made = []
        for name, arguments, _result in calls:
            self._calls += 1
            made.append({
                "id": f"call_{self._calls:03d}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            })  # fmt: skip
        self.messages.append({"role": "assistant", "content": say or None, "tool_calls": made})
        for call, (name, arguments, result) in zip(made, calls, strict=True):
            if name == "update_plan":
                lines = [f"[{i['status']}] {i['step']}" for i in arguments["items"]]
                result = "plan saved:\n" + "\n".join(lines)
            self.messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})

    def plan(self, *items: tuple[str, str]) -> None:
        """An update_plan call: (step, status) items."""
        steps = [{"step": step, "status": status} for step, status in items]
        self.tool("update_plan", {"items": steps}, "")


def shell(exit_code: int, output: str) -> str:
    """A run_shell result as the tool writes it."""
    return f"exit code: {exit_code}\n{output.strip()}"


def diff_text(text: str) -> str:
    """A diff as git prints it: an empty context line is a single space (the sessions'
    sources write it empty)."""
    return "\n".join(line or " " for line in text.strip("\n").split("\n"))


def numbered(text: str, first: int = 1) -> str:
    """A read_file result: each line behind its number and a tab."""
    lines = text.strip("\n").split("\n")
    return "".join(f"{n:>6}\t{line}\n" for n, line in enumerate(lines, start=first))


def store_session(store: SessionStore, planted: Planted) -> str:
    """Store `planted` as a session (one commit per turn, a turn starting at each user
    message, the plan as update_plan left it); its id."""
    sid = new_id()
    system = planted.messages[0]
    head = store.create(
        new_header(sid, now_iso(), title=planted.title), Change(context=[system], append=[system])
    )
    turns: list[list[Message]] = []
    for message in planted.messages[1:]:
        if message["role"] == "user" or not turns:
            turns.append([])
        turns[-1].append(message)
    context = [system]
    plan: list[Any] | None = None
    for number, turn in enumerate(turns, start=1):
        context += turn
        for message in turn:
            for call in message.get("tool_calls") or []:
                if call["function"]["name"] == "update_plan":
                    plan = json.loads(call["function"]["arguments"])["items"]
        subject = f"turn {number}: {str(turn[0].get('content'))[:50]}"
        change = Change(context=list(context), append=list(turn), plan=plan)
        head = store.commit(head, change, event="turn", subject=subject)
    return sid
