"""The chat's terminal side: streaming replies, the spinner, approvals, input history."""

import contextlib
import json
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.markdown import Markdown
from rich.status import Status
from rich.text import Text

from gitsessions.cli.progress import ProgressEvents, describe_call
from gitsessions.values.messages import Message, text_of
from gitsessions.values.secrets import redact


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

    def text(self, delta: str) -> None:
        if self.live is None:
            self.live = Live(
                Text(), console=self.out, refresh_per_second=10, vertical_overflow="visible"
            )
            self.live.start()
        self.buffer += delta
        self.live.update(Text(self.buffer))

    def reply(self, message: Message) -> None:
        content = text_of(message)
        if self.live is not None:
            self.live.update(Markdown(self.buffer) if self.buffer.strip() else Text(""))
            self.live.stop()
            self.live = None
        elif content.strip():
            self.out.print(Markdown(content))
        self.buffer = ""

    def reset(self) -> None:
        """After an interruption: stop whatever is on screen."""
        self.waiting(False)
        if self.live is not None:
            with contextlib.suppress(Exception):
                self.live.stop()
            self.live = None
        self.buffer = ""


class ChatApprover:
    """Ask before write_file, edit_file and run_shell: yes, no, or always (this tool)."""

    def __init__(self, console: Console, auto: bool = False) -> None:
        self.console = console
        self.auto = auto
        self.always: set[str] = set()

    def __call__(self, name: str, arguments: Any) -> bool:
        if self.auto or name in self.always:
            return True
        call = {"function": {"name": name, "arguments": json.dumps(dict(arguments))}}
        self.console.print(
            Text(f"allow {describe_call(call, 200)}?", style="bold yellow"), highlight=False
        )
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
    """Readline input history in `<home>/chat_history` (when readline is available);
    with `redact`, secrets typed at the prompt are redacted before the file is written."""

    def __init__(self, home: Path, redact: bool = True) -> None:
        self.path = home / "chat_history"
        self.redact = redact
        try:
            import readline
        except ImportError:  # pragma: no cover - not on this platform
            self.readline = None
            return
        self.readline = readline
        readline.set_history_length(1000)
        with contextlib.suppress(OSError):
            readline.read_history_file(self.path)

    def save(self) -> None:
        if self.readline is None:
            return
        if self.redact:
            for n in range(self.readline.get_current_history_length()):
                line = self.readline.get_history_item(n + 1)  # 1-based, unlike replace
                clean = redact(line)[0] if line else line
                if clean != line:
                    self.readline.replace_history_item(n, clean)
        with contextlib.suppress(OSError):
            self.path.touch(mode=0o600, exist_ok=True)
            self.readline.write_history_file(self.path)
