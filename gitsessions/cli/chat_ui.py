"""The chat's terminal side: streaming replies, the spinner, approvals, input history.

Model text is escaped with `visible` as a whole each time the display is redrawn, so an
escape sequence split across stream chunks is escaped like any other. An approval shows
the whole call, every argument complete and visible-safe: what is approved is what runs.
"""

import contextlib
import json
import math
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.markdown import Markdown
from rich.status import Status
from rich.text import Text

from gitsessions.cli.progress import ProgressEvents, retry_line
from gitsessions.cli.terminal import one_line
from gitsessions.services import chat_history
from gitsessions.services.model import Retry
from gitsessions.values.messages import Message, text_of
from gitsessions.values.secrets import redact
from gitsessions.values.visible import visible

# Arguments shown as a block of their own lines, even when short.
BLOCK_ARGUMENTS = ("command", "content", "old", "new")


class ChatEvents(ProgressEvents):
    """Plain text while a reply streams, markdown once it is complete; a spinner while
    waiting for the first token."""

    def __init__(self, out: Console, err: Console) -> None:
        super().__init__(err)
        self.out = out
        self.status: Status | None = None
        self.live: Live | None = None
        self.buffer = ""

    def waiting(self, active: bool) -> None:
        if active and self.status is None:
            self.status = Status("thinking...", console=self.console, spinner="dots")
            self.status.start()
        elif not active and self.status is not None:
            self.status.stop()
            self.status = None

    def retrying(self, retry: Retry) -> None:
        """A one-line countdown in place of the spinner's text, then back to thinking."""
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
        if self.live is not None:
            with contextlib.suppress(Exception):
                self.live.stop()
            self.live = None
        self.buffer = ""


def markdown(text: str) -> Markdown:
    """A finished reply: escaped first, links shown with their address (no hidden
    OSC 8 hyperlink targets)."""
    return Markdown(visible(text), hyperlinks=False)


def describe_approval(name: str, arguments: Mapping[str, Any]) -> Text:
    """The question for one call: its name, then every argument whole and escaped (a
    command, a file's content, the text an edit replaces: each on lines of its own)."""
    text = Text(f"allow {one_line(name)}?", style="bold yellow")
    for key, value in arguments.items():
        shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        if key in BLOCK_ARGUMENTS or "\n" in shown:
            text.append(f"\n  {one_line(key)}:", style="bold")
            if not shown:
                text.append("\n    (empty)", style="dim")
            for line in visible(shown).split("\n") if shown else []:
                text.append("\n    | ", style="dim")
                text.append(line)
        else:
            text.append(f"\n  {one_line(key)}: ", style="bold")
            text.append(one_line(shown))
    return text


class ChatApprover:
    """Ask before write_file, edit_file and run_shell: yes, no, or always (this tool)."""

    def __init__(self, console: Console, auto: bool = False) -> None:
        self.console = console
        self.auto = auto
        self.always: set[str] = set()

    def __call__(self, name: str, arguments: Any) -> bool:
        if self.auto or name in self.always:
            return True
        self.console.print(describe_approval(name, arguments), highlight=False)
        while True:
            try:
                answer = input("[y]es / [n]o / [a]lways for this tool: ").strip().lower()
            except EOFError:
                return False
            if answer in ("y", "yes"):
                return True
            if answer in ("n", "no", ""):
                return False
            if answer in ("a", "always"):
                self.always.add(name)
                return True


class History:
    """Readline input history, kept in `<home>/chat_history` with each line tagged by its
    session (`services.chat_history`), so deleting a session drops what was typed in it;
    with `redact`, secrets typed at the prompt are redacted before the file is written."""

    def __init__(self, home: Path, redact: bool = True) -> None:
        self.home = home
        self.redact = redact
        try:
            import readline
        except ImportError:  # pragma: no cover - not on this platform
            self.readline = None
            return
        self.readline = readline
        for _session, line in chat_history.load(home)[-chat_history.LIMIT :]:
            readline.add_history(line)
        self.start = readline.get_current_history_length()

    def save(self, session: str) -> None:
        """Store the lines typed since the chat began, tagged with `session`."""
        if self.readline is None:
            return
        rl = self.readline
        typed = [
            rl.get_history_item(n)
            for n in range(self.start + 1, rl.get_current_history_length() + 1)
        ]
        if self.redact:
            typed = [redact(line)[0] if line else line for line in typed]
        with contextlib.suppress(OSError):
            chat_history.append(self.home, session, [line for line in typed if line])
        self.start = rl.get_current_history_length()
