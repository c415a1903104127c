"""Items read from a source (`Reply`, `Result`, `Prompt`, `Boundary`, `Summary`, `Usage`,
`Rollback`) assembled into OpenAI chat messages that pair (`Entry`, `Compacted`,
`RolledBack`).

Invariants:
- Every assistant message's tool calls are followed at once by exactly one result each,
  in call order, joined by id wherever it stood after the call; a call is stubbed
  (`NO_RESULT`) only once the source shows no result will come (a prompt, a compaction,
  an `End`, a finished file's end).
- Output depends only on the lines read so far and is never taken back: in a file that
  may grow, what may still grow is held back (`held`), so a later import of the longer
  file emits the same output first.
- Reasoning is kept as record data (`source`), never in a message nor sent; a reply of
  reasoning only that nothing follows gets a record of its own (`REASONING_ONLY`).
"""

import json
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from gitsessions.services.imports.titles import prompt_title
from gitsessions.services.imports.tool_names import api_name
from gitsessions.values.canonical import scrub

NO_RESULT = "[no result was recorded in the imported session]"
# before a reply that comes first (a file that starts in the middle of a session): a
# request starts with the user's turn
NO_PROMPT = "[imported: the source starts in the middle of a session; what came before is lost]"
# before a tool result whose call the source does not hold (a file that starts in the
# middle of a session): a note, so no output is lost and the request stays valid
ORPHAN = "[imported: the result of a call the source does not hold, its id"
# a reply of reasoning only that no reply follows: its reasoning in this message's record
REASONING_ONLY = "[imported: a reply of reasoning only, kept in this record's source]"


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
    files: dict[str, bytes] = field(default_factory=dict)  # its images (images.py)


@dataclass
class Prompt:
    content: str | list[Any]
    line: int
    time: str | None = None
    role: str = "user"
    injected: bool = False  # written by the agent, not typed (Claude's isMeta, Codex's context)
    files: dict[str, bytes] = field(default_factory=dict)  # an orphan result's images


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


@dataclass
class End:
    """The source's end of a turn (Codex `task_complete`, `turn_aborted`): nothing before
    it grows any more, and a call still unanswered never will be."""

    line: int


Item = Reply | Result | Prompt | Boundary | Summary | Usage | Rollback | End


@dataclass
class Entry:
    """One transcript message and its record's other fields."""

    message: dict[str, Any]
    meta: dict[str, Any]
    line: int = 0  # the source line it comes from (not part of what is stored)
    # the files its record lists in `source.files` (name -> bytes: `store.files`); the
    # names, which hash the bytes, are what an import's digest covers
    files: dict[str, bytes] = field(default_factory=dict)


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

    def answered(self) -> bool:
        return all(c["id"] in self.results for c in self.reply.calls)


MAX_WAITING = 512  # replies and prompts queued behind an unanswered call, at most


