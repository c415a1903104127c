"""Items read from a source assembled into OpenAI chat messages that pair.

A format's reader turns its lines into items (`Reply`: a piece of an assistant reply,
`Result`: a tool's result, `Prompt`, `Boundary` and `Summary`: a compaction and its
summary, `Usage`, `Rollback`); `Assembler` turns them into `Entry`s (a transcript message
and its record's fields), `Compacted` and `RolledBack`.

Invariants:
- Every assistant message's tool calls are followed, at once, by exactly one `tool`
  message each, in call order: a call the source never answered gets a stub result, but
  only once a later line shows it never will be (a prompt, another reply).
- Output depends only on the lines read so far and is never taken back: what might
  still grow when the file ends (a reply without its end, a call without its result, a
  compaction without its summary) is held back, not emitted (`Assembler.held`), so a
  later import of the longer file emits the same output first, then more.
- Reasoning (Claude's thinking, Codex's reasoning, encrypted or not) is kept as data in
  the record's `source`, never in a message: nothing of it is ever sent to a model.
"""

import json
from dataclasses import dataclass, field
from typing import Any

from gitsessions.values.canonical import scrub

NO_RESULT = "[no result was recorded in the imported session]"


@dataclass
class Reply:
    key: str  # the reply it is part of (Claude's message.id, a Codex response)
    line: int
    time: str | None = None
    text: list[str] = field(default_factory=list)
    calls: list[dict[str, Any]] = field(default_factory=list)
    reasoning: list[Any] = field(default_factory=list)
    model: str | None = None
    usage: dict[str, int] | None = None
    final: bool = False  # the source says the reply is complete


@dataclass
class Result:
    call_id: str
    content: str | list[Any]
    line: int
    time: str | None = None
    error: bool = False


@dataclass
class Prompt:
    content: str | list[Any]
    line: int
    time: str | None = None
    role: str = "user"


@dataclass
class Boundary:
    line: int
    before_tokens: int
    trigger: str = "auto"
    time: str | None = None
    after_tokens: int | None = None


@dataclass
class Summary:
    text: str
    line: int
    time: str | None = None


@dataclass
class Usage:
    usage: dict[str, int]
    line: int


@dataclass
class Rollback:
    turns: int
    line: int


Item = Reply | Result | Prompt | Boundary | Summary | Usage | Rollback


@dataclass
class Entry:
    """One transcript message and its record's other fields."""

    message: dict[str, Any]
    meta: dict[str, Any]


@dataclass
class Compacted:
    """A compaction: its record (without `summary` filled in), and the summary message
    the new context starts with (None when the source wrote none)."""

    record: dict[str, Any]
    summary: Entry | None


@dataclass
class RolledBack:
    turns: int


Output = Entry | Compacted | RolledBack


@dataclass
class _Group:
    reply: Reply
    results: dict[str, Result] = field(default_factory=dict)


