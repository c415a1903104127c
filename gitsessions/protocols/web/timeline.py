"""The context timeline: tokens per turn as the model server counted them (each reply's
`usage.prompt_tokens`: the context it was sent, the largest of a turn's replies), and each
compaction a drop from its before count to its after count, drawn as inline SVG.

Invariants: it reads the transcript records it is given (a bounded sample) and the
compaction records (`compactions.json`, one small file), nothing else; a compaction is
placed by its time among the turns' (both UTC ISO times), compaction N being record
N (as `show --compaction N` numbers them); every label passes `e`.
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gitsessions.protocols.web.markup import e, href

if TYPE_CHECKING:
    from gitsessions.store.sessions import Head, SessionStore

WIDTH, HEIGHT, LEFT, RIGHT, TOP, BOTTOM = 960, 240, 64, 16, 16, 28
DOTS = 300  # at most this many turns get a dot of their own (a link); the line has all


@dataclass
class Point:
    turn: int
    tokens: int
    time: str


@dataclass
class Drop:
    number: int  # compaction N
    before: int
    after: int
    time: str
    at: int  # how many points come before it


def _key(time: object, end: bool = False) -> str:
    """A UTC ISO time comparable as text, with or without milliseconds (a time in
    seconds taken as the start of its second, or with `end` its end: a compaction,
    recorded in seconds, comes after the replies of its second)."""
    text = str(time or "").rstrip("Z")
    return text if "." in text else text + (".999" if end else ".000")


def points(records: Iterable[tuple[int, Mapping[str, Any]]]) -> list[Point]:
    """Per turn, the largest context a reply of it was sent (`usage.prompt_tokens`)."""
    found: dict[int, Point] = {}
    for _index, record in records:
        usage = record.get("usage")
        turn = record.get("turn")
        if not isinstance(usage, Mapping) or not isinstance(turn, int):
            continue
        tokens = usage.get("prompt_tokens")
        if not isinstance(tokens, int) or isinstance(tokens, bool) or tokens < 0:
            continue
        point = found.get(turn)
        if point is None:
            found[turn] = Point(turn, tokens, _key(record.get("time")))
        elif tokens > point.tokens:
            point.tokens = tokens
    return sorted(found.values(), key=lambda p: (p.time, p.turn))


def drops(compactions: list[Any], shown: list[Point]) -> list[Drop]:
    """Every compaction with a before and after count, with how many of the points come
    before it."""
    out = []
    for n, record in enumerate(compactions, start=1):
        if not isinstance(record, Mapping):
            continue
        before, after = record.get("before_tokens"), record.get("after_tokens")
        if not isinstance(before, int) or not isinstance(after, int):
            continue
        time = _key(record.get("time"), end=True)
        out.append(Drop(n, before, after, time, sum(1 for p in shown if p.time <= time)))
    return out


def svg(session: str, shown: list[Point], falls: list[Drop], links: bool = True) -> str:
    """The timeline as an <svg> element (empty string when there is nothing to draw)."""
    if not shown and not falls:
        return ""
    top = max([p.tokens for p in shown] + [d.before for d in falls] + [1])
    slots = len(shown) + len(falls)
    step = (WIDTH - LEFT - RIGHT) / max(slots, 1)

    def y(tokens: int) -> float:
        return round(TOP + (HEIGHT - TOP - BOTTOM) * (1 - tokens / top), 1)

    xs: list[float] = []
    drop_x: dict[int, float] = {}
    slot = 0
    by_at: dict[int, list[Drop]] = {}
    for drop in falls:
        by_at.setdefault(drop.at, []).append(drop)
    for i in range(len(shown) + 1):
        for drop in by_at.get(i, []):
            drop_x[drop.number] = round(LEFT + step * (slot + 0.5), 1)
            slot += 1
        if i < len(shown):
            xs.append(round(LEFT + step * (slot + 0.5), 1))
            slot += 1
    path: list[str] = []
    for i in range(len(shown) + 1):
        for drop in by_at.get(i, []):
            x = drop_x[drop.number]
            path += [f"{x},{y(drop.before)}", f"{x},{y(drop.after)}"]
        if i < len(shown):
            path.append(f"{xs[i]},{y(shown[i].tokens)}")
    parts = [
        f'<svg class="timeline" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" '
        f'height="{HEIGHT}" role="img" xmlns="http://www.w3.org/2000/svg">',
        f"<title>context tokens per turn of session {e(session[:8])}</title>",
        f'<line class="axis" x1="{LEFT}" y1="{HEIGHT - BOTTOM}" x2="{WIDTH - RIGHT}" '
        f'y2="{HEIGHT - BOTTOM}"/>',
        f'<line class="axis" x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{HEIGHT - BOTTOM}"/>',
        f'<text class="label" x="{LEFT - 6}" y="{TOP + 4}" text-anchor="end">{top:,}</text>',
        f'<text class="label" x="{LEFT - 6}" y="{HEIGHT - BOTTOM}" text-anchor="end">0</text>',
    ]
    if shown:
        parts.append(
            f'<text class="label" x="{LEFT}" y="{HEIGHT - 8}">turn {shown[0].turn:,}</text>'
            f'<text class="label" x="{WIDTH - RIGHT}" y="{HEIGHT - 8}" text-anchor="end">'
            f"turn {shown[-1].turn:,}</text>"
        )
    if len(path) > 1:
        parts.append(f'<polyline class="tokens" points="{" ".join(path)}"/>')
    if len(shown) <= DOTS:
        for x, point in zip(xs, shown, strict=True):
            dot = (
                f'<circle class="dot" cx="{x}" cy="{y(point.tokens)}" r="3">'
                f"<title>turn {point.turn:,}: {point.tokens:,} tokens</title></circle>"
            )
            target = href(f"/s/{session}/turn/{point.turn}")
            parts.append(f'<a href="{target}">{dot}</a>' if links else dot)
    for drop in falls:
        x = drop_x[drop.number]
        words = f"compaction {drop.number}: {drop.before:,} → {drop.after:,} tokens"
        mark = (
            f'<g class="drop"><line x1="{x}" y1="{y(drop.before)}" x2="{x}" '
            f'y2="{y(drop.after)}"/><circle cx="{x}" cy="{y(drop.after)}" r="4"/>'
            f'<text class="label" x="{x + 5}" y="{max(y(drop.before), TOP + 10)}">'
            f"{drop.before:,} → {drop.after:,}</text><title>{e(words)}</title></g>"
        )
        target = href(f"/s/{session}/compaction/{drop.number}")
        parts.append(f'<a href="{target}">{mark}</a>' if links else mark)
    parts.append("</svg>")
    return "".join(parts)


def chart(
    store: "SessionStore",
    head: "Head",
    records: Iterable[tuple[int, Mapping[str, Any]]],
    links: bool,
) -> tuple[str, int]:
    """The session's timeline drawn from `records` (all of them, or a sample) and its
    compactions: (the SVG, "" when no reply says its context; how many turns it shows)."""
    shown = points(records)
    falls = drops(store.read(head, "compactions"), shown)
    return svg(head.id, shown, falls, links), len(shown)
