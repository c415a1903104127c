"""Which lines of a file: `FILE:LINE` and `git blame -L` ranges, parsed once for the
CLI's `blame` and the chat's `\\blame` (pure: no I/O).

Invariants: `NAME:N` is NAME and line N unless a file named the whole argument exists;
ranges take git's forms (`A,B`, `A,+N`, `A,-N`, `A`, `,B`), a backwards one turned
round as git does, anything else one `BadUsage` line naming the forms; a start past the
end is a `BadUsage` ("F has N lines: no line M"), an end past it stops at the last line.
"""

import re
from collections.abc import Callable

from gitsessions.values.errors import BadUsage

FORMS = "A,B, A,+N, A,-N, A or ,B (line numbers from 1)"
_RANGE = re.compile(r"(\d*)(?:,([+-]?)(\d+))?")

LineRange = tuple[int, int | None]  # first and last line, 1-based; None: to the end


def split_file(arg: str, exists: Callable[[str], bool]) -> tuple[str, LineRange | None]:
    """`FILE:LINE` -> (FILE, (LINE, LINE)); a file that exists by the whole name wins."""
    name, colon, number = arg.rpartition(":")
    if colon and name and number.isdigit() and not exists(arg):
        line = int(number)
        if line < 1:
            raise BadUsage(f"{arg}: lines are numbered from 1")
        return name, (line, line)
    return arg, None


def parse_range(spec: str) -> LineRange:
    """git's `-L` range `spec` as (first, last)."""
    found = _RANGE.fullmatch(spec.strip())
    if not spec.strip() or found is None:
        raise BadUsage(f"-L {spec!r}: not a line range; the forms are {FORMS}")
    start, sign, end = found.group(1), found.group(2), found.group(3)
    if not start and (end is None or sign):
        raise BadUsage(f"-L {spec!r}: not a line range; the forms are {FORMS}")
    first = int(start) if start else 1
    if first < 1 or (end is not None and int(end) < 1):
        raise BadUsage(f"-L {spec!r}: lines are numbered from 1")
    if end is None:
        return first, None
    count = int(end)
    if sign == "+":
        return first, first + count - 1
    if sign == "-":
        return max(1, first - count + 1), first
    return (first, count) if count >= first else (count, first)


def lines_of(chosen: LineRange, total: int, path: str) -> range:
    """The 1-based line numbers of `chosen` in a file of `total` lines."""
    first, last = chosen
    if first > total:
        raise BadUsage(f"{path} has {total} lines: no line {first}")
    return range(first, min(last or total, total) + 1)