class Assembler:
    """Feed items in source order; collect what comes out (see the module's invariants).

    A reply closed while a call of it is unanswered waits in `queue`, with what comes
    after it, until every call has its result: results are joined to calls by id
    (`open`, the index of unanswered call ids) across whatever lines stand between. A
    user's prompt, a compaction, a rollback or the source's end of a turn (`End`) shows
    that no result will come: what waits is settled then, an unanswered call stubbed."""

    def __init__(self) -> None:
        self.group: _Group | None = None  # the reply being read
        self.queue: deque[_Group | Prompt] = deque()  # closed, behind an unanswered call
        self.open: dict[str, _Group] = {}  # unanswered call id -> its reply
        self.boundary: Boundary | None = None
        self.carried: list[Any] = []  # reasoning of a reply with nothing to say
        self.turn = 0
        self.step = 0
        self.orphans = 0  # results whose call the source does not hold
        self.stubbed = 0  # calls given `NO_RESULT`: the source holds no result for them
        self.held: int | None = None  # after finish(): first line held back
        self.forced = False  # after finish(final=True): it settled what was open
        self.tools: set[str] = set()
        self.title: str | None = None  # the first prompt the user typed, as a title

    def feed(self, item: Item) -> list[Output]:
        out: list[Output] = []
        if isinstance(item, Reply):
            out += self._settle_boundary()
            if self.group is not None and self.group.reply.key != item.key:
                out += self._close()
            if self.group is None:
                self.group = _Group(Reply(item.key, item.line, item.time))
            group = self.group
            reply = group.reply
            reply.text += item.text
            known = {x["id"] for x in reply.calls}
            for one in item.calls:
                if one["id"] not in known and one["id"] not in self.open:
                    reply.calls.append(one)
                    self.open[one["id"]] = group
            reply.reasoning += item.reasoning
            reply.model = reply.model or item.model
            reply.usage = item.usage or reply.usage
            reply.final = reply.final or item.final
        elif isinstance(item, Result):
            waiting = self.open.pop(item.call_id, None)
            if waiting is None:  # its call is not in the source: kept as a note
                self.orphans += 1
                note = Prompt(_orphan(item), item.line, item.time, injected=True, files=item.files)
                out += self.feed(note)
            else:
                waiting.results[item.call_id] = item
                out += self._drain()
        elif isinstance(item, Usage):
            if self.group is not None:
                self.group.reply.usage = self.group.reply.usage or item.usage
                self.group.reply.final = True
        elif isinstance(item, Prompt) and (item.role != "user" or item.injected) and self.open:
            out += self._close()  # a developer message between a call and its result
            self.queue.append(item)
            out += self._drain()
        elif isinstance(item, Prompt):
            out += self._settle_all() + self._settle_boundary()
            if item.role == "user":  # the turn ends: reasoning carried is its own
                out += self._reasoning_only()
            out += self._prompt(item)
        elif isinstance(item, Boundary):
            out += self._settle_all() + self._settle_boundary()
            self.boundary = item
        elif isinstance(item, Summary):
            out += self._settle_all()
            boundary = self.boundary or Boundary(item.line, 0, time=item.time)
            self.boundary = None
            self.step += 1
            summary = self._entry({"role": "user", "content": item.text}, item.time, item.line)
            out.append(Compacted(_record(boundary, item.text), summary))
        elif isinstance(item, Rollback):
            out += self._settle_all() + self._settle_boundary()
            out.append(RolledBack(item.turns))
        elif isinstance(item, End):
            out += self._settle_all()
        return out

    def finish(self, final: bool = False) -> list[Output]:
        """What the end of the file settles. `final`: the file is finished (nothing will
        be added to it), so everything is settled, an unanswered call stubbed (`forced`
        says whether that settled anything a file still growing would hold back); else
        what might still grow stays held back (`held`)."""
        out = self._drain()
        group = self.group
        done = group is not None and (group.reply.calls or group.reply.final)
        if group is not None and done and not self.queue and group.answered():
            out += self._close()
        if self.queue:
            first = self.queue[0]
            self.held = first.reply.line if isinstance(first, _Group) else first.line
        elif self.group is not None:
            self.held = self.group.reply.line
        elif self.boundary is not None:
            self.held = self.boundary.line
        if final and (self.held is not None or self.carried):
            self.held, self.forced = None, True
            out += self.settle()
        return out

    def close_before(self, item: Item) -> list[Output]:
        """The reply being read, out now when feeding `item` would close it anyway (so
        what comes out, and its order, is the same): an import ends a commit there."""
        if self.group is None or isinstance(item, Result | Usage):
            return []
        if isinstance(item, Reply) and item.key == self.group.reply.key:
            return []
        return self._close()

    def settle(self) -> list[Output]:
        """Everything open, out (a call unanswered stubbed, reasoning carried kept in a
        message of its own): where an earlier import of the file found it finished
        (`mirror`'s `imported.settled`), a read of the longer file settles the same way
        there."""
        return self._settle_all() + self._settle_boundary() + self._reasoning_only()

    def _reasoning_only(self) -> list[Output]:
        """Reasoning carried that no reply of its turn took: kept in a message's record."""
        if not self.carried:
            return []
        return self._emit(_Group(Reply("", 0, text=[REASONING_ONLY])))

    def _prompt(self, item: Prompt) -> list[Output]:
        if item.role == "user":
            self.turn += 1
            self.step = 0
            if self.title is None and not item.injected:
                self.title = prompt_title(item.content)
        else:
            self.step += 1 if self.turn else 0
        message = {"role": item.role, "content": item.content}
        return [self._entry(message, item.time, item.line, item.files)]

    def _close(self) -> list[Output]:
        """The reply being read is complete: out now, or queued behind a call."""
        group, self.group = self.group, None
        if group is None:
            return []
        self.queue.append(group)
        out = self._drain()
        while len(self.queue) > MAX_WAITING:  # bounded: the oldest waits no longer
            out += self._pop()
        return out

    def _drain(self) -> list[Output]:
        out: list[Output] = []
        while self.queue and (not isinstance(self.queue[0], _Group) or self.queue[0].answered()):
            out += self._pop()
        return out

    def _pop(self) -> list[Output]:
        first = self.queue.popleft()
        if isinstance(first, Prompt):
            return self._prompt(first)
        return self._emit(first)

    def _settle_all(self) -> list[Output]:
        """Everything queued or being read, out: the source shows no result will come."""
        out: list[Output] = []
        out += self._close()
        while self.queue:
            out += self._pop()
        return out

    def _settle_boundary(self) -> list[Output]:
        """A compaction whose summary never came: the context starts again empty."""
        if self.boundary is None:
            return []
        boundary, self.boundary = self.boundary, None
        return [Compacted(_record(boundary, None), None)]

    def _emit(self, group: _Group) -> list[Output]:
        reply = group.reply
        for one in reply.calls:
            self.open.pop(one["id"], None)
        text = "\n\n".join(t for t in reply.text if t)
        if not text and not reply.calls:
            self.carried += reply.reasoning
            return []
        message: dict[str, Any] = {"role": "assistant", "content": text or None}
        renamed: dict[str, str] = {}  # a name the API accepts -> the source's name
        if reply.calls:
            message["tool_calls"] = [_valid(c, renamed) for c in reply.calls]
            self.tools.update(c["function"]["name"] for c in message["tool_calls"])
        reasoning, self.carried = self.carried + reply.reasoning, []
        out: list[Output] = []
        if self.turn == 0:  # no prompt before it
            out += self._prompt(Prompt(NO_PROMPT, reply.line, reply.time, injected=True))
        self.step += 1
        meta: dict[str, Any] = {"model": reply.model, "usage": reply.usage}
        source: dict[str, Any] = {}
        if reasoning:
            source["reasoning"] = reasoning
        if renamed:
            source["tool_names"] = renamed
        if source:
            meta["source"] = source
        out.append(self._entry(message, reply.time, reply.line, **meta))
        for one in reply.calls:
            result = group.results.get(one["id"])
            content: Any = NO_RESULT if result is None else result.content
            if result is None:
                self.stubbed += 1
            elif result.error and isinstance(content, str):
                content = content if content.startswith("error") else f"error: {content}"
            self.step += 1
            out.append(
                self._entry(
                    {"role": "tool", "tool_call_id": one["id"], "content": content},
                    (result.time if result else None) or reply.time,
                    result.line if result else reply.line,
                    result.files if result else {},
                )
            )
        return out

    def _entry(
        self,
        message: dict[str, Any],
        time: str | None,
        line: int,
        files: dict[str, bytes] | None = None,
        **meta: Any,
    ) -> Entry:
        """A transcript message; its `files` listed in its record's `source.files`."""
        fields = {"time": time, "turn": self.turn, "step": self.step, **meta}
        if files:
            fields["source"] = {**fields.get("source", {}), "files": list(files)}
        kept = scrub({k: v for k, v in fields.items() if v is not None})
        return Entry(scrub(message), kept, line, dict(files or {}))


def _orphan(result: Result) -> str:
    """A note holding a result whose call the source does not hold."""
    content = result.content
    if not isinstance(content, str):
        content = "\n".join(
            str(p.get("text", "")) for p in content if isinstance(p, dict) and "text" in p
        )
    return f"{ORPHAN} {result.call_id}]\n{content}"


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
    """An OpenAI tool call; `arguments` a JSON string (an object is encoded; a string
    that is not a JSON object wrapped as a freeform tool's input is, `{"input": ...}`)."""
    if isinstance(arguments, str):
        try:
            parsed = json.loads(arguments)
        except ValueError:
            parsed = None
        if not isinstance(parsed, dict):
            arguments = {"input": arguments}
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def _valid(one: dict[str, Any], renamed: dict[str, str]) -> dict[str, Any]:
    """`one` with a function name the API accepts (`tool_names.api_name`); a name
    changed is recorded in `renamed`."""
    name = one["function"]["name"]
    valid = api_name(name)
    if valid == name:
        return one
    renamed[valid] = name
    return {**one, "function": {**one["function"], "name": valid}}
