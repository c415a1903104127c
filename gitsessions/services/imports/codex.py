"""Codex CLI's rollout files (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`) read as items
for `assemble.py`: `{"timestamp", "type", "payload"}` lines (`session_meta`,
`response_item`, `compacted`, `turn_context`, `event_msg`).

Invariants:
- One pass for the metadata, one for the items, a line at a time; an older rollout (bare
  items after a meta line; its cwd from `<environment_context>`) reads the same.
- A reply is the response items between two ends of a model response (a `token_count`,
  or a result followed by more calls); encrypted reasoning stays data.
- `base_instructions` is kept as the transcript's first (system) message; a resume here
  replaces it with gitsessions' own prompt.
"""

import hashlib
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gitsessions.services.imports.assemble import (
    Assembler,
    Boundary,
    End,
    Item,
    Prompt,
    Reply,
    Result,
    Rollback,
    Summary,
    Usage,
    call,
)
from gitsessions.services.imports.lines import (
    Tally,
    extended_sha256,
    offset_of_line,
    read_objects,
    resume_point,
)
from gitsessions.services.imports.source import Source

NAME = "codex"
TYPES = ("session_meta", "response_item", "compacted", "turn_context", "event_msg")
ROLES = {"user": "user", "assistant": "assistant", "developer": "system", "system": "system"}
ENDS = ("task_complete", "turn_aborted")  # events that end a turn: nothing before them grows
# a user message Codex writes itself (the workspace, AGENTS.md), not one the user typed
INJECTED = (
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions",
    "<INSTRUCTIONS>",
    "<turn_aborted>",
)
_CWD = re.compile(r"<cwd>([^<\n]{1,4096})</cwd>")  # in an `<environment_context>` message


@dataclass
class Scan:
    tally: Tally
    meta: dict[str, Any] = field(default_factory=dict)
    cwd: str | None = None  # the first `<environment_context>`'s (an older rollout's only)
    first_time: str | None = None
    last_time: str | None = None
    offset: int = 0
    line: int = 0


@dataclass
class Reading:
    """What `items` knows between lines: restored when a read goes on from a line."""

    response: int = 0  # which model response a reply item belongs to
    after_result: bool = False
    model: str | None = None
    last_tokens: int = 0
    instructions_done: bool = False


RESPONSE_ITEMS = (
    "message",
    "function_call",
    "function_call_output",
    "custom_tool_call",
    "custom_tool_call_output",
    "local_shell_call",
    "reasoning",
    "web_search_call",
)


def _wrapped(obj: dict[str, Any], first: bool) -> dict[str, Any]:
    """A line of an older rollout (before `{timestamp, type, payload}`: the session's
    meta as the first line, then bare response items, `record_type: state` lines) in
    the current shape."""
    if "payload" in obj:
        return obj
    if obj.get("type") in RESPONSE_ITEMS:
        return {"timestamp": obj.get("timestamp"), "type": "response_item", "payload": obj}
    if first and isinstance(obj.get("id"), str) and "type" not in obj and "timestamp" in obj:
        return {"timestamp": obj.get("timestamp"), "type": "session_meta", "payload": obj}
    if obj.get("record_type") == "state":
        return {"type": "event_msg", "payload": {"type": "state"}}
    return obj


def scan(path: Path, offset: int = 0, line: int = 0) -> Scan:
    """The metadata pass; from `offset` (the start of line `line + 1`) on, for a read
    that goes on from the last import's."""
    tally = Tally()
    found = Scan(tally, offset=offset, line=line)
    for number, raw in read_objects(path, tally, offset=offset, line=line):
        obj = _wrapped(raw, number == 1)
        kind = obj.get("type")
        if kind not in TYPES:
            tally.unknown[str(kind)[:60]] += 1
        payload = obj.get("payload")
        if kind == "session_meta" and isinstance(payload, dict) and not found.meta:
            found.meta = payload
        elif kind == "response_item" and found.cwd is None and isinstance(payload, dict):
            found.cwd = _context_cwd(payload)
        stamp = obj.get("timestamp")
        if isinstance(stamp, str):
            found.first_time = found.first_time or stamp
            found.last_time = stamp
    return found


