"""Sessions of an older format read as this build's: each difference between two formats
is one step of `STEPS`, applied in order (as llm's migrations).

Invariants:
- `STEPS[n - 1]` turns format n into n + 1; a new format appends a step, a step is
  never edited; the rest of the store reads only `FORMAT`.
- Nothing stored is rewritten: steps give values and trees in memory, and the session's
  next commit writes them whole as `FORMAT`; older commits stay (fork points name them).
- Lazy: a file is upgraded when read; a chunk's blob outlives its format, so its lines
  are upgraded by their shape wherever read (`record`).
"""

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from dulwich.objects import Tree

from gitsessions.store import chunks, context_refs
from gitsessions.store.errors import StoreCorrupt
from gitsessions.store.formats import wrap

INLINE = "context-inline.json"
_V1_SEGMENT = re.compile(rb"([0-9]{6})\.jsonl")  # 256 messages each: 000003 holds 768-1023


@dataclass(frozen=True)
class Older:
    """One commit's files as its own format holds them (`SessionReader` makes one)."""

    json: Callable[[str], Any]  # a file of the tree as JSON; None when absent
    messages: Callable[[], list[dict[str, Any]]]  # the transcript's messages
    where: str  # what an error names: "session 1234abcd"


@dataclass(frozen=True)
class Step:
    """What a commit of format `source` holds, as format `source + 1` reads it."""

    source: int
    file: Callable[[Older, str], Any]  # the newer format's file `name` (session.json too)
    transcript: Callable[[chunks.Get, bytes], list[Tree]]  # its trees, new top last
    line: Callable[[Any], Any]  # one transcript line


def v1_to_v2_file(older: Older, name: str) -> Any:
    """Format 1's files as format 2 holds them: the header with the usage of `usage.json`
    and an `active_at` (format 1's `updated_at` stood for both); the JSON files wrapped
    with their format; the context (a list of messages) by reference to the transcript
    lines that hold its messages, the rest inline."""
    value = older.json(name)
    if name == "session.json":
        usage = older.json("usage.json")
        return {**value, "active_at": value.get("updated_at")} | (
            {} if usage is None else {"usage": usage}
        )
    if name in ("context.json", INLINE):
        context = older.json("context.json")
        if context is None:
            return None
        if not isinstance(context, list):
            raise StoreCorrupt(f"context.json of {older.where}: not a list")
        lines = [(context_refs.key(m), i) for i, m in enumerate(older.messages())]
        found = context_refs.match(context, lines)
        items, inline = context_refs.encode(context, [ref for _key, ref in found])
        return wrap("context", items) if name == "context.json" else wrap("inline", inline)
    if name in ("plan.json", "pins.json", "compactions.json") and value is not None:
        return wrap(name.removesuffix(".json"), value)
    return value


def v1_to_v2_transcript(get: chunks.Get, top: bytes) -> list[Tree]:
    """Format 1's flat segments of 256 messages filed as format 2's chunks (their blobs
    as they are: the last, partial segment stays a chunk)."""
    tree = get(top)
    if not isinstance(tree, Tree):
        raise StoreCorrupt(f"transcript: {top.decode()[:12]} is not a directory")
    found: list[tuple[int, bytes]] = []
    for item in tree.items():
        if (match := _V1_SEGMENT.fullmatch(item.path)) is None:
            raise StoreCorrupt(f"transcript: unexpected entry {item.path!r}")
        found.append((int(match.group(1)) * 256, item.sha))
    return chunks.build(sorted(found)) if found else []


def v1_to_v2_line(line: Any) -> Any:
    """A format-1 line, the bare message, as format 2's record (with no time)."""
    if isinstance(line, dict) and isinstance(line.get("role"), str):
        return line if isinstance(line.get("message"), dict) else {"message": line}
    return line


STEPS = (Step(1, v1_to_v2_file, v1_to_v2_transcript, v1_to_v2_line),)


def file(older: Older, version: int, name: str) -> Any:
    """File `name` of a commit of format `version`, as this build's format holds it."""
    for step in STEPS[version - 1 :]:
        older = Older(partial(step.file, older), older.messages, older.where)
    return older.json(name)


def transcript(get: chunks.Get, top: bytes, version: int) -> list[Tree]:
    """The trees (made in memory, the new top last) that file the transcript `top` of a
    commit of format `version` as this build's format does; none when it needs none."""
    out: list[Tree] = []
    for step in STEPS[version - 1 :]:
        made = chunks.overlay({tree.id: tree for tree in out}, get)
        out += step.transcript(made, out[-1].id if out else top)
    return out


def record(line: Any) -> Any:
    """A transcript line of any format as this build's record reads it (checked by the
    caller): every step applies, as a line does not say which format wrote it."""
    for step in STEPS:
        line = step.line(line)
    return line
