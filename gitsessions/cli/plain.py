"""The rich-free half of `cli/terminal.py`: one-line cells, JSON, records for a pipe and
`Sink` (long output a line at a time), each writing to a console's file.

Invariant: the same as `terminal.py`'s: every piece of data passes `values.visible`
before it is written. Nothing here imports rich, so a command whose output goes to a
pipe (`list | grep`, `info`, `show`, `log`) never loads it: these helpers need only
the console's `file`, which `cli/state.py` gives without making the console
(`state.plain_out`).
"""

import sys
import textwrap
from collections.abc import Callable, Iterable, Mapping
from typing import IO, Any, Protocol, TextIO

from gitsessions.values.visible import is_visible, json_visible, visible


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
    def file(self) -> TextIO:
        file: TextIO = getattr(sys, self.name)
        proxied: TextIO = getattr(file, "rich_proxied_file", file)  # under rich's live display
        return proxied


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


def write_json_array(console: HasFile, items: Iterable[Any]) -> None:
    """`write_json` of a list, written an item at a time (the items may come from a
    stream): the same text as `write_json(console, list(items))`."""
    import json

    file = console.file
    first = True
    for item in items:
        text = json.dumps(item, indent=2, ensure_ascii=False).replace("\n", "\n  ")
        file.write(("[\n  " if first else ",\n  ") + json_visible(text))
        first = False
    file.write("[]\n" if first else "\n]\n")
    file.flush()


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

    def __init__(self, file: IO[str], colour: bool, width: int | None = None) -> None:
        self.file = file
        self.colour = colour
        self.width = width  # a terminal's: `line` wraps at words there (None: never)

    def text(self, text: str, style: str = "", *, one_line: bool = False) -> None:
        """`text` (data, escaped) in `style`, without a newline."""
        self._styled(visible(text, keep_newlines=not one_line), style)

    def line(self, text: str = "", style: str = "", *, one_line: bool = False) -> None:
        """`text` and a newline; with a `width`, wrapped at words to it (the terminal
        would cut a long line mid-word), a word longer than the line cut where it must;
        the escaped text is what is measured and wrapped."""
        shown = visible(text, keep_newlines=not one_line)
        if self.width is None or one_line or len(shown) <= self.width:
            self._styled(shown, style)
            self.file.write("\n")
            return
        for paragraph in shown.split("\n"):
            for piece in textwrap.wrap(paragraph, self.width, break_on_hyphens=False) or [""]:
                self._styled(piece, style)
                self.file.write("\n")

    def _styled(self, shown: str, style: str) -> None:
        self.file.write(f"{ansi(style)}{shown}\x1b[0m" if self.colour and style else shown)

    def line_start(self) -> None:
        """The cursor back to the start of its line (a carriage return: no data)."""
        self.file.write("\r")

    def json(self, text: str) -> None:
        """JSON text, its unsafe characters as \\uXXXX escapes (see `write_json`)."""
        self.file.write(json_visible(text))

    def flush(self) -> None:
        self.file.flush()


def write_records(console: HasFile, rows: Iterable[Iterable[object]]) -> None:
    """Records for a pipe (stdout not a terminal): one per line, fields separated by a tab,
    no padding or wrapping. Each field is one visible-safe line (a tab or newline in the
    data shows as `\\t` / `\\n`), so a line is always exactly one record."""
    wrote = False
    for row in rows:  # a line at a time: the rows may come from a stream
        fields = ["" if f is None else str(f) for f in row]
        if is_visible("".join(fields), keep_newlines=False):  # no field to escape
            console.file.write("\t".join(fields) + "\n")
        else:
            console.file.write("\t".join(one_line(f) for f in fields) + "\n")
        wrote = True
    if wrote:
        console.file.flush()


def piped(console: HasFile) -> bool:
    """Whether the console writes to a pipe or a file rather than a terminal (its file's
    own answer: FORCE_COLOR, which makes rich draw for a terminal, does not change it)."""
    isatty = getattr(console.file, "isatty", None)
    try:
        return not (isatty is not None and isatty())
    except ValueError:  # a closed file
        return True


class Styled:
    """A visible-safe text and a rich style name, as `vtext` makes them: a rich console
    renders it as the same `Text` (`__rich__`); `PlainConsole` writes the text itself,
    so printing one into a pipe needs no rich at all."""

    __slots__ = ("style", "text")

    def __init__(self, text: str, style: str = "") -> None:
        self.text = text
        self.style = style

    def __rich__(self) -> Any:
        # rich: only when a rich console draws this
        from rich.text import Text

        return Text(self.text, style=self.style)

    @property
    def plain(self) -> str:
        return self.text

    def __str__(self) -> str:
        return self.text


def vtext(text: object, style: str = "") -> Styled:
    """Untrusted data (any value, shown with `str`) to print, escaped, never markup."""
    return Styled(visible(str(text)), style)


# a tab (rich expands it to spaces) is left to the real console (whose emoji codes
# are off, as its markup: a `:x:` prints as itself either way)
_LOOKS_LIKE_A_TERMINAL = ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE")


class PlainConsole:
    """`out` or `err` when it writes into a pipe or a file: prints a `str` or a `Styled`
    exactly as `VisibleConsole` would there (soft-wrapped, no colour: the text, escaped,
    and the end), without importing rich; anything else (a table, markup, a status),
    and every other attribute, goes to the real console, made on first need by `make`.
    """

    def __init__(self, name: str, make: Callable[[], Any]) -> None:
        self._stream = StreamOf(name)
        self._make = make
        self._real: Any = None

    @property
    def real(self) -> Any:
        if self._real is None:
            self._real = self._make()
        return self._real

    @property
    def file(self) -> IO[str]:
        return self._stream.file if self._real is None else self._real.file

    def print(self, *objects: Any, sep: str = " ", end: str = "\n", **options: Any) -> None:
        given = [self._plain(o, options) for o in objects]
        texts = [text for text in given if text is not None]
        if len(texts) < len(given):
            self.real.print(*objects, sep=sep, end=end, **options)
            return
        file = self.file
        file.write(sep.join(texts) + end)
        file.flush()

    def _plain(self, value: Any, options: dict[str, Any]) -> str | None:
        """What the real console would write for `value`, None when only it can say."""
        if set(options) - {"style", "highlight", "markup", "soft_wrap"}:
            return None
        if options.get("markup") or options.get("soft_wrap") is False:
            return None
        if isinstance(value, Styled):
            text = value.text
        elif isinstance(value, str):
            text = value
        else:
            return None
        if "\t" in text:
            return None
        return visible(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


def plain_console_fits(name: str, env: Mapping[str, str]) -> bool:
    """Whether `PlainConsole` prints as the real console would on `sys.<name>`: a pipe or
    a file, and nothing asking rich to draw for a terminal anyway."""
    return piped(StreamOf(name)) and not any(env.get(key) for key in _LOOKS_LIKE_A_TERMINAL)
