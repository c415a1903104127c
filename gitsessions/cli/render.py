"""Rendering sessions for people: tables and transcripts. Model text is never markup, and
every stored string is shown visible-safe (escaped controls, see cli/terminal.py)."""

import json
from collections.abc import Iterable, Mapping
from typing import Any

from gitsessions.cli.plain import HasFile, Sink, write_json
from gitsessions.values.messages import text_of

ROLE_STYLES = {
    "system": "magenta",
    "user": "bold green",
    "assistant": "bold cyan",
    "tool": "yellow",
}


def print_json(console: HasFile, value: Any) -> None:
    """JSON on the console's file, terminal-safe (see `terminal.write_json`)."""
    write_json(console, value)


def stream_messages(sink: Sink, messages: Iterable[tuple[int, Mapping[str, Any]]]) -> None:
    """A readable transcript, a message at a time (`show`): role, content, tool calls
    and results, plain text only."""
    for index, message in messages:
        role = str(message.get("role", "?"))
        style = ROLE_STYLES.get(role, "")
        sink.text(f"[{index}] {role}", style, one_line=True)
        if role == "tool":
            sink.text(f"  (result of {message.get('tool_call_id')})", "dim", one_line=True)
        if message.get("interrupted"):
            sink.text("  (interrupted: stopped by Ctrl-C; its tool calls never ran)", "dim")
        elif message.get("incomplete"):
            sink.text("  (incomplete: cut off mid-reply; its tool calls never ran)", "dim")
        sink.line()
        body = text_of(message)
        if body:
            sink.line(body)
        for call in [*(message.get("tool_calls") or []), *(message.get("unsent_tool_calls") or [])]:
            function = call.get("function") or {}
            sink.text("  -> ", "dim")
            sink.text(f"{function.get('name')}", "bold", one_line=True)
            sink.line(f"({function.get('arguments', '')})  id={call.get('id')}")
        sink.line()


def stream_json_list(sink: Sink, values: Iterable[Any]) -> None:
    """`print_json` of a list, written an element at a time: the same text."""
    first = True
    for value in values:
        element = json.dumps([value], indent=2, ensure_ascii=False)[2:-2]
        sink.json(("[\n" if first else ",\n") + element)
        first = False
    sink.json("[]\n" if first else "\n]\n")


def instructions_line(records: Any) -> str:
    """The project instruction files a session runs with (`header.instructions`), as
    `info` and `\\info` show them: each path with its size in tokens, `cut` when cut."""
    if not isinstance(records, list) or not records:
        return "none (no AGENTS.md or CLAUDE.md was in force)"
    parts = []
    for record in records:
        if not isinstance(record, Mapping):
            continue
        cut = ", cut" if record.get("cut") else ""
        parts.append(f"{record.get('path')} (about {int(record.get('tokens') or 0):,} tokens{cut})")
    if not parts:
        return "none"
    return f"about {instruction_tokens(records):,} tokens in all: " + "; ".join(parts)


def instruction_tokens(records: Any) -> int:
    """About how many tokens the instruction files of `header.instructions` take in all."""
    if not isinstance(records, list):
        return 0
    return sum(
        r["tokens"] for r in records if isinstance(r, Mapping) and type(r.get("tokens")) is int
    )
