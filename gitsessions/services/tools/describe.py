"""A tool call as a person reads it, in one line: what chat and exec show of a running
call, and the title an ACP client shows (protocols/acp/events.py). Arguments come from
the model: escaped (values/visible.py) before they are cut, so an escape is never split.
"""

import json
from typing import Any

from gitsessions.values.plural import plural
from gitsessions.values.visible import visible

MAIN_ARGUMENTS = ("command", "pattern", "query", "path", "session")
WHOLE_ARGUMENTS = ("content", "old", "new", "items")  # said by their size, not shown
DEFAULT_PATHS = {"list_files": ".", "search_files": "."}


def describe_call(call: dict[str, Any], width: int = 100) -> str:
    """A tool call as a person reads it: its name, the argument that says what it does
    (`read_file: app.py`, `run_shell: pytest -q`; `list_files: .` for the default
    path), then the others given, in words (`offset 40`, `in src`); null arguments left
    out, tabs and runs of whitespace one space, cut at a word with an ellipsis."""
    function = call.get("function") or {}
    name = str(function.get("name") or "?")
    raw = function.get("arguments") or ""
    try:
        arguments = json.loads(raw) if raw else {}
    except ValueError:
        arguments = None
    if not isinstance(arguments, dict):
        return cut(_one_line(f"{name}: {' '.join(str(raw).split())}"), width)
    given = {k: v for k, v in arguments.items() if v is not None and v != ""}
    main = next((k for k in MAIN_ARGUMENTS if isinstance(given.get(k), str)), None)
    words = [str(given.pop(main))] if main else []
    if main == "pattern" and isinstance(given.get("path"), str):
        words.append(f"in {given.pop('path')}")
    elif not words and name in DEFAULT_PATHS:
        words.append(DEFAULT_PATHS[name])
    extras = []
    for key, value in given.items():
        if key == "content" and isinstance(value, str):
            extras.append(plural(value.count("\n") + (not value.endswith("\n")), "line"))
        elif key == "items" and isinstance(value, list):
            extras.append(plural(len(value), "item"))
        elif key not in WHOLE_ARGUMENTS:
            extras.append(
                f"{key} {value if isinstance(value, str | int | float) else json.dumps(value)}"
            )
    text = " ".join(" ".join(words).split())
    if extras:
        text = f"{text} ({', '.join(extras)})" if text else ", ".join(extras)
    return cut(_one_line(f"{name}: {text}" if text else name), width)


def cut(text: str, width: int) -> str:
    """`text` in at most `width` characters: cut at a word, with an ellipsis."""
    if len(text) <= width:
        return text
    head = text[: max(1, width - 1)]
    at = head.rfind(" ")
    if at > width // 2:
        head = head[:at]
    return head.rstrip() + "\u2026"


def _one_line(text: str) -> str:
    return visible(text, keep_newlines=False)
