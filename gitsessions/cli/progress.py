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
from gitsessions.values.plural import plural

if TYPE_CHECKING:
    from gitsessions.services.compaction.compaction import CompactionResult


def describe_call(call: dict[str, Any], width: int = 100) -> str:
    function = call.get("function") or {}
    raw = function.get("arguments") or ""
    try:
        args = json.loads(raw)
        shown = (
            args.get("command")
            or args.get("path")
            or args.get("pattern")
            or args.get("query")
            or raw
        )
    except (ValueError, AttributeError):
        shown = raw
    text = one_line(f"{function.get('name')}: {' '.join(str(shown).split())}")
    return text if len(text) <= width else text[: width - 3] + "..."


SHELL_TAIL = 5  # lines of a shell run's output shown after it


class ProgressEvents(Events):
    """Progress lines on stderr (exec, and chat's tool lines)."""

    def __init__(self, console: Any) -> None:  # a VisibleConsole, or a PlainConsole
        self.console = console

    def tool_started(self, call: dict[str, Any]) -> None:
        self.console.print(Styled("-> " + describe_call(call), style="cyan"), highlight=False)

    def tool_finished(self, outcome: ToolOutcome) -> None:
        """The result's first line; for a shell run that ran, also its output's tail."""
        lines = outcome.content.splitlines()
        first = lines[0] if lines else ""
        style = "yellow" if outcome.denied else "red" if not outcome.ok else "dim"
        self.console.print(Styled(f"   {one_line(first)[:120]}", style=style), highlight=False)
        if outcome.tool == "run_shell" and not outcome.denied and first.startswith("exit code"):
            tail = lines[1:][-SHELL_TAIL:]
            if len(lines) - 1 > SHELL_TAIL:
                self.console.print(
                    Styled(
                        f"   | ... ({plural(len(lines) - 1 - SHELL_TAIL, 'line')} above)",
                        style="dim",
                    )
                )
            for line in tail:
                self.console.print(
                    Styled(f"   | {one_line(line)[:200]}", style="dim"), highlight=False
                )

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


def retry_line(retry: Retry, left: float) -> str:
    """`rate limited (HTTP 429): retrying in 7 s (1 of 3)`"""
    status = retry.error.status
    why = "rate limited" if status == 429 else "server error"
    return f"{why} (HTTP {status}): retrying in {left:.0f} s ({retry.attempt} of {retry.retries})"
