"""Lines wider than the terminal wrapped under their gutter (a hanging indent), so an
approval's diff keeps its `+`/`-` and its numbers' column, and a command its indent,
where the terminal would have wrapped them to column 0.

A line's gutter is what comes before its content: its indent, and a diff row's number
and sign (`  12 + `), a command's `$ `, a file line's `| `, a unified diff's `+`/`-`.
Continuation rows repeat the gutter with its number and `$` blanked, in its style. The
content is cut by terminal cells (a wide character is never split), every character
kept: joined again, the rows' contents are the line's. A line whose gutter leaves under
`MIN_ROOM` cells is left to the terminal.
"""

import re

from rich.cells import cell_len, get_character_cell_size
from rich.text import Text

GUTTER = re.compile(r" *(?:\d+ [-+ ] |\$ |\| |[-+](?![-+]))?")
MIN_ROOM = 12


def hanging(text: Text, width: int) -> Text:
    """`text` with each line over `width` cells wrapped under its gutter."""
    wrapped = Text()
    for n, line in enumerate(text.split("\n", allow_blank=True)):
        if n:
            wrapped.append("\n")
        wrapped.append_text(_line(line, width))
    return wrapped


def _line(line: Text, width: int) -> Text:
    if cell_len(line.plain) <= width:
        return line
    match = GUTTER.match(line.plain)
    size = match.end() if match else 0
    room = width - size
    if room < MIN_ROOM:
        return line
    head, body = line.divide([size]) if size else (Text(), line)
    cuts, used = [], 0
    for at, char in enumerate(body.plain):
        cells = get_character_cell_size(char)
        if used + cells > room:
            cuts.append(at)
            used = 0
        used += cells
    style = head.spans[-1].style if head.spans else ""
    blank = Text(re.sub(r"[\d$]", " ", head.plain), style=style)
    rows = Text()
    rows.append_text(head)
    for n, piece in enumerate(body.divide(cuts)):
        if n:
            rows.append("\n")
            rows.append_text(blank.copy())
        rows.append_text(piece)
    return rows
