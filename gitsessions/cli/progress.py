"""Rendering the agent's progress: tool calls and notices on stderr, replies on stdout.

Lines are `Styled` texts (cli/plain.py): printed by rich on a terminal, written as they
are into a pipe (exec's usual place), where rich is never imported.

Tool arguments and outputs come from the model and the tools: escaped with `one_line`
before they are cut to width, so an escape is never split into something raw.
"""

import json
import time
from typing import TYPE_CHECKING, Any

from gitsessions.agent.loop import Events
from gitsessions.cli.plain import Styled, one_line, vtext
from gitsessions.services.model.model import Retry
from gitsessions.services.tools import ToolOutcome
from gitsessions.services.tools.output import CUT_NOTE, cut_in
from gitsessions.values.plural import plural

if TYPE_CHECKING:
    from gitsessions.services.compaction.compaction import CompactionResult


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
        return cut(one_line(f"{name}: {' '.join(str(raw).split())}"), width)
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
    return cut(one_line(f"{name}: {text}" if text else name), width)


def cut(text: str, width: int) -> str:
    """`text` in at most `width` characters: cut at a word, with an ellipsis."""
    if len(text) <= width:
        return text
    head = text[: max(1, width - 1)]
    at = head.rfind(" ")
    if at > width // 2:
        head = head[:at]
    return head.rstrip() + "\u2026"


SHELL_TAIL = 5  # lines of a shell run's output shown after it


class ProgressEvents(Events):
    """Progress lines on stderr (exec, and chat's tool lines)."""

    def __init__(self, console: Any) -> None:  # a VisibleConsole, or a PlainConsole
        self.console = console

    def tool_started(self, call: dict[str, Any]) -> None:
        self.console.print(Styled("-> " + describe_call(call), style="cyan"), highlight=False)

    def tool_finished(self, outcome: ToolOutcome) -> None:
        """The result's first line (a denial's first sentence); for a shell run that ran,
        also its output's tail, and how much more the model saw above it (and what was
        cut from what it saw)."""
        lines = outcome.content.splitlines()
        first = lines[0].expandtabs().strip() if lines else ""
        if outcome.denied:  # what happened; the rest of it is advice to the model
            first = first.split(". ", 1)[0].rstrip(".") + "."
        style = "yellow" if outcome.denied else "red" if not outcome.ok else "dim"
        self.console.print(Styled(f"   {cut(one_line(first), 120)}", style=style), highlight=False)
        if outcome.tool == "run_shell" and not outcome.denied and first.startswith("exit code"):
            output = lines[1:]
            above = [line for line in output[:-SHELL_TAIL] if not CUT_NOTE.match(line)]
            cut_chars = cut_in(outcome.content)
            if above or cut_chars:
                said = above_note(len(above), cut_chars)
                self.console.print(Styled(f"   | ... ({said})", style="dim"), highlight=False)
            for line in output[-SHELL_TAIL:]:
                shown = cut(one_line(line.expandtabs()), 200)
                self.console.print(Styled(f"   | {shown}", style="dim"), highlight=False)

    def busy(self, reason: str | None) -> None:
        if reason is not None and "compacting" in reason:  # a title is not worth a line
            self.console.print(Styled(reason, style="dim"), highlight=False)

    def compacted(self, result: "CompactionResult") -> None:
        """One line: what compaction did (and a fallback it took, when it took one)."""
        if result.changed:
            line = (
                f"compacted {result.before_tokens:,} -> {result.after_tokens:,} tokens "
                f"({result.trigger})"
            )
            self.console.print(Styled(line, style="magenta"), highlight=False)
            for note in result.notes:
                if note.startswith("kept the cleared tool outputs only"):
                    self.console.print(vtext(f"   {note}", style="dim"), highlight=False)
        elif result.trigger == "auto" and result.notes:
            line = f"compaction (auto) changed nothing: {result.notes[-1]}"
            self.console.print(vtext(line, style="yellow"), highlight=False)

    def notice(self, text: str) -> None:
        self.console.print(vtext(text, style="yellow"), highlight=False)

    def retrying(self, retry: Retry) -> None:
        self.console.print(vtext(retry_line(retry, retry.seconds), style="yellow"), highlight=False)
        time.sleep(retry.seconds)


def above_note(lines: int, cut: int) -> str:
    """What a shell run's tail leaves out: the lines the model saw above it, and the
    characters cut from the output's middle, which it did not see."""
    if not cut:
        return f"{plural(lines, 'line')} above"
    unseen = f"{cut:,} characters cut from the middle: the model did not see them"
    return f"{plural(lines, 'line')} above, and {unseen}" if lines else unseen


def retry_line(retry: Retry, left: float) -> str:
    """`rate limited (HTTP 429): retrying in 7 s (1 of 3)`"""
    status = retry.error.status
    why = "rate limited" if status == 429 else "server error"
    return f"{why} (HTTP {status}): retrying in {left:.0f} s ({retry.attempt} of {retry.retries})"
