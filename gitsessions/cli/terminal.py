"""The only way text reaches the terminal: consoles that show every string visible-safe.

Invariant: no character `values.visible.visible` would escape (ESC, C0/C1 controls,
bidi overrides, zero-width characters, lone surrogates) ever leaves `VisibleConsole`
as content, whatever renderable carried it (str, Text, Table, Markdown, a Live display
updated while a reply streams). Only rich's own styling and cursor control, which never
come from data, are written raw. `tests/test_terminal_safety.py` checks that every
module of the CLI writes through these consoles (or through `write_json`).

Call sites still pass data through `visible()` / `vtext()` first: then a `\\r` or a
backspace shows as `\\r` / `\\x08` instead of being dropped by rich, and table columns
are measured on what will be shown. The console is the backstop when a call site forgets.
"""

import json
from collections.abc import Iterable
from typing import IO, Any

from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment
from rich.text import Text

from gitsessions.values.visible import json_visible, visible


class VisibleConsole(Console):
    """A rich Console whose rendered content is always passed through `visible`."""

    def render(
        self, renderable: RenderableType, options: ConsoleOptions | None = None
    ) -> Iterable[Segment]:
        for segment in super().render(renderable, options):
            text = segment.text
            if segment.control is None and text:
                shown = visible(text)
                if shown is not text:
                    segment = Segment(shown, segment.style, None)
            yield segment

    def render_str(self, text: str, **kwargs: Any) -> Text:
        # Escape before rich's Text silently drops \r, \b and friends.
        return super().render_str(visible(text), **kwargs)


def vtext(text: object, style: str = "") -> Text:
    """`Text` of untrusted data (any value, shown with `str`), escaped, never markup."""
    return Text(visible(str(text)), style=style)


def one_line(text: object) -> str:
    """Untrusted data for a single line (a table cell, an error): newlines escaped too."""
    return visible(str(text), keep_newlines=False)


def write_json(console: Console, value: Any) -> None:
    """JSON straight to the console's file: rich would build a Text per line (seconds
    for a 10,000-session listing). Characters `visible` escapes are written as \\uXXXX:
    the same data, safe on a terminal."""
    console.file.write(json_visible(json.dumps(value, indent=2, ensure_ascii=False)) + "\n")
    console.file.flush()


def write_json_bytes(console: Console, data: bytes) -> None:
    """UTF-8 JSON (an export) to the console's file, terminal-safe like `write_json`;
    byte for byte what was given when it holds nothing to escape."""
    safe = json_visible(data.decode("utf-8")).encode("utf-8")
    binary = getattr(console.file, "buffer", None)
    if binary is not None:
        console.file.flush()
        binary.write(safe)
        binary.flush()
    else:
        console.file.write(safe.decode("utf-8"))
        console.file.flush()


ANSI = {
    "bold": "1",
    "dim": "2",
    "red": "31",
    "green": "32",
    "yellow": "33",
    "blue": "34",
    "magenta": "35",
    "cyan": "36",
}


def ansi(style: str) -> str:
    """The SGR sequence of a style like "bold green" (words rich also knows)."""
    codes = [ANSI[word] for word in style.split() if word in ANSI]
    return f"\x1b[{';'.join(codes)}m" if codes else ""


class Sink:
    """Long output (`show`, `log`) written straight to a file, a line at a time: rich
    builds and wraps a Text per message, several times slower than the JSON form, and
    a pager wraps lines itself. Every piece of data passes `visible`; the only raw
    bytes are the SGR colours of `style`, and only when `colour` is on."""

    def __init__(self, file: IO[str], colour: bool) -> None:
        self.file = file
        self.colour = colour

    def text(self, text: str, style: str = "", *, one_line: bool = False) -> None:
        """`text` (data, escaped) in `style`, without a newline."""
        shown = visible(text, keep_newlines=not one_line)
        if self.colour and style:
            shown = f"{ansi(style)}{shown}\x1b[0m"
        self.file.write(shown)

    def line(self, text: str = "", style: str = "", *, one_line: bool = False) -> None:
        self.text(text, style, one_line=one_line)
        self.file.write("\n")

    def json(self, text: str) -> None:
        """JSON text, its unsafe characters as \\uXXXX escapes (see `write_json`)."""
        self.file.write(json_visible(text))

    def flush(self) -> None:
        self.file.flush()


def write_records(console: Console, rows: Iterable[Iterable[object]]) -> None:
    """Records for a pipe (stdout not a terminal): one per line, fields separated by a tab,
    no padding or wrapping. Each field is one visible-safe line (a tab or newline in the
    data shows as `\\t` / `\\n`), so a line is always exactly one record."""
    lines = ["\t".join(one_line("" if field is None else field) for field in row) for row in rows]
    if lines:
        console.file.write("\n".join(lines) + "\n")
        console.file.flush()


def piped(console: Console) -> bool:
    """Whether the console writes to a pipe or a file rather than a terminal (its file's
    own answer: FORCE_COLOR, which makes rich draw for a terminal, does not change it)."""
    isatty = getattr(console.file, "isatty", None)
    try:
        return not (isatty is not None and isatty())
    except ValueError:  # a closed file
        return True
