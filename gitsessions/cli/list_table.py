"""`list` on a terminal: one line per session, whatever the width, the title first.

Invariant: every row is one line of at most the console's width. The title (else the
summary, else the first prompt) takes what the other columns leave and is cut with an
ellipsis; the workspace is cut at its start (`…/project`, its last folders are what tell
it apart), to as little as `MIN_WORKSPACE` columns while the title is cut; when even
that leaves the title under `MIN_TITLE` columns, the workspace goes, then the parent,
then the time. Every string is shown through `one_line`.
"""

import os
import socket
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.cells import cell_len
from rich.console import Console
from rich.table import Table

from gitsessions.cli import listing
from gitsessions.cli.plain import one_line
from gitsessions.values.ids import short

MIN_TITLE = 16
MAX_WORKSPACE = 32
MIN_WORKSPACE = 16
GAP = 2  # between two columns (rich's padding of one on each side)
DROPPED_FIRST = ("workspace", "parent", "active")


def _workspace(path: str | None, home: str) -> str:
    """The path with `~` for the home folder, on one line."""
    if not path:
        return ""
    if home and (path == home or path.startswith(home.rstrip("/") + "/")):
        path = "~" + path[len(home.rstrip("/")) :]
    return one_line(path)


def _by(row: dict[str, Any]) -> str:
    """`by alice@laptop` for a session someone else made, or on another machine."""
    made = row.get("made_by")
    if not made:
        return ""
    me = f"{os.environ.get('USER') or os.environ.get('LOGNAME') or ''}@{socket.gethostname()}"
    return "" if made == me else f"by {made}"


def _cut_start(text: str, width: int) -> str:
    """`text` in `width` columns, cut at its start (`…/project`)."""
    return text if len(text) <= width else "…" + text[-(width - 1) :]


def _cells(depth: int, row: dict[str, Any], home: str) -> dict[str, str]:
    title = listing.label(row) + listing.marks(row)
    return {
        "title": ("  " * (depth - 1) + "└ " if depth else "") + one_line(title),
        "id": short(row["id"]),
        "msgs": f"{row['messages']:,}",
        "active": one_line((row["active_at"] or "")[:16].replace("T", " ")),
        "parent": one_line(" · ".join(filter(None, (listing.origin(row), _by(row))))),
        "workspace": _workspace(row["workspace"], home),
    }


def table(rows: Sequence[tuple[int, dict[str, Any]]], width: int) -> Table:
    """The rows (`(depth, row)`, as `listing.as_tree` gives them) as a table of one line
    per session that fits `width` columns."""
    home = str(Path.home())
    cells = [_cells(depth, row, home) for depth, row in rows]
    names = ["title", "id", "msgs", "active", "parent", "workspace"]
    widths = {n: max([cell_len(n)] + [cell_len(c[n]) for c in cells]) for n in names}
    for n in ("parent", "workspace"):
        if not any(c[n] for c in cells):
            names.remove(n)  # an empty column takes no room

    def room() -> int:
        others = [n for n in names if n != "title"]
        return width - sum(widths[n] for n in others) - GAP * len(others)

    if "workspace" in names:  # the title before the workspace, down to MIN_WORKSPACE
        wanted = min(widths["workspace"], MAX_WORKSPACE)
        short_of = widths["title"] - (room() + widths["workspace"] - wanted)
        widths["workspace"] = max(MIN_WORKSPACE, wanted - max(0, short_of))
        widths["workspace"] = min(widths["workspace"], max(cell_len(c["workspace"]) for c in cells))
        for c in cells:
            c["workspace"] = _cut_start(c["workspace"], widths["workspace"])
    for dropped in DROPPED_FIRST:
        if room() >= min(MIN_TITLE, widths["title"]):
            break
        if dropped in names:
            names.remove(dropped)
    title_width = max(1, min(widths["title"], room()))
    grid = Table(box=None, pad_edge=False, show_edge=False)
    for n in names:
        grid.add_column(
            n,
            width=title_width if n == "title" else widths[n],
            no_wrap=True,
            overflow="ellipsis",
            justify="right" if n == "msgs" else "left",
        )
    for c in cells:
        grid.add_row(*(c[n] for n in names))
    return grid


def show(console: Console, rows: Sequence[tuple[int, dict[str, Any]]]) -> None:
    """Print the rows on the terminal, one line each."""
    console.print(table(rows, console.width), markup=False, highlight=False, crop=True)
