"""A transcript's messages as HTML: role, turn and time, the text, each tool call and
each tool output; what is long is folded in <details> (closed), so a page reads as the
conversation and opens what the reader wants.

Invariants: every string of a message passes `e`; a message shows at most `SHOWN`
characters (the rest named, with the command that prints it all), so a page of
`PAGE` messages is bounded whatever the messages hold.
"""

import json
from collections.abc import Iterable, Mapping
from typing import Any

from gitsessions.protocols.web.markup import e, number
from gitsessions.values.messages import text_of

SHOWN = 20_000  # characters of one text shown; the rest is named
FOLD_LINES = 12  # a text longer than this (or FOLD_CHARS) is folded
FOLD_CHARS = 1_500


def cut(text: str, where: str) -> str:
    """`text` escaped, cut at `SHOWN` characters with a note naming what prints it all."""
    if len(text) <= SHOWN:
        return e(text)
    rest = len(text) - SHOWN
    return e(text[:SHOWN]) + f'<span class="cut">… {rest:,} more characters ({e(where)})</span>'


def folded(text: str, where: str, summary: str | None = None, open_: bool = False) -> str:
    """A text in <pre>, folded under its first line when long (or when `summary` is
    given: tool outputs are always folded)."""
    lines = text.count("\n") + 1
    body = f"<pre>{cut(text, where)}</pre>"
    if summary is None and lines <= FOLD_LINES and len(text) <= FOLD_CHARS:
        return body
    first = next((line for line in text.splitlines() if line.strip()), "")[:120]
    label = summary if summary is not None else e(first)
    size = f'<span class="dim"> {lines:,} lines, {len(text):,} characters</span>'
    state = " open" if open_ else ""
    return f"<details{state}><summary>{label}{size}</summary>{body}</details>"


def _arguments(raw: object) -> str:
    """A call's arguments, pretty when they are JSON."""
    text = raw if isinstance(raw, str) else json.dumps(raw)
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except ValueError:
        return text


def calls(message: Mapping[str, Any], where: str) -> str:
    """A reply's tool calls, each folded under `-> name(first argument)`."""
    out = []
    unsent = message.get("unsent_tool_calls") or []
    for call in [*(message.get("tool_calls") or []), *unsent]:
        if not isinstance(call, Mapping):
            continue
        function = call.get("function") or {}
        name = str(function.get("name") or "?")
        arguments = _arguments(function.get("arguments", ""))
        brief = " ".join(arguments.split())[:100]
        note = " (never ran)" if call in unsent else ""
        summary = f'→ <b>{e(name)}</b> <span class="dim">{e(brief)}{e(note)}</span>'
        out.append(f'<div class="call">{folded(arguments, where, summary)}</div>')
    return "".join(out)


def message_html(index: int, record: Mapping[str, Any], where: str, anchor: str = "") -> str:
    """One transcript record as an <article> with the id `m<index>`."""
    message = record.get("message")
    if not isinstance(message, Mapping):
        message = {}
    role = str(message.get("role", "?"))
    facts = [f'<a href="{e(anchor)}#m{index}">[{index:,}]</a>', f"<b>{e(role)}</b>"]
    if isinstance(record.get("turn"), int):
        facts.append(f"turn {number(record['turn'])}.{number(record.get('step', 0))}")
    if record.get("time"):
        facts.append(f'<span class="dim">{e(record["time"])}</span>')
    if isinstance(record.get("model"), str):
        facts.append(f'<span class="dim">{e(record["model"])}</span>')
    usage = record.get("usage")
    if isinstance(usage, Mapping) and isinstance(usage.get("prompt_tokens"), int):
        facts.append(f'<span class="dim">context {number(usage["prompt_tokens"])} tokens</span>')
    if message.get("interrupted"):
        facts.append('<span class="warn">interrupted</span>')
    elif message.get("incomplete"):
        facts.append('<span class="warn">incomplete</span>')
    text = text_of(message)
    if role == "tool":
        facts.append(f'<span class="dim">result of {e(message.get("tool_call_id"))}</span>')
        body = folded(text, where, "output") if text else ""
    elif role == "system":
        body = folded(text, where, "system prompt") if text else ""
    else:
        body = folded(text, where) if text else ""
    head = " · ".join(facts)
    return (
        f'<article class="msg {e(role)}" id="m{index}"><header>{head}</header>'
        f"{body}{calls(message, where)}</article>"
    )


def messages_html(records: Iterable[tuple[int, Mapping[str, Any]]], where: str) -> str:
    return "".join(message_html(i, r, where) for i, r in records)
