"""The chat's terminal side: streaming replies and the spinners (a running tool's:
cli/running.py; approvals: cli/approvals.py; the input line and its history:
cli/chat_input.py).

Model text is escaped with `visible` as a whole each time the display is redrawn, so an
escape sequence split across stream chunks is escaped like any other.
"""

import contextlib
import math
import time
from typing import TYPE_CHECKING

from rich.console import Console
from rich.live import Live
from rich.status import Status
from rich.text import Text

from gitsessions.agent.turns import CUT_MARK
from gitsessions.cli.progress import retry_line
from gitsessions.cli.running import Awaited, RunningEvents
from gitsessions.services.model.model import Retry
from gitsessions.values.messages import Message, text_of
from gitsessions.values.visible import visible

if TYPE_CHECKING:
    from rich.markdown import Markdown


class ChatEvents(RunningEvents):
    """Plain text while a reply streams, markdown once it is complete; a spinner while
    waiting for the first token, and while a tool runs (on a terminal only: into a pipe
    nothing is added)."""

    def __init__(self, out: Console, err: Console) -> None:
        super().__init__(err)
        self.out = out
        self.status: Status | None = None
        self.live: Live | None = None
        self.buffer = ""

    def waiting(self, active: bool) -> None:
        self.busy("thinking..." if active else None)

    def busy(self, reason: str | None) -> None:
        """The spinner, saying what is awaited and for how long so far (a slow local
        summary takes minutes); None stops it. Into a pipe: the line
        exec would print (compaction's), no spinner."""
        if not self.console.is_terminal:
            super().busy(reason)
        elif reason is not None and self.status is None:
            self.status = Status(Awaited(reason), console=self.console, spinner="dots")
            self.status.start()
        elif reason is not None and self.status is not None:
            self.status.update(Awaited(reason))
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

    def reply_cut(self, message: Message) -> None:
        """A dim line under a reply the server cut at its token limit."""
        self.console.print(Text(CUT_MARK, style="dim"), highlight=False)

    def reset(self) -> None:
        """After an interruption: stop whatever is on screen."""
        self.waiting(False)
        self.stop_tool()
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
