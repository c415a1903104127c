"""Commit subjects of a turn: they say what each step did, readable in `git log --oneline`.

    turn 13: fix the failing parser test          the prompt (the turn's first commit)
    turn 13.2: read_file app.py; run_shell pytest -q    a step: its tool calls
    turn 13.3: reply "Fixed. The parser now..."   a step that is the final reply

Tool calls past the width end `+N more`; a reply cut off reads `turn 13.2: cut off: ...`.

Invariants: a subject is one line of at most `WIDTH` characters, and every piece of
model or user text in it is redacted before it is cut (a secret cut in half no longer
matches its rule); the store redacts the whole subject again.
"""

import json
from typing import Any

from gitsessions.values.messages import Message, text_of
from gitsessions.values.secrets import redact

WIDTH = 72
ARGUMENT_WIDTH = 40
# the argument that says what a call did, by preference (path for file tools...)
ARGUMENT_KEYS = ("command", "pattern", "query", "path", "session")


def first_line(text: str, width: int = 60) -> str:
    """The first non-empty line, shortened to `width`; redacted first, since a secret cut
    in half no longer matches its rule (commit subjects are made of this)."""
    text = redact(text)[0]
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line if len(line) <= width else line[: width - 3].rstrip() + "..."


def turn_subject(turn: int, prompt: str) -> str:
    """The subject of a turn's first commit: its prompt."""
    return _fit(f"turn {turn}: {first_line(prompt) or 'checkpoint'}")


def step_subject(turn: int, step: int, message: Message, cut: bool = False) -> str:
    """The subject of step `step`: the tool calls `message` made, or its reply. `cut`:
    the model's stream broke off, so nothing ran."""
    prefix = f"turn {turn}.{step}: "
    calls = message.get("tool_calls") or message.get("unsent_tool_calls") or []
    if cut:
        prefix += "cut off: "
    if not calls:
        return _fit(prefix + _reply(text_of(message), WIDTH - len(prefix)))
    parts = [describe_call(call) for call in calls]
    shown = len(parts)
    while shown > 1:  # drop whole calls (counted at the end) rather than cut one
        more = f"; +{len(parts) - shown} more" if shown < len(parts) else ""
        if len(prefix) + len("; ".join(parts[:shown])) + len(more) <= WIDTH:
            break
        shown -= 1
    more = f"; +{len(parts) - shown} more" if shown < len(parts) else ""
    return _fit(prefix + "; ".join(parts[:shown]) + more)


def describe_call(call: dict[str, Any]) -> str:
    """`name argument`: a tool call with the one argument that says what it did."""
    function = call.get("function") or {}
    name = first_line(str(function.get("name") or "?"), 24)
    try:
        arguments = json.loads(function.get("arguments") or "{}")
    except (TypeError, ValueError):
        arguments = None
    if not isinstance(arguments, dict):
        return name
    for key in ARGUMENT_KEYS:
        value = arguments.get(key)
        if isinstance(value, str) and value.strip():
            return f"{name} {first_line(value, ARGUMENT_WIDTH)}"
    if isinstance(arguments.get("items"), list):  # update_plan
        count = len(arguments["items"])
        return f"{name} {count} item" + ("" if count == 1 else "s")
    return name


def _reply(text: str, width: int) -> str:
    words = first_line(text, max(width - 8, 8))
    return f'reply "{words}"' if words else "reply (empty)"


def _fit(subject: str) -> str:
    """One line of at most `WIDTH` characters."""
    line = " ".join(subject.split())
    return line if len(line) <= WIDTH else line[: WIDTH - 3].rstrip() + "..."
