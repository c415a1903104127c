"""The only way text reaches the terminal: consoles that show every string visible-safe.

Invariant: no character `values.visible.visible` would escape ever leaves
`VisibleConsole` as content, whatever renderable carried it (Live displays included);
only rich's own styling and cursor control are written raw.
`tests/test_terminal_safety.py` checks every CLI module writes through these consoles
(or `write_json`). Call sites still pass data through `visible()`/`vtext()` first (so a
`\\r` shows instead of being dropped, and columns measure what shows); the console is
the backstop.
"""

import contextlib
from collections.abc import Iterable, Iterator
from typing import Any

from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment
from rich.status import Status
from rich.text import Text

from gitsessions.values.visible import visible


class VisibleConsole(Console):
    """A rich Console whose rendered content is always passed through `visible`, and
    whose emoji codes are off unless asked for (a `:x:` in a title prints as itself)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("emoji", False)
        super().__init__(*args, **kwargs)

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


@contextlib.contextmanager
def spinning(console: Console, text: RenderableType) -> Iterator[Status | None]:
    """A spinner saying `text` (a string or a renderable) while the block runs, on a
    terminal (into a pipe nothing: None). Unlike `with console.status(...)`, a Ctrl-C
    that lands while the spinner starts still stops it: `with` calls no `__exit__` when
    `__enter__` is interrupted, and rich's refresh thread, already running, would go on
    drawing the spinner over everything that follows."""
    if not console.is_terminal:
        yield None
        return
    status = Status(text, console=console, spinner="dots")
    try:
        status.start()
        yield status
    finally:
        status.stop()