def _context_cwd(item: dict[str, Any]) -> str | None:
    """The `<cwd>` of an `<environment_context>` user message; None for any other item."""
    if item.get("type") != "message" or item.get("role") != "user":
        return None
    text = _content(item.get("content"))
    if not isinstance(text, str) or not text.lstrip().startswith("<environment_context>"):
        return None
    match = _CWD.search(text)
    return (match.group(1).strip() or None) if match else None


def derived_id(source_id: str) -> str:
    return hashlib.sha256(f"{NAME}\0{source_id}".encode()).hexdigest()[:32]


def items(
    path: Path,
    tally: Tally,
    reading: Reading | None = None,
    marks: dict[int, Reading] | None = None,
    offset: int = 0,
    line: int = 0,
) -> Iterator[Item]:
    """The rollout's lines as items, from `offset` (the start of line `line + 1`) on with
    `reading` as it was there; `marks` gets the reading before each reply line since the
    last prompt (where a read may go on from, if the reply is held back), and `reading`
    is left as it is at the end."""
    state = reading if reading is not None else Reading()
    for n, raw in read_objects(path, offset=offset, line=line):
        obj = _wrapped(raw, n == 1)
        if marks is not None and obj.get("type") == "response_item":
            marks[n] = Reading(**vars(state))
        for item in _mapped(n, obj, state, tally):
            settles = isinstance(item, Prompt) and item.role == "user" and not item.injected
            if marks is not None and (settles or isinstance(item, Boundary | Rollback | End)):
                marks.clear()  # what came before is settled: no read goes on from there
            yield item


def _mapped(n: int, obj: dict[str, Any], state: Reading, tally: Tally) -> Iterator[Item]:
    """One line's items; `state` updated."""
    kind = obj.get("type")
    time = obj.get("timestamp") if isinstance(obj.get("timestamp"), str) else None
    payload = given if isinstance(given := obj.get("payload"), dict) else {}
    if kind == "session_meta":
        text = _instructions(payload.get("base_instructions") or payload.get("instructions"))
        if text and not state.instructions_done:
            state.instructions_done = True
            yield Prompt(text, n, time, role="system")
    elif kind == "turn_context":
        state.model = payload.get("model") if isinstance(payload.get("model"), str) else state.model
    elif kind == "compacted":
        yield Boundary(n, state.last_tokens, "auto", time)
        text = payload.get("message")
        if not isinstance(text, str) or not text:
            text = _history(payload.get("replacement_history"))
        yield Summary(text, n, time)
    elif kind == "event_msg":
        event = payload.get("type")
        if event == "token_count":
            info = given if isinstance(given := payload.get("info"), dict) else {}
            last = info.get("last_token_usage") if isinstance(info, dict) else None
            if isinstance(last, dict):
                usage = {
                    "prompt_tokens": _int(last.get("input_tokens")),
                    "completion_tokens": _int(last.get("output_tokens")),
                }
                state.last_tokens = usage["prompt_tokens"] + usage["completion_tokens"]
                yield Usage(usage, n)
            state.response += 1
            state.after_result = False
        elif event == "thread_rolled_back":
            yield Rollback(_int(payload.get("num_turns")), n)
        elif event in ENDS:
            yield End(n)
        else:
            tally.ignored[f"event_msg lines ({str(event)[:40]})"] += 1
    elif kind == "response_item":
        item_type = payload.get("type")
        if item_type in ("function_call_output", "custom_tool_call_output"):
            text, error = _output(payload.get("output"))
            if isinstance(payload.get("call_id"), str):
                yield Result(payload["call_id"], text, n, time, error)
                state.after_result = True
            return
        role = ROLES.get(given) if isinstance(given := payload.get("role"), str) else None
        if item_type == "message" and role != "assistant":
            if role is None:
                tally.ignored[f"messages of role {str(payload.get('role'))[:20]}"] += 1
                return
            content = _content(payload.get("content"))
            injected = isinstance(content, str) and content.lstrip().startswith(INJECTED)
            yield Prompt(content, n, time, role=role, injected=injected)
            return
        if state.after_result:
            state.response += 1
            state.after_result = False
        reply = Reply(f"r{state.response}", n, time, model=state.model)
        if item_type == "message":
            content = _content(payload.get("content"))
            reply.text.append(content if isinstance(content, str) else str(content))
        elif item_type == "function_call" and isinstance(payload.get("call_id"), str):
            arguments = payload.get("arguments")
            reply.calls.append(
                call(payload["call_id"], str(payload.get("name")), arguments or "{}")
            )
        elif item_type == "custom_tool_call" and isinstance(payload.get("call_id"), str):
            arguments = {"input": payload.get("input")}
            reply.calls.append(call(payload["call_id"], str(payload.get("name")), arguments))
        elif item_type == "local_shell_call" and isinstance(payload.get("call_id"), str):
            reply.calls.append(call(payload["call_id"], "local_shell", payload.get("action")))
        elif item_type == "reasoning":
            reply.reasoning.append({k: v for k, v in payload.items() if k != "type"})
        elif item_type == "web_search_call":
            reply.text.append(_web_search(payload.get("action")))
        else:
            tally.ignored[f"response items ({str(item_type)[:40]})"] += 1
            return
        yield reply


