"""The rich-free half of `cli/terminal.py`: one-line cells, JSON, records for a pipe and
`Sink` (long output a line at a time), each writing to a console's file.

Invariant: the same as `terminal.py`'s: every piece of data passes `values.visible`
before it is written. Nothing here imports rich, so a command whose output goes to a
pipe (`list | grep`, `info`, `show`, `log`) never loads it: these helpers need only
the console's `file`, which `cli/state.py` gives without making the console
(`state.plain_out`).
"""

import sys
from collections.abc import Iterable
from typing import IO, Any, Protocol

from gitsessions.values.visible import json_visible, visible


class HasFile(Protocol):
    """A rich Console, or `StreamOf` for one not made yet: what is written to."""

    @property
    def file(self) -> IO[str]: ...


class StreamOf:
    """The file a console with no file of its own writes to (`sys.stdout` or
    `sys.stderr`, looked up at each use, as rich does), without making the console."""

    def __init__(self, name: str) -> None:
        self.name = name

    @property
    def file(self) -> IO[str]:
        file = getattr(sys, self.name)
        return getattr(file, "rich_proxied_file", file)  # type: ignore[no-any-return]


def one_line(text: object) -> str:
    """Untrusted data for a single line (a table cell, an error): newlines escaped too."""
    return visible(str(text), keep_newlines=False)


def write_json(console: HasFile, value: Any) -> None:
    """JSON straight to the console's file: rich would build a Text per line (seconds
    for a 10,000-session listing). Characters `visible` escapes are written as \\uXXXX:
    the same data, safe on a terminal."""
    import json  # here: `chat` shows its prompt without it

    console.file.write(json_visible(json.dumps(value, indent=2, ensure_ascii=False)) + "\n")
    console.file.flush()


def write_json_bytes(console: HasFile, data: bytes) -> None:
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


def write_records(console: HasFile, rows: Iterable[Iterable[object]]) -> None:
    """Records for a pipe (stdout not a terminal): one per line, fields separated by a tab,
    no padding or wrapping. Each field is one visible-safe line (a tab or newline in the
    data shows as `\\t` / `\\n`), so a line is always exactly one record."""
    lines = ["\t".join(one_line("" if field is None else field) for field in row) for row in rows]
    if lines:
        console.file.write("\n".join(lines) + "\n")
        console.file.flush()


def piped(console: HasFile) -> bool:
    """Whether the console writes to a pipe or a file rather than a terminal (its file's
    own answer: FORCE_COLOR, which makes rich draw for a terminal, does not change it)."""
    isatty = getattr(console.file, "isatty", None)
    try:
        return not (isatty is not None and isatty())
    except ValueError:  # a closed file
        return True
