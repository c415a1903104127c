"""Picking a session from a short list, like `claude --resume`: `chat --resume` without an
id and `\\sessions` in the chat.

On a terminal the list is drawn on stderr and redrawn in place while keys are read one by
one (cbreak mode, restored however the picker ends): up/down (or k/j) move, Enter picks
the marked line, a number picks that line (at once when no longer number starts with it,
else at Enter), Esc, q or Ctrl-C cancels. When stdin is not a terminal nothing can be
asked: the numbered list is printed and `NoTerminal` (bad usage, exit 2) says how to name
a session instead. Every line is a stored string shown visible-safe, cut to the width.
Only the `SHOWN` most recent are offered; a line under them says how many more there are
and which command lists them all.
"""

import os
import select
import sys
import termios
import tty
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.control import Control
from rich.segment import ControlType
from rich.text import Text

from gitsessions.cli import listing
from gitsessions.cli.chat_input import discard_ahead, discarded_note
from gitsessions.cli.damage import warn_damaged
from gitsessions.cli.plain import one_line
from gitsessions.store.catalog import Catalog
from gitsessions.store.sessions import SessionStore
from gitsessions.values.errors import BadUsage
from gitsessions.values.ids import short
from gitsessions.values.plural import plural

SHOWN = 15  # the most recent sessions offered
UP = {b"\x1b[A", b"\x1bOA", b"k"}
DOWN = {b"\x1b[B", b"\x1bOB", b"j"}
CANCEL = {b"\x1b", b"q", b"\x03", b"\x04"}
ENTER = {b"\r", b"\n"}
BACKSPACE = {b"\x7f", b"\x08"}


class NoTerminal(BadUsage):
    """A pick was asked for where no one can answer (stdin is not a terminal)."""


@dataclass(frozen=True)
class Choice:
    id: str
    line: str  # one line: short id, last activity, label, origin


@dataclass(frozen=True)
class Offered:
    """The sessions a picker offers, and how many older ones it leaves out."""

    choices: list[Choice] = field(default_factory=list)
    more: int = 0

    def __bool__(self) -> bool:
        return bool(self.choices)


def recent(store: SessionStore, workspace: Path, current: str | None = None) -> Offered:
    """The `SHOWN` most recently active sessions of `workspace` (and their forks),
    unarchived, and how many more there are; each damaged session ref named on stderr."""
    catalog = Catalog(store)
    rows = listing.session_rows(catalog, include_archived=False, workspace=workspace)
    warn_damaged(catalog.damaged)
    rows.sort(key=lambda r: bool(r["no_reply"]))  # a failed start is never the default
    shown = [choice(r, r["id"] == current) for r in rows[:SHOWN]]
    return Offered(shown, max(0, len(rows) - SHOWN))


def more_line(more: int) -> str:
    """What the picker says under its list when it left older sessions out."""
    return f"... and {plural(more, 'older session')}: `gitsessions list --here` lists them all"


def choice(row: dict[str, Any], current: bool = False) -> Choice:
    active = (row.get("active_at") or "")[:16].replace("T", " ")
    parts = [short(row["id"]), active, listing.label(row) + listing.marks(row), listing.origin(row)]
    line = "  ".join(one_line(p) for p in parts if p)
    return Choice(row["id"], line + ("  (this session)" if current else ""))


def pick(console: Console, offered: Offered, heading: str, hint: str) -> str | None:
    """The id picked, or None when cancelled; `hint` tells how to name a session when
    there is no terminal to ask on (raised as `NoTerminal` after the numbered list)."""
    if not sys.stdin.isatty():
        for n, c in enumerate(offered.choices, 1):
            console.print(Text(f"{n:>2}. {c.line}"), highlight=False, markup=False)
        if offered.more:
            console.print(Text(more_line(offered.more)), highlight=False, markup=False)
        raise NoTerminal(f"stdin is not a terminal, so no session can be picked: {hint}")
    fd = sys.stdin.fileno()
    dropped = discard_ahead()  # keys typed before the list shows pick nothing
    if dropped:
        console.print(Text(discarded_note(dropped), style="dim"), highlight=False)
    saved = termios.tcgetattr(fd)
    try:
        tty.setcbreak(fd)
        return _Picker(console, offered.choices, heading, offered.more).run(fd)
    except KeyboardInterrupt:
        return None
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


class _Picker:
    def __init__(
        self, console: Console, choices: Sequence[Choice], heading: str, more: int = 0
    ) -> None:
        self.console = console
        self.choices = choices
        self.more = more
        self.heading = heading
        self.at = 0
        self.typed = ""
        self.drawn = 0

    def run(self, fd: int) -> str | None:
        self.draw()
        while True:
            key = read_key(fd)
            if key in CANCEL:
                return None
            if key in UP:
                self.at = (self.at - 1) % len(self.choices)
                self.typed = ""
            elif key in DOWN:
                self.at = (self.at + 1) % len(self.choices)
                self.typed = ""
            elif key in ENTER:
                return self.choices[self.at].id
            elif key in BACKSPACE:
                self.typed = self.typed[:-1]
            elif key.isdigit():
                typed = self.typed + key.decode()
                number = int(typed)
                if 1 <= number <= len(self.choices):
                    self.typed, self.at = typed, number - 1
                    if number * 10 > len(self.choices):  # no longer number starts with it
                        self.draw()
                        return self.choices[self.at].id
            self.draw()

    def draw(self) -> None:
        width = max(20, self.console.width - 1)
        if self.drawn:
            self.console.control(Control.move_to_column(0, -self.drawn))
        lines = [Text(self.heading, style="bold")]
        for n, c in enumerate(self.choices, 1):
            marked = n - 1 == self.at
            line = Text(f"{'›' if marked else ' '} {n:>2}. {c.line}")
            if marked:
                line.stylize("reverse")
            lines.append(line)
        if self.more:
            lines.append(Text(more_line(self.more), style="dim"))
        typed = f"number: {self.typed}" if self.typed else ""
        lines.append(
            Text(f"↑/↓ or a number, Enter picks, Esc cancels  {typed}".rstrip(), style="dim")
        )
        for line in lines:
            line.truncate(width, overflow="ellipsis")
            self.console.control(Control((ControlType.ERASE_IN_LINE, 2)))
            self.console.print(line, highlight=False, markup=False, no_wrap=True, crop=True)
        self.drawn = len(lines)


def read_key(fd: int) -> bytes:
    """One key: a byte, or a whole escape sequence (an arrow key)."""
    key = os.read(fd, 1)
    if key != b"\x1b":
        return key
    while select.select([fd], [], [], 0.05)[0]:
        key += os.read(fd, 1)
        if len(key) >= 3:
            break
    return key
