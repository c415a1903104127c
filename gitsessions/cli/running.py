"""A running tool on a terminal: a spinner with the call, the time it has taken and the
last line of its output so far, from the moment it is approved until it finishes.

Drawn with rich's `Status` (a transient `Live`): gone once the tool finishes, leaving the
result lines `ProgressEvents` prints. On anything but a terminal nothing is drawn, so a
pipe gets exactly the lines it always got. The line arrives from the tool's reading
thread; the spinner's refresh thread reads it at each redraw.
"""

import contextlib
import time
from typing import Any

from rich.console import Console, ConsoleOptions, RenderResult
from rich.status import Status
from rich.text import Text

from gitsessions.cli.plain import one_line
from gitsessions.cli.progress import ProgressEvents
from gitsessions.services.tools import ToolOutcome
from gitsessions.services.tools.describe import cut, describe_call


def since(started: float) -> str:
    """The time since `started` (a `time.monotonic()`), as a spinner shows it."""
    seconds = int(time.monotonic() - started)
    return f"{seconds} s" if seconds < 60 else f"{seconds // 60} min {seconds % 60} s"


class Awaited:
    """What a spinner says while something is awaited (a compaction, a reply): the
    reason and the time it has taken so far, counting up at each refresh."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        self.started = time.monotonic()

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield Text(f"{self.reason} · {since(self.started)}")


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
        took = since(self.started)
        text = Text(describe_call(self.call, width - len(took) - 3), style="cyan")
        text.append(f" · {took}", style="dim")
        if self.line:
            text.append("\n| ", style="dim")
            text.append(cut(one_line(self.line.expandtabs()), width - 2), style="dim")
        yield text


class RunningEvents(ProgressEvents):
    """ProgressEvents with the running tool's spinner (chat's, and exec's on a terminal)."""

    def __init__(self, console: Any) -> None:
        super().__init__(console)
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
        self.stop_tool()
        super().tool_finished(outcome)

    def stop_tool(self) -> None:
        """Take the spinner away (a tool finished, or was interrupted)."""
        if self.tool_status is not None:
            with contextlib.suppress(Exception):  # a Ctrl-C may land while it stops
                self.tool_status.stop()
        self.tool_status = None
        self.running = None