def _history(items: Any) -> str:
    """A compaction's `replacement_history` (the items the context starts again with,
    newer versions: kept prompts and a summary) as one summary text."""
    texts = []
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and item.get("type") == "message":
            text = _content(item.get("content"))
            if isinstance(text, str) and text and not text.lstrip().startswith(INJECTED):
                texts.append(text)
    return "\n\n".join(texts)


def _web_search(action: Any) -> str:
    """A web search the model ran (Codex keeps no call id and no output for it), as a
    note in its reply's text."""
    action = action if isinstance(action, dict) else {}
    what = action.get("query") or action.get("url") or action.get("pattern")
    kind = str(action.get("type") or "search")[:40]
    return f"[web {kind}: {str(what)[:500]}]" if isinstance(what, str) else f"[web {kind}]"


def _instructions(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    text = value.get("text") if isinstance(value, dict) else None
    return text if isinstance(text, str) else None


def _content(content: Any) -> str | list[Any]:
    """A message's content parts as text (an image kept as an image part)."""
    if isinstance(content, str):
        return content
    parts: list[dict[str, Any]] = []
    for part in content if isinstance(content, list) else []:
        if not isinstance(part, dict):
            continue
        if isinstance(part.get("text"), str):
            parts.append({"type": "text", "text": part["text"]})
        elif part.get("type") == "input_image" and isinstance(part.get("image_url"), str):
            parts.append({"type": "image_url", "image_url": {"url": part["image_url"]}})
    if all(p["type"] == "text" for p in parts):
        return "\n\n".join(p["text"] for p in parts)
    return parts


def _output(output: Any) -> tuple[str, bool]:
    """A tool's output as text, and whether it failed."""
    if isinstance(output, str):
        return output, False
    if isinstance(output, dict):
        content = output.get("content")
        text = content if isinstance(content, str) else str(_content(content))
        return text, output.get("success") is False
    if isinstance(output, list):
        joined = _content(output)
        return joined if isinstance(joined, str) else "[output with images, not imported]", False
    return "", False


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def source(path: Path, exists: Callable[[str], bool]) -> Source:
    """The first pass over `path` as a `Source` for `mirror.import_source`."""
    found = scan(path)
    meta = found.meta
    source_id = given if isinstance(given := meta.get("id"), str) else path.stem
    parent = None
    forked = meta.get("forked_from_id")
    if isinstance(forked, str):
        parent = derived_id(forked)
        parent = parent if exists(parent) else None
    git = given if isinstance(given := meta.get("git"), dict) else {}
    extra: dict[str, Any] = {
        "version": meta.get("cli_version") if isinstance(meta.get("cli_version"), str) else None,
        "model_provider": meta.get("model_provider")
        if isinstance(meta.get("model_provider"), str)
        else None,
    }
    if isinstance(forked, str):
        extra["forked_from"] = forked
    if isinstance(git.get("repository_url"), str):
        extra["repository_url"] = git["repository_url"]
    reading = Reading()
    marks: dict[int, Reading] = {}
    return Source(
        format=NAME,
        path=path,
        source_id=source_id,
        session_id=derived_id(source_id),
        tally=found.tally,
        items=lambda: items(path, found.tally, reading, marks),
        resume_point=_resume_point(path, found, reading, marks),
        cwd=meta.get("cwd") if isinstance(meta.get("cwd"), str) else found.cwd,
        branch=git.get("branch") if isinstance(git.get("branch"), str) else None,
        first_time=found.first_time,
        last_time=found.last_time,
        parent=parent,
        extra=extra,
    )


def _resume_point(
    path: Path, found: Scan, reading: Reading, marks: dict[int, Reading]
) -> Callable[[Assembler], dict[str, Any] | None]:
    """Where the next import may start reading (`imported.resume`): the first line held
    back with the reading before it (else the end, and the reading there)."""

    def point(assembler: Assembler) -> dict[str, Any] | None:
        if assembler.carried:
            return None
        held = assembler.held
        if held is None:
            offset, line, state = found.offset + found.tally.bytes, found.tally.lines, reading
        else:
            if held not in marks:
                return None
            offset = offset_of_line(path, held, offset=found.offset, line=found.line)
            line, state = held - 1, marks[held]
        return {
            "offset": offset,
            "line": line,
            "turn": assembler.turn,
            "step": assembler.step,
            "reading": vars(state),
        }

    return point


def resumed(path: Path, header_of: Callable[[str], dict[str, Any] | None]) -> Source | None:
    """The rollout read on from where its last import stopped (`imported.resume`), when
    it still begins as it was read; None otherwise (the whole file is read)."""
    first = next(iter(read_objects(path)), None)
    if first is None:
        return None
    meta = _wrapped(first[1], True).get("payload")
    key = meta.get("id") if isinstance(meta, dict) else None
    if not isinstance(key, str):
        return None
    point = resume_point(header_of(derived_id(key)), NAME, key, path)
    if point is None:
        return None
    done, resume, digest = point
    found = scan(path, resume["offset"], resume["line"])
    tally = found.tally
    tail = tally.bytes
    tally.bytes = resume["offset"] + tail
    tally.sha256 = extended_sha256(path, digest, int(done["bytes"]), tally.bytes)
    reading = Reading(**resume["reading"])
    marks: dict[int, Reading] = {}
    extra = {
        k: done[k]
        for k in ("version", "model_provider", "forked_from", "repository_url")
        if k in done
    }
    tail_found = Scan(
        Tally(lines=tally.lines, bytes=tail), offset=resume["offset"], line=resume["line"]
    )
    return Source(
        format=NAME,
        path=path,
        source_id=key,
        session_id=derived_id(key),
        tally=tally,
        items=lambda: items(path, tally, reading, marks, resume["offset"], resume["line"]),
        cwd=done.get("cwd") or found.cwd,
        last_time=found.last_time,
        extra=extra,
        start={
            "outputs": int(done.get("outputs", 0)),
            "digest": str(done.get("digest")),
            "turn": resume["turn"],
            "step": resume["step"],
            "line": resume["line"],
        },
        resume_point=_resume_point(path, tail_found, reading, marks),
    )


def sources(
    path: Path,
    exists: Callable[[str], bool],
    header_of: Callable[[str], dict[str, Any] | None] | None = None,
) -> list[Source]:
    """`source`, or, for a rollout imported before, the read on from where that import
    stopped (`resumed`) when it can be."""
    if header_of is not None:
        again = resumed(path, header_of)
        if again is not None:
            return [again]
    return [source(path, exists)]
