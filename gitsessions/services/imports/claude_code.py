"""Claude Code's session files (`~/.claude/projects/<project>/<session>.jsonl`) as the
sources `mirror.py` imports: one for each path of the file's tree (`claude_scan`).

Invariants:
- The main path is the session the file names; each other branch with content is a fork
  of it (`fork_of`, its fork point found in the store where the main import ended a
  commit at the branch's line, `cuts`), named `<session id>/branch/<newest uuid>`; side
  chains and a subagent's file are sessions of their own, forks with no fork point.
- A `summary` line sums up the session whose path holds its `leafUuid`, in whichever file.
- A file imported before is read on from where it stopped (`resumed`) only when its new
  lines continue the main path and make no branch; else it is read whole.
"""

import hashlib
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from gitsessions.services.imports.assemble import Assembler
from gitsessions.services.imports.claude_chain import main_path, off_path
from gitsessions.services.imports.claude_items import items
from gitsessions.services.imports.claude_scan import CHAINED, Scan, scan, summary_of
from gitsessions.services.imports.lines import (
    Tally,
    extended_sha256,
    offset_of_line,
    read_objects,
    resume_point,
)
from gitsessions.services.imports.source import Source

NAME = "claude-code"
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def session_key(found: Scan, path: Path) -> str:
    """The source's own id of the session: its file's name (`<session id>.jsonl`), else
    its `sessionId`; a subagent's: its main session's `sessionId` and its `agentId`."""
    base = found.session_id or path.stem
    if found.sidechain:  # a subagent's file: its lines carry the main session's id
        return f"{base}/{found.agent_id or path.stem}"
    return _main_key(base, path)


def _main_key(session_id: str, path: Path) -> str:
    """A main file's session id: the file's name when it is a session id (a file of a
    session resumed in 1.0.x begins with lines copied from the session it resumed,
    whose `sessionId` they keep), else its lines' `sessionId`."""
    return path.stem if _UUID.fullmatch(path.stem) else session_id


def derived_id(source_id: str) -> str:
    """The store's id of a source session: always the same for the same source id."""
    return hashlib.sha256(f"{NAME}\0{source_id}".encode()).hexdigest()[:32]


def _main(
    found: Scan, path: Path, exists: Callable[[str], bool], summaries: Mapping[str, str]
) -> Source:
    key = session_key(found, path)
    parent = None
    if found.forked_from:
        parent = derived_id(found.forked_from)
        parent = parent if exists(parent) else None
    extra: dict[str, Any] = {"version": found.version}
    if found.forked_from:
        extra["forked_from"] = found.forked_from
    if found.sidechain:
        extra["side_chain_of"] = found.session_id
        parent = derived_id(found.session_id) if found.session_id else None
        parent = parent if parent and exists(parent) else None
    tally = found.tally
    tally.joined = found.index.joined
    return Source(
        format=NAME,
        path=path,
        source_id=key,
        session_id=derived_id(key),
        tally=tally,
        items=lambda: items(path, found.chain, tally),
        title=found.title,
        summary=summary_of(found.chain, found.index, summaries),
        cwd=found.cwd,
        branch=found.branch,
        first_time=found.first_time,
        last_time=found.last_time,
        parent=parent,
        extra=extra,
        resume_point=_resume_point(path, found, None),
        cuts=sorted(b.fork_line for b in found.branches if b.fork_line is not None),
    )


def _resume_point(
    path: Path, found: Scan, previous: dict[str, Any] | None
) -> Callable[[Assembler], dict[str, Any] | None]:
    """Where the next import may start reading (`imported.resume`): the first line held
    back (else the end), the main path's line before it, the turn and step there; None
    when the assembler holds state no line records (reasoning carried to a later reply)."""

    def point(assembler: Assembler) -> dict[str, Any] | None:
        if assembler.carried:
            return None
        held = assembler.held
        sidechain = found.sidechain
        if found.leaf is None and previous is not None:  # no new line on the path
            sidechain = previous["sidechain"]
        if held is None:
            offset, line = found.end, found.tally.lines
            uuid = found.leaf or (previous["uuid"] if previous else None)
        else:
            offset = offset_of_line(path, held, offset=found.offset, line=found.line)
            line = held - 1
            at = found.index.uuid_at(held)  # the line held back: the one before it
            uuid = found.index.parents[at][0] if at is not None else None
        if uuid is None:
            return None
        return {
            "offset": offset,
            "line": line,
            "uuid": uuid,
            "turn": assembler.turn,
            "step": assembler.step,
            "sidechain": sidechain,
        }

    return point


