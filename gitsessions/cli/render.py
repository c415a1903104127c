"""Rendering sessions for people: tables and transcripts. Model text is never markup, and
every stored string is shown visible-safe (escaped controls, see cli/terminal.py)."""

from collections.abc import Iterable, Mapping
from typing import Any

from rich.console import Console
from rich.text import Text

from gitsessions.cli.terminal import vtext, write_json
from gitsessions.values.messages import text_of
from gitsessions.values.visible import visible

ROLE_STYLES = {
    "system": "magenta",
    "user": "bold green",
    "assistant": "bold cyan",
    "tool": "yellow",
}


def print_json(console: Console, value: Any) -> None:
    """JSON on the console's file, terminal-safe (see `terminal.write_json`)."""
    write_json(console, value)


def print_messages(console: Console, messages: Iterable[Mapping[str, Any]], first: int = 0) -> None:
    """A readable transcript: role, content, tool calls and results, plain text only."""
    for index, message in enumerate(messages, start=first):
        role = str(message.get("role", "?"))
        label = Text(f"[{index}] {visible(role)}", style=ROLE_STYLES.get(role, ""))
        if role == "tool":
            label.append(f"  (result of {visible(str(message.get('tool_call_id')))})", style="dim")
        if message.get("interrupted"):
            label.append(
                "  (interrupted: stopped by Ctrl-C; its tool calls never ran)", style="dim"
            )
        elif message.get("incomplete"):
            label.append("  (incomplete: cut off mid-reply; its tool calls never ran)", style="dim")
        console.print(label)
        body = text_of(message)
        if body:
            console.print(vtext(body), markup=False, highlight=False)
        for call in [*(message.get("tool_calls") or []), *(message.get("unsent_tool_calls") or [])]:
            function = call.get("function") or {}
            line = Text("  -> ", style="dim")
            line.append(visible(f"{function.get('name')}"), style="bold")
            line.append(visible(f"({function.get('arguments', '')})  id={call.get('id')}"))
            console.print(line, markup=False, highlight=False)
        console.print()
