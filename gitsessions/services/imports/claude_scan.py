"""The first pass over a Claude Code session file: its identity and metadata, and the paths
of its tree (`claude_chain`) that become sessions. Chained lines name `parentUuid`; a
compaction is a `compact_boundary` line followed by an `isCompactSummary` user line
(1.0.x: no boundary); a `summary` line names its `leafUuid`, maybe in another file.

Invariants:
- One read, a line at a time; memory holds the index, never a line's content.
- The main path runs from the newest line not on a side chain back to its root; every
  other branch with content is a path (`branches`), and so is each side chain.
- A read from an offset keeps a line whose parent is `anchor` unjoined: the new lines
  continue there.
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gitsessions.services.imports.claude_chain import (
    ANSWER,
    ASSISTANT,
    CONTENT,
    SIDE,
    Branch,
    Index,
    answers,
    branches,
    close,
    has_content,
    left_over,
    newest,
    union,
    walk,
)
from gitsessions.services.imports.lines import Tally, read_objects

CHAINED = ("user", "assistant", "system")
METADATA = (
    "summary",
    "custom-title",
    "ai-title",
    "file-history-snapshot",
    "queue-operation",
    "progress",
    "last-prompt",
    "tag",
    "agent-name",
    "attachment",
    "permission-mode",
    "pr-link",
    "teleported-from",
)
NO_LINE = ""  # a parent no line has: joined to the line before (`Index.repair`)
SUMMARY_PROBE = 200  # bytes of a line looked at for `"type":"summary"` before decoding


@dataclass
class Scan:
    """What the first pass found (see the module's invariants)."""

    tally: Tally
    index: Index = field(default_factory=Index)
    chain: bytearray = field(default_factory=bytearray)  # the main path, by line number
    branches: list[Branch] = field(default_factory=list)  # newest first
    side_chains: list[tuple[str, bytearray]] = field(default_factory=list)  # root, path
    session_id: str | None = None
    agent_id: str | None = None
    cwd: str | None = None
    branch: str | None = None
    version: str | None = None
    title: str | None = None
    custom_title: bool = False  # `title` is one the user set (not Claude Code's own)
    summaries: dict[str, str] = field(default_factory=dict)  # leafUuid -> summary, this file's
    forked_from: str | None = None
    first_time: str | None = None
    last_time: str | None = None
    broken_at: int | None = None  # a read from an offset: the main path's first line
    sidechain: bool = False  # every chained line is on a side chain (a subagent's file)
    leaf: str | None = None  # the main path's newest line
    offset: int = 0  # where the read started, and the lines before it
    line: int = 0
    end: int = 0  # where it stopped: the end of the last whole line


def scan(path: Path, offset: int = 0, line: int = 0, anchor: str | None = None) -> Scan:
    """The first pass (see the module's invariants); from `offset` (the start of line
    `line + 1`) on, for a read that goes on from the last import's, whose last line on
    the main path was `anchor`."""
    tally = Tally()
    result = Scan(tally, offset=offset, line=line)
    index = result.index
    leaf: str | None = None  # the newest main line that is not only tool results
    side_leaf: str | None = None
    side_any: str | None = None
    for number, obj in read_objects(path, tally, offset=offset, line=line):
        kind = obj.get("type")
        uuid = obj.get("uuid")
        if kind not in CHAINED and kind not in METADATA:
            tally.unknown[str(kind)[:60]] += 1
        _metadata(result, obj)
        if not isinstance(uuid, str):
            continue
        side = obj.get("isSidechain") is True
        parent = obj.get("parentUuid")
        if parent is None and obj.get("subtype") == "compact_boundary":
            parent = obj.get("logicalParentUuid")
            parent = parent if isinstance(parent, str) else NO_LINE
        elif parent is None and obj.get("isCompactSummary") is True and not side:
            parent = leaf  # 1.0.x: no boundary line; the summary follows the path so far
        flags = SIDE if side else 0
        answer = kind == "user" and answers(obj)
        flags |= ANSWER if answer else 0
        if (kind in CHAINED and has_content(obj)) or obj.get("isCompactSummary") is True:
            flags |= CONTENT
        message = obj.get("message")
        if kind == "assistant":
            flags |= ASSISTANT
        mid = message.get("id") if kind == "assistant" and isinstance(message, dict) else None
        index.add(uuid, parent if isinstance(parent, str) else None, number, flags, mid)
        if kind in CHAINED:
            side_any = uuid if side else side_any
            if not answer and side:
                side_leaf = uuid
            elif not answer:
                leaf = uuid
    result.end = offset + tally.bytes
    index.repair(keep=anchor)
    lines = tally.lines
    result.sidechain = leaf is None and side_any is not None
    start = (side_leaf or side_any) if result.sidechain else leaf
    result.chain, result.broken_at = walk(start, index, lines, result.sidechain)
    close(result.chain, index, result.sidechain)
    result.leaf = newest(result.chain, index) or start
    result.branches = list(branches(result.chain, index, lines, result.sidechain))
    covered = result.chain
    for one in result.branches:
        covered = union(covered, one.path)
    if not result.sidechain:  # a main file's side chains (older versions): forks
        empty = bytearray(lines + 1)
        for one in branches(empty, index, lines, True):
            root = index.uuid_at(one.path.find(1)) or one.tip
            result.side_chains.append((root, one.path))
            covered = union(covered, one.path)
        result.side_chains.sort(key=lambda pair: pair[1].find(1))
    off = left_over(covered, index)
    if off > 0:
        tally.ignored["lines of a branch over the forks made (kept in the source)"] += off
    return result


def _metadata(result: Scan, obj: dict[str, Any]) -> None:
    kind = obj.get("type")
    if kind == "custom-title" and isinstance(obj.get("customTitle"), str):
        result.title = obj["customTitle"]
        result.custom_title = True
    elif kind == "ai-title" and isinstance(obj.get("aiTitle"), str) and not result.custom_title:
        result.title = obj["aiTitle"]  # the one the user set wins
    elif kind == "summary":
        _summary(result.summaries, obj)
    if kind not in CHAINED:
        return
    for key, attr in (("sessionId", "session_id"), ("agentId", "agent_id"), ("cwd", "cwd")):
        if getattr(result, attr) is None and isinstance(obj.get(key), str):
            setattr(result, attr, obj[key])
    if isinstance(obj.get("gitBranch"), str):
        result.branch = obj["gitBranch"]
    if isinstance(obj.get("version"), str):
        result.version = obj["version"]
    forked = obj.get("forkedFrom")
    if result.forked_from is None and forked:
        session = forked.get("sessionId") if isinstance(forked, dict) else forked
        if isinstance(session, str):
            result.forked_from = session
    stamp = obj.get("timestamp")
    if isinstance(stamp, str):
        result.first_time = result.first_time or stamp
        result.last_time = stamp


def _summary(into: dict[str, str], obj: dict[str, Any]) -> None:
    if isinstance(obj.get("summary"), str) and isinstance(obj.get("leafUuid"), str):
        into[obj["leafUuid"]] = obj["summary"]


def summaries_in(paths: Iterable[Path]) -> dict[str, str]:
    """Every `summary` line of `paths`: leafUuid -> summary (a later line wins). Only
    lines that begin as a summary line are decoded."""
    found: dict[str, str] = {}
    for path in paths:
        try:
            for _n, obj in read_objects(path, wanted=_may_be_summary):
                if obj.get("type") == "summary":
                    _summary(found, obj)
        except OSError:
            continue  # said when the file itself is imported
    return found


def _may_be_summary(_number: int, raw: bytes) -> bool:
    return b'"summary"' in raw[:SUMMARY_PROBE]


def summary_of(path: bytearray, index: Index, summaries: Mapping[str, str]) -> str | None:
    """The summary of the newest line of `path` that a summary names, if any."""
    best, at = None, -1
    for leaf, text in summaries.items():
        found = index.parents.get(leaf)
        if found is not None and found[1] < len(path) and path[found[1]] and found[1] > at:
            best, at = text, found[1]
    return best