def resumed(
    path: Path,
    header_of: Callable[[str], dict[str, Any] | None],
    summaries: Mapping[str, str],
) -> Source | None:
    """The source read on from where its last import stopped (`imported.resume`), when
    the file still begins as it was read and its new lines only continue the main path
    there; None otherwise (the whole file is read, and what changed reported)."""
    probe = next((o for _n, o in read_objects(path) if o.get("type") in CHAINED), None)
    if probe is None or not isinstance(probe.get("sessionId"), str):
        return None
    key = probe["sessionId"]
    if probe.get("isSidechain") is True:
        agent = probe.get("agentId")
        key = f"{key}/{agent if isinstance(agent, str) else path.stem}"
    else:
        key = _main_key(key, path)
    point = resume_point(header_of(derived_id(key)), NAME, key, path)
    if point is None:
        return None
    done, resume, digest = point
    found = scan(path, resume["offset"], resume["line"], anchor=resume["uuid"])
    if found.side_chains or found.branches or found.index.joined:
        return None  # not a plain continuation: read it whole
    if any(leaf not in found.index.parents for leaf in found.summaries):
        return None  # a summary of an earlier line: whose it is, the whole file says
    if found.leaf is not None:
        if found.sidechain != resume["sidechain"] or found.broken_at is None:
            return None  # a new root: not a continuation
        cut = found.index.parents[found.index.uuid_at(found.broken_at) or ""][0]
        if cut != resume["uuid"]:
            return None  # a branch from an earlier line: read it whole (it diverged)
    tally = found.tally
    tally.bytes = found.end
    tally.sha256 = extended_sha256(path, digest, int(done["bytes"]), found.end)
    extra = {k: done[k] for k in ("version", "forked_from", "side_chain_of") if k in done}
    if found.version:
        extra["version"] = found.version
    return Source(
        format=NAME,
        path=path,
        source_id=key,
        session_id=derived_id(key),
        tally=tally,
        items=lambda: items(path, found.chain, tally, resume["offset"], resume["line"]),
        title=found.title or done.get("title"),
        summary=summary_of(found.chain, found.index, summaries) or done.get("summary"),
        cwd=found.cwd or done.get("cwd"),
        branch=found.branch,
        last_time=found.last_time,
        extra=extra,
        start={
            "outputs": int(done.get("outputs", 0)),
            "digest": str(done.get("digest")),
            "turn": resume["turn"],
            "step": resume["step"],
            "line": resume["line"],
        },
        resume_point=_resume_point(path, found, resume),
    )


def sources(
    path: Path,
    exists: Callable[[str], bool],
    header_of: Callable[[str], dict[str, Any] | None] | None = None,
    summaries: Mapping[str, str] | None = None,
) -> list[Source]:
    """The sources of one file (see the module's invariants): its main path, then its
    side chains, then its branches. `summaries` (leafUuid -> summary) are those of the
    file's whole directory (`claude_scan.summaries_in`); the file's own are added. With
    `header_of` (a store id -> its header), a file imported before is read from where
    that import stopped, if it can be (`resumed`)."""
    known = dict(summaries or {})
    if header_of is not None:
        again = resumed(path, header_of, known)
        if again is not None:
            return [again]
    found = scan(path)
    known.update(found.summaries)
    main = _main(found, path, exists, known)
    out = [main]
    for root, chain in found.side_chains:
        key = f"{main.source_id}/side/{root}"
        out.append(_part(found, path, main, key, chain, known, side_chain_of=main.source_id))
        out[-1].parent = main.session_id
    main.moved = lambda header: _moved(found, path, main, known, header)
    for one in found.branches:
        key = f"{main.source_id}/branch/{one.first}"
        out.append(_part(found, path, main, key, one.path, known, branch_of=main.source_id))
        if one.fork_line is not None:
            out[-1].fork_of = main.session_id
            out[-1].fork_line, out[-1].snapshots = one.fork_line, main.snapshots
        else:  # it shares no line with the main path: a session of its own beside it
            out[-1].parent = main.session_id
    return out


def _moved(
    found: Scan, path: Path, main: Source, summaries: Mapping[str, str], header: Mapping[str, Any]
) -> Source | None:
    """The main path as a branch of its session, when that session holds another path
    of the file (a prompt edited or rewound since its last import: `imported.resume`
    names the line it ended on); None when it holds none the file still has."""
    resume = (header.get("imported") or {}).get("resume")
    ended = resume.get("uuid") if isinstance(resume, dict) else None
    if not isinstance(ended, str) or ended not in found.index.parents:
        return None
    old = main_path(ended, found.index, found.tally.lines, found.sidechain)
    first = found.index.uuid_at(off_path(found.chain, old))
    if first is None:
        return None
    key = f"{main.source_id}/branch/{first}"
    moved = _part(found, path, main, key, found.chain, summaries, branch_of=main.source_id)
    moved.fork_of = main.session_id
    return moved


def _part(
    found: Scan,
    path: Path,
    main: Source,
    key: str,
    chain: bytearray,
    summaries: Mapping[str, str],
    **extra: Any,
) -> Source:
    """A source for a path of the file other than its main one."""
    whole = found.tally  # its damage and cut last line are said once, with the main path's
    tally = Tally(
        lines=whole.lines, bytes=whole.bytes, sha256=whole.sha256, partial_tail=whole.partial_tail
    )
    return Source(
        format=NAME,
        path=path,
        source_id=key,
        session_id=derived_id(key),
        tally=tally,
        items=lambda: items(path, chain, tally),
        items_after=lambda line: items(path, chain, tally, after=line),
        summary=summary_of(chain, found.index, summaries),
        cwd=main.cwd,
        branch=main.branch,
        first_time=main.first_time,
        last_time=main.last_time,
        extra={"version": found.version, **extra},
    )
