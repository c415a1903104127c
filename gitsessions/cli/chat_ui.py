"""The chat's terminal side: streaming replies and the spinner (approvals:
cli/approvals.py; the input line and its history: cli/chat_input.py).

Model text is escaped with `visible` as a whole each time the display is redrawn, so an
escape sequence split across stream chunks is escaped like any other.
"""

import contextlib
import math
import time
from typing import TYPE_CHECKING, Any

from rich.console import Console, ConsoleOptions, RenderResult
from rich.live import Live
from rich.status import Status
from rich.text import Text

from gitsessions.cli.plain import one_line
from gitsessions.cli.progress import ProgressEvents, cut, describe_call, retry_line
from gitsessions.services.model.model import Retry
from gitsessions.services.tools import ToolOutcome
from gitsessions.values.messages import Message, text_of
from gitsessions.values.visible import visible

if TYPE_CHECKING:
    from rich.markdown import Markdown


class Running:
    """What a spinner says while a tool runs: the call, the time it has taken, and the
    last line of its output so far. Rendered afresh at each refresh of the spinner (the
    elapsed time counts up); `line` is set from the tool's reading thread."""

    def __init__(self, call: dict[str, Any]) -> None:
        self.call = call
        self.started = time.monotonic()
        self.line = ""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = max(20, options.max_width - 2)
        seconds = int(time.monotonic() - self.started)
        took = f"{seconds} s" if seconds < 60 else f"{seconds // 60} min {seconds % 60} s"
        text = Text(describe_call(self.call, width - len(took) - 3), style="cyan")
        text.append(f" · {took}", style="dim")
        if self.line:
            text.append("\n| ", style="dim")
            text.append(cut(one_line(self.line.expandtabs()), width - 2), style="dim")
        yield text


class ChatEvents(ProgressEvents):
    """Plain text while a reply streams, markdown once it is complete; a spinner while
    waiting for the first token, and while a tool runs (on a terminal only: into a pipe
    nothing is added)."""

    def __init__(self, out: Console, err: Console) -> None:
        super().__init__(err)
        self.out = out
        self.status: Status | None = None
        self.live: Live | None = None
        self.buffer = ""
        self.running: Running | None = None
        self.tool_status: Status | None = None

    def tool_running(self, call: dict[str, Any]) -> None:
        if not self.console.is_terminal:
            return
        self.running = Running(call)
        self.tool_status = Status(self.running, console=self.console, spinner="dots")
        self.tool_status.start()

    def tool_output(self, line: str) -> None:
        running = self.running
        if running is not None:
            running.line = line

    def tool_finished(self, outcome: ToolOutcome) -> None:
        self._stop_tool()
        super().tool_finished(outcome)

    def _stop_tool(self) -> None:
        if self.tool_status is not None:
            with contextlib.suppress(Exception):
                self.tool_status.stop()
        self.tool_status = None
        self.running = None

    def waiting(self, active: bool) -> None:
        self.busy("thinking..." if active else None)

    def busy(self, reason: str | None) -> None:
        """The spinner, saying what is awaited; None stops it. Into a pipe: the line
        exec would print (compaction's), no spinner."""
        if not self.console.is_terminal:
            super().busy(reason)
        elif reason is not None and self.status is None:
            self.status = Status(reason, console=self.console, spinner="dots")
            self.status.start()
        elif reason is not None and self.status is not None:
            self.status.update(reason)
        elif reason is None and self.status is not None:
            self.status.stop()
            self.status = None

    def retrying(self, retry: Retry) -> None:
        """A one-line countdown in place of the spinner's text, then back to thinking
        (into a pipe: the one line exec prints)."""
        if not self.console.is_terminal:
            super().retrying(retry)
            return
        end = time.monotonic() + retry.seconds
        status = self.status or Status("", console=self.console, spinner="dots")
        if self.status is None:
            status.start()
        try:
            while (left := end - time.monotonic()) > 0:
                status.update(retry_line(retry, math.ceil(left)))
                time.sleep(min(1.0, left))
        finally:
            if self.status is None:
                status.stop()
            else:
                status.update("thinking...")

    def text(self, delta: str) -> None:
        if self.live is None:
            self.live = Live(
                Text(), console=self.out, refresh_per_second=10, vertical_overflow="visible"
            )
            self.live.start()
        self.buffer += delta
        self.live.update(Text(visible(self.buffer)))

    def reply(self, message: Message) -> None:
        content = text_of(message)
        if self.live is not None:
            self.live.update(markdown(self.buffer) if self.buffer.strip() else Text(""))
            self.live.stop()
            self.live = None
        elif content.strip():
            self.out.print(markdown(content))
        self.buffer = ""

    def reset(self) -> None:
        """After an interruption: stop whatever is on screen."""
        self.waiting(False)
        self._stop_tool()
        if self.live is not None:
            with contextlib.suppress(Exception):
                self.live.stop()
            self.live = None
        self.buffer = ""


def markdown(text: str) -> "Markdown":
    """A finished reply: escaped first, links shown with their address (no hidden
    OSC 8 hyperlink targets)."""
    from rich.markdown import Markdown  # markdown-it and pygments: imported at the first reply

    return Markdown(visible(text), hyperlinks=False)