class Assembler:
    """Feed items in source order; collect what comes out (see the module's invariants)."""

    def __init__(self) -> None:
        self.group: _Group | None = None
        self.boundary: Boundary | None = None
        self.carried: list[Any] = []  # reasoning of a reply with nothing to say
        self.turn = 0
        self.step = 0
        self.orphans = 0  # results whose call the source does not hold
        self.held: int | None = None  # after finish(): first line held back
        self.tools: set[str] = set()

    def feed(self, item: Item) -> list[Output]:
        out: list[Output] = []
        if isinstance(item, Reply):
            out += self._settle_boundary()
            if self.group is not None and self.group.reply.key != item.key:
                out += self._settle(eof=False)
            if self.group is None:
                self.group = _Group(Reply(item.key, item.line, item.time))
            reply = self.group.reply
            reply.text += item.text
            reply.calls += [c for c in item.calls if c["id"] not in {x["id"] for x in reply.calls}]
            reply.reasoning += item.reasoning
            reply.model = reply.model or item.model
            reply.usage = item.usage or reply.usage
            reply.final = reply.final or item.final
        elif isinstance(item, Result):
            group = self.group
            if group is not None and any(c["id"] == item.call_id for c in group.reply.calls):
                group.results.setdefault(item.call_id, item)
            else:
                self.orphans += 1
        elif isinstance(item, Usage):
            if self.group is not None:
                self.group.reply.usage = self.group.reply.usage or item.usage
                self.group.reply.final = True
        elif isinstance(item, Prompt):
            out += self._settle(eof=False) + self._settle_boundary()
            if item.role == "user":
                self.turn += 1
                self.step = 0
            else:
                self.step += 1 if self.turn else 0
            out.append(self._entry({"role": item.role, "content": item.content}, item.time))
        elif isinstance(item, Boundary):
            out += self._settle(eof=False) + self._settle_boundary()
            self.boundary = item
        elif isinstance(item, Summary):
            out += self._settle(eof=False)
            boundary = self.boundary or Boundary(item.line, 0, time=item.time)
            self.boundary = None
            self.step += 1
            summary = self._entry({"role": "user", "content": item.text}, item.time)
            out.append(Compacted(_record(boundary, item.text), summary))
        elif isinstance(item, Rollback):
            out += self._settle(eof=False) + self._settle_boundary()
            out.append(RolledBack(item.turns))
        return out

    def finish(self) -> list[Output]:
        """What the end of the file settles; what might still grow stays held back."""
        out = self._settle(eof=True)
        if self.group is not None:
            self.held = self.group.reply.line
        elif self.boundary is not None:
            self.held = self.boundary.line
        return out

    def _settle_boundary(self) -> list[Output]:
        """A compaction whose summary never came: the context starts again empty."""
        if self.boundary is None:
            return []
        boundary, self.boundary = self.boundary, None
        return [Compacted(_record(boundary, None), None)]

    def _settle(self, eof: bool) -> list[Output]:
        group = self.group
        if group is None:
            return []
        reply = group.reply
        answered = all(c["id"] in group.results for c in reply.calls)
        if eof and (not answered or (not reply.calls and not reply.final)):
            return []  # held back: it may still grow
        self.group = None
        text = "\n\n".join(t for t in reply.text if t)
        if not text and not reply.calls:
            self.carried += reply.reasoning
            return []
        message: dict[str, Any] = {"role": "assistant", "content": text or None}
        if reply.calls:
            message["tool_calls"] = reply.calls
            self.tools.update(c["function"]["name"] for c in reply.calls)
        reasoning, self.carried = self.carried + reply.reasoning, []
        self.step += 1
        meta: dict[str, Any] = {"model": reply.model, "usage": reply.usage}
        if reasoning:
            meta["source"] = {"reasoning": reasoning}
        out: list[Output] = [self._entry(message, reply.time, **meta)]
        for call in reply.calls:
            result = group.results.get(call["id"])
            content: Any = NO_RESULT if result is None else result.content
            if result is not None and result.error and isinstance(content, str):
                content = content if content.startswith("error") else f"error: {content}"
            self.step += 1
            out.append(
                self._entry(
                    {"role": "tool", "tool_call_id": call["id"], "content": content},
                    (result.time if result else None) or reply.time,
                )
            )
        return out

    def _entry(self, message: dict[str, Any], time: str | None, **meta: Any) -> Entry:
        fields = {"time": time, "turn": self.turn, "step": self.step, **meta}
        return Entry(scrub(message), scrub({k: v for k, v in fields.items() if v is not None}))


def _record(boundary: Boundary, summary: str | None) -> dict[str, Any]:
    after = boundary.after_tokens
    if after is None:
        after = len(summary or "") // 4  # an estimate: the source did not count it
    return {
        "time": boundary.time,
        "trigger": boundary.trigger if boundary.trigger in ("auto", "manual") else "auto",
        "stages": ["summarize"] if summary is not None else [],
        "before_tokens": boundary.before_tokens,
        "after_tokens": after,
        "summary": summary,
        "summarizer": None,
        "cleared": [],
        "imported": True,
    }


def call(call_id: str, name: str, arguments: Any) -> dict[str, Any]:
    """An OpenAI tool call; `arguments` a JSON string (an object is encoded)."""
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
