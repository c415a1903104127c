"""Rendering the agent's progress: tool calls and notices on stderr, replies on stdout.

Lines are `Styled` texts (cli/plain.py): printed by rich on a terminal, written as they
are into a pipe (exec's usual place), where rich is never imported.

Tool arguments and outputs come from the model and the tools: escaped with `one_line`
before they are cut to width, so an escape is never split into something raw.
"""

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from gitsessions.agent.turns import Events
from gitsessions.cli.plain import Styled, one_line, vtext
from gitsessions.services.model.model import Retry
from gitsessions.services.tools import ToolOutcome
from gitsessions.services.tools.describe import cut, describe_call
from gitsessions.services.tools.output import CUT_NOTE, cut_in
from gitsessions.values.plural import plural

if TYPE_CHECKING:
    from gitsessions.services.compaction.compaction import CompactionResult


SHELL_TAIL = 5  # lines of a shell run's output shown after it


class ProgressEvents(Events):
    """Progress lines on stderr (exec, and chat's tool lines)."""

    def __init__(self, console: Any) -> None:  # a VisibleConsole, or a PlainConsole
        self.console = console
        self.first_reply: Callable[[], None] | None = None  # run once, at the first reply

    def reply(self, message: Any) -> None:
        said, self.first_reply = self.first_reply, None
        if said is not None:
            said()

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
