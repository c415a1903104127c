"""Rendering sessions for people: tables and transcripts. Model text is never markup."""

import json
from collections.abc import Iterable, Mapping
from typing import Any

from rich.console import Console
from rich.text import Text

from gitsessions.values.messages import text_of

ROLE_STYLES = {
    "system": "magenta",
    "user": "bold green",
    "assistant": "bold cyan",
    "tool": "yellow",
}


def print_json(console: Console, value: Any) -> None:
    """JSON straight to the console's file: rich would build a Text per line (seconds
    for a 10,000-session listing)."""
    console.file.write(json.dumps(value, indent=2, ensure_ascii=False) + "\n")
    console.file.flush()


def print_messages(console: Console, messages: Iterable[Mapping[str, Any]], first: int = 0) -> None:
    """A readable transcript: role, content, tool calls and results, plain text only."""
    for index, message in enumerate(messages, start=first):
        role = str(message.get("role", "?"))
        label = Text(f"[{index}] {role}", style=ROLE_STYLES.get(role, ""))
        if role == "tool":
            label.append(f"  (result of {message.get('tool_call_id')})", style="dim")
        if message.get("incomplete"):
            label.append("  (incomplete: cut off mid-reply; its tool calls never ran)", style="dim")
        console.print(label)
        body = text_of(message)
        if body:
            console.print(Text(body), markup=False, highlight=False)
        for call in [*(message.get("tool_calls") or []), *(message.get("unsent_tool_calls") or [])]:
            function = call.get("function") or {}
            line = Text("  -> ", style="dim")
            line.append(f"{function.get('name')}", style="bold")
            line.append(f"({function.get('arguments', '')})  id={call.get('id')}")
            console.print(line, markup=False, highlight=False)
        console.print()
