"""The chat's terminal side: streaming replies, the spinner, approvals (the input line
and its history: cli/chat_input.py).

Model text is escaped with `visible` as a whole each time the display is redrawn, so an
escape sequence split across stream chunks is escaped like any other. An approval shows
what runs, visible-safe: a command whole, an edit as its diff, a file's size and first
lines (every line on `v`); "always" for run_shell never covers a command that chains a
second one.
"""

import contextlib
import difflib
import json
import math
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.live import Live
from rich.status import Status
from rich.text import Text

from gitsessions.cli.plain import one_line
from gitsessions.cli.progress import ProgressEvents, retry_line
from gitsessions.services.model.model import Retry
from gitsessions.values.messages import Message, text_of
from gitsessions.values.visible import visible

if TYPE_CHECKING:
    from rich.markdown import Markdown

# Arguments shown as a block of their own lines, even when short.
BLOCK_ARGUMENTS = ("command", "content", "old", "new")
FIRST_LINES = 20  # of a file write_file asks to write; `v` shows the rest
DIFF_STYLES = {"---": "bold", "+++": "bold", "@": "cyan", "-": "red", "+": "green"}
SHELL_CONTROL = frozenset(";&|<>`$()\n\r\\")


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
        self.busy("thinking..." if active else None)

    def busy(self, reason: str | None) -> None:
        """The spinner, saying what is awaited; None stops it."""
        if reason is not None and self.status is None:
            self.status = Status(reason, console=self.console, spinner="dots")
            self.status.start()
        elif reason is not None and self.status is not None:
            self.status.update(reason)
        elif reason is None and self.status is not None:
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


def markdown(text: str) -> "Markdown":
    """A finished reply: escaped first, links shown with their address (no hidden
    OSC 8 hyperlink targets)."""
    from rich.markdown import Markdown  # markdown-it and pygments: imported at the first reply

    return Markdown(visible(text), hyperlinks=False)


def describe_approval(name: str, arguments: Mapping[str, Any], whole: bool = False) -> Text:
    """The question for one call, everything escaped: `run_shell` its command on lines of
    its own, `write_file` its path, size and first lines (`whole`: every line),
    `edit_file` a coloured unified diff of the edit; any other tool every argument."""
    text = Text()
    text.append(f"allow {one_line(name)}?", style="bold yellow")
    rest = dict(arguments)
    if name == "run_shell" and isinstance(rest.get("command"), str):
        for n, line in enumerate(visible(rest.pop("command")).split("\n")):
            text.append("\n  $ " if n == 0 else "\n    ", style="bold")
            text.append(line)
    elif name == "write_file" and isinstance(rest.get("content"), str):
        _path(text, rest)
        _content(text, rest.pop("content"), whole)
    elif (
        name == "edit_file"
        and isinstance(rest.get("old"), str)
        and isinstance(rest.get("new"), str)
    ):
        path = one_line(rest.pop("path", ""))
        _diff(text, path, rest.pop("old"), rest.pop("new"))
    for key, value in rest.items():
        _argument(text, key, value)
    return text


def _path(text: Text, arguments: dict[str, Any]) -> None:
    if "path" in arguments:
        _argument(text, "path", arguments.pop("path"))


def _argument(text: Text, key: str, value: Any) -> None:
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


def _content(text: Text, content: str, whole: bool) -> None:
    lines = content.split("\n")
    if lines[-1] == "":
        lines.pop()
    size = len(content.encode("utf-8", "surrogatepass"))
    text.append("\n  content: ", style="bold")
    text.append(f"{_count(len(lines), 'line')}, {_count(size, 'byte')}")
    shown = lines if whole else lines[:FIRST_LINES]
    for line in shown:
        text.append("\n    | ", style="dim")
        text.append(visible(line))
    if len(lines) > len(shown):
        more = len(lines) - len(shown)
        text.append(f"\n    ... {_count(more, 'more line')} (v shows them all)", style="dim")


def _diff(text: Text, path: str, old: str, new: str) -> None:
    lines = difflib.unified_diff(
        visible(old).splitlines(), visible(new).splitlines(), path, path, lineterm=""
    )
    for line in lines:
        style = DIFF_STYLES.get(line[:3], DIFF_STYLES.get(line[:1], ""))
        text.append("\n")
        text.append(f"  {line}", style=style)


def _count(number: int, noun: str) -> str:
    return f"{number:,} {noun}" if number == 1 else f"{number:,} {noun}s"


def command_prefix(command: str) -> str:
    """What "always" approves for a run_shell command by default: its first word."""
    return command.split()[0] if command.split() else ""


def prefix_allows(prefix: str, command: str) -> bool:
    """Whether "always for commands starting with `prefix`" covers `command`: it starts
    with the prefix as whole words and holds no second command (no `;`, `&`, `|`, a
    redirection, a substitution or a newline: those always ask)."""
    if any(c in SHELL_CONTROL for c in command):
        return False
    return command == prefix or command.startswith(prefix + " ")


class ChatApprover:
    """Ask before write_file, edit_file and run_shell: yes, no (the default), or always
    (this tool; for run_shell, commands starting with a prefix)."""

    def __init__(self, console: Console, auto: bool = False) -> None:
        self.console = console
        self.auto = auto
        self.always: set[str] = set()
        self.prefixes: list[str] = []

    def __call__(self, name: str, arguments: Any) -> bool:
        command = arguments.get("command") if isinstance(arguments, Mapping) else None
        shell = name == "run_shell" and isinstance(command, str)
        if self.auto or name in self.always:
            return True
        if shell and any(prefix_allows(p, command) for p in self.prefixes):
            return True
        self.console.print(describe_approval(name, arguments), highlight=False, soft_wrap=True)
        if shell:
            default = one_line(command_prefix(command))
            scope = f"a: always for commands starting with `{default}` (a PREFIX: that prefix)"
        else:
            scope = f"a: always for {one_line(name)} in this chat"
        self.console.print(Text(f"y: yes · N: no (Enter) · {scope} · v: view all", style="dim"))
        while True:
            try:
                answer = input("[y/N/a] ").strip()
            except EOFError:
                return False
            word, _, rest = answer.partition(" ")
            word = word.lower()
            if word in ("y", "yes"):
                return True
            if word in ("n", "no", ""):
                return False
            if word in ("v", "view"):
                self.console.print(
                    describe_approval(name, arguments, whole=True), highlight=False, soft_wrap=True
                )
            elif word in ("a", "always") and shell:
                self.prefixes.append(rest.strip() or command_prefix(command))
                return True
            elif word in ("a", "always"):
                self.always.add(name)
                return True
