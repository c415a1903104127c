"""Claude Code's session files (`~/.claude/projects/<project>/<session>.jsonl`) read as
items for `assemble.py`.

Claude Code writes one JSON line per event: chained lines (`user`, `assistant`,
`system`, and any other line with a `uuid`) name their `parentUuid`; an assistant reply
is split over lines sharing `message.id`; tool results are `user` lines of
`tool_result` blocks; a compaction is a `system` line of subtype `compact_boundary`
(`parentUuid` null, `logicalParentUuid` the line before it, `compactMetadata.preTokens`)
followed by a `user` line with `isCompactSummary` (1.0.x: no boundary, the summary
line's `parentUuid` null: it continues the main chain before it). Metadata lines (`summary`,
`custom-title`, `file-history-snapshot`, ...) carry no chat.

Invariants:
- Two passes over the file, each a line at a time: the first indexes every line's
  `uuid` -> `parentUuid` (and reads the metadata), the second maps the lines of the
  active chain: from the newest line not on a side chain back through `parentUuid`, and
  across a compaction by `logicalParentUuid`. Each side chain of a main file (from a
  side-chain line no other names as its parent, back through side-chain lines) and a
  subagent's own file (all side chain) are sessions of their own, forks of the main
  one (`sources`). Lines of an abandoned branch (a prompt edited or retried) are
  counted, not imported.
- `toolUseResult` (the structured copy of a tool's result) is not kept: the
  `tool_result` block is what the model saw.
"""

import hashlib
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gitsessions.services.imports.assemble import (
    Assembler,
    Boundary,
    Item,
    Prompt,
    Reply,
    Result,
    Summary,
    call,
)
from gitsessions.services.imports.claude_chain import answers as is_answer
from gitsessions.services.imports.claude_chain import attach, newest, walk
from gitsessions.services.imports.images import kept
from gitsessions.services.imports.lines import (
    Tally,
    extended_sha256,
    offset_of_line,
    read_objects,
    resume_point,
)
from gitsessions.services.imports.mirror import Source

NAME = "claude-code"
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
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
FINAL_STOPS = ("end_turn", "stop_sequence", "max_tokens", "refusal", "pause_turn")


@dataclass
class Scan:
    """What the first pass found: the session's identity and metadata, and which lines
    make the active chain."""

    tally: Tally
    chain: bytearray = field(default_factory=bytearray)  # 1 at each chain line's number
    session_id: str | None = None
    agent_id: str | None = None
    cwd: str | None = None
    branch: str | None = None
    version: str | None = None
    title: str | None = None
    custom_title: bool = False  # `title` is one the user set (not Claude Code's own)
    summary: str | None = None
    forked_from: str | None = None
    first_time: str | None = None
    last_time: str | None = None
    broken_at: int | None = None  # a chain line whose parent is not in the file
    sidechain: bool = False  # every chained line is on a side chain (a subagent's file)
    side_chains: list[tuple[str, bytearray]] = field(default_factory=list)  # in a main file
    parents: dict[str, tuple[str | None, int]] = field(default_factory=dict)  # uuid -> parent, line
    leaf: str | None = None  # the active chain's newest line
    offset: int = 0  # where the read started, and the lines before it
    line: int = 0
    end: int = 0  # where it stopped: the end of the last whole line


def scan(path: Path, offset: int = 0, line: int = 0) -> Scan:
    """The first pass (see the module's invariants); from `offset` (the start of line
    `line + 1`) on, for a read that goes on from the last import's."""
    tally = Tally()
    result = Scan(tally, offset=offset, line=line)
    parents = result.parents
    leaf: str | None = None
    side: dict[str, None] = {}  # side-chain lines, in file order
    named: set[str] = set()  # the parents side-chain lines name
    answers: set[str] = set()  # lines of tool results only
    for number, obj in read_objects(path, tally, offset=offset, line=line):
        kind = obj.get("type")
        uuid = obj.get("uuid")
        if kind not in CHAINED and kind not in METADATA:
            tally.unknown[str(kind)[:60]] += 1
        _metadata(result, obj)
        if not isinstance(uuid, str):
            continue
        parent = obj.get("parentUuid")
        if parent is None and obj.get("subtype") == "compact_boundary":
            parent = obj.get("logicalParentUuid")
        elif parent is None and obj.get("isCompactSummary") is True and not obj.get("isSidechain"):
            parent = leaf  # 1.0.x: no boundary line; the summary follows the chain so far
        parents[uuid] = (parent if isinstance(parent, str) else None, number)
        answer = kind == "user" and is_answer(obj)
        if answer:
            answers.add(uuid)
        if kind in CHAINED:
            if obj.get("isSidechain") is True:
                side[uuid] = None
                if isinstance(parent, str):
                    named.add(parent)
            elif not answer:
                leaf = uuid
    result.end = offset + tally.bytes
    result.sidechain = leaf is None and bool(side)
    if result.sidechain:
        start = next((u for u in reversed(side) if u not in answers), None)
        start = start or next(reversed(side), None)
    else:
        start = leaf
    result.chain, on_chain, result.broken_at = walk(start, parents, tally.lines, None)
    taken = on_chain + attach(result.chain, answers, parents)
    result.leaf = newest(result.chain, parents) or start
    if not result.sidechain:  # a main file's side chains (older versions): forks
        for tip in (u for u in side if u not in named and u not in answers):
            chain, count, _broken = walk(tip, parents, tally.lines, side)
            root = next((u for u in side if chain[parents[u][1]]), tip)
            result.side_chains.append((root, chain))
            taken += count + attach(chain, answers, parents)
    off = len(parents) - taken
    if off > 0:
        tally.ignored["lines of an abandoned branch (kept in the source)"] += off
    return result


def _metadata(result: Scan, obj: dict[str, Any]) -> None:
    kind = obj.get("type")
    if kind == "custom-title" and isinstance(obj.get("customTitle"), str):
        result.title = obj["customTitle"]
        result.custom_title = True
    elif kind == "ai-title" and isinstance(obj.get("aiTitle"), str) and not result.custom_title:
        result.title = obj["aiTitle"]  # the one the user set wins
    elif kind == "summary" and isinstance(obj.get("summary"), str):
        result.summary = obj["summary"]
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


def items(
    path: Path, chain: bytearray, tally: Tally, offset: int = 0, line: int = 0
) -> Iterator[Item]:
    """The second pass: the lines of `chain` (a bitmap of line numbers) as items, from
    `offset` (the start of line `line + 1`) on."""
    for number, obj in read_objects(path, offset=offset, line=line):
        if number >= len(chain) or not chain[number]:
            continue
        yield from _items(number, obj, tally)


def _items(n: int, obj: dict[str, Any], tally: Tally) -> Iterator[Item]:
    kind = obj.get("type")
    time = obj.get("timestamp") if isinstance(obj.get("timestamp"), str) else None
    message = obj.get("message") if isinstance(obj.get("message"), dict) else {}
    if kind == "system":
        if obj.get("subtype") == "compact_boundary":
            meta = (
                obj.get("compactMetadata") if isinstance(obj.get("compactMetadata"), dict) else {}
            )
            yield Boundary(
                n,
                _int(meta.get("preTokens")),
                str(meta.get("trigger") or "auto"),
                time,
                _int(meta["postTokens"]) if "postTokens" in meta else None,
            )
        else:
            tally.ignored[f"system lines ({obj.get('subtype') or 'no subtype'})"] += 1
        return
    content = message.get("content")
    if kind == "user":
        if obj.get("isCompactSummary"):
            yield Summary(_text(content), n, time)
            return
        injected = obj.get("isMeta") is True  # text Claude Code added, not a prompt typed
        if isinstance(content, str):
            yield Prompt(content, n, time, injected=injected)
            return
        parts: list[dict[str, Any]] = []
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_result" and isinstance(block.get("tool_use_id"), str):
                images: list[dict[str, str]] = []  # filled by _text, kept in the record
                yield Result(
                    block["tool_use_id"], _text(block.get("content"), images), n, time,
                    block.get("is_error") is True, images,
                )  # fmt: skip
            elif block.get("type") == "text" and isinstance(block.get("text"), str):
                parts.append({"type": "text", "text": block["text"]})
            elif block.get("type") == "image":
                parts.append(_image(block))
        if parts:
            only_text = all(p["type"] == "text" for p in parts)
            text = "\n\n".join(p["text"] for p in parts) if only_text else parts
            yield Prompt(text, n, time, injected=injected)
        return
    if kind == "assistant":
        key = message.get("id") if isinstance(message.get("id"), str) else obj.get("uuid")
        reply = Reply(str(key), n, time)
        model = message.get("model")
        reply.model = model if isinstance(model, str) else None
        reply.usage = _usage(message.get("usage"))
        reply.final = message.get("stop_reason") in FINAL_STOPS
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text" and isinstance(block.get("text"), str):
                reply.text.append(block["text"])
            elif kind == "tool_use" and isinstance(block.get("id"), str):
                reply.calls.append(
                    call(block["id"], str(block.get("name")), block.get("input", {}))
                )
            elif kind in ("thinking", "redacted_thinking"):
                reply.reasoning.append(block)
        if isinstance(content, str):
            reply.text.append(content)
        yield reply


def _text(content: Any, images: list[dict[str, str]] | None = None) -> str:
    """A tool result's or summary's content as text; an image named, and kept in
    `images` (a tool result's: `images.kept`)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    texts = []
    for block in content:
        if isinstance(block, dict) and block.get("type") == "text":
            texts.append(str(block.get("text", "")))
        elif isinstance(block, dict) and block.get("type") == "image":
            texts.append(kept(block, images))
    return "\n".join(texts)


def _image(block: dict[str, Any]) -> dict[str, Any]:
    source = block.get("source") if isinstance(block.get("source"), dict) else {}
    if source.get("type") == "base64" and isinstance(source.get("data"), str):
        url = f"data:{source.get('media_type', 'image/png')};base64,{source['data']}"
        return {"type": "image_url", "image_url": {"url": url}}
    return {"type": "text", "text": "[image, not imported]"}


def _usage(usage: Any) -> dict[str, int] | None:
    if not isinstance(usage, dict):
        return None
    prompt = sum(
        _int(usage.get(k))
        for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
    )
    return {"prompt_tokens": prompt, "completion_tokens": _int(usage.get("output_tokens"))}


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def source(path: Path, exists: Callable[[str], bool]) -> Source:
    """The first pass over `path` as a `Source` for `mirror.import_source`; `exists`
    says whether a store id names a session (a fork's parent is named only when it does)."""
    return _main(scan(path), path, exists)


def _main(found: Scan, path: Path, exists: Callable[[str], bool]) -> Source:
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
    if found.broken_at is not None:
        found.tally.ignored[f"chain cut at line {found.broken_at} (its parent is missing)"] += 1
    return Source(
        format=NAME,
        path=path,
        source_id=key,
        session_id=derived_id(key),
        tally=found.tally,
        items=lambda: items(path, found.chain, found.tally),
        title=found.title,
        summary=found.summary,
        cwd=found.cwd,
        branch=found.branch,
        first_time=found.first_time,
        last_time=found.last_time,
        parent=parent,
        extra=extra,
        resume_point=_resume_point(path, found, None),
    )


def _resume_point(
    path: Path, found: Scan, previous: dict[str, Any] | None
) -> Callable[[Assembler], dict[str, Any] | None]:
    """Where the next import may start reading (`imported.resume`): the first line held
    back (else the end), the chain line before it, the turn and step there; None when
    the assembler holds state no line records (reasoning carried to a later reply)."""

    def point(assembler: Assembler) -> dict[str, Any] | None:
        if assembler.carried:
            return None
        held = assembler.held
        sidechain = found.sidechain
        if found.leaf is None and previous is not None:  # no new chain line
            sidechain = previous["sidechain"]
        if held is None:
            offset, line = found.end, found.tally.lines
            uuid = found.leaf or (previous["uuid"] if previous else None)
        else:
            offset = offset_of_line(path, held, offset=found.offset, line=found.line)
            line = held - 1
            uuid = next((p for p, n in found.parents.values() if n == held), None)
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


def resumed(path: Path, header_of: Callable[[str], dict[str, Any] | None]) -> Source | None:
    """The source read on from where its last import stopped (`imported.resume`), when
    the file still begins as it was read and its new lines only continue the chain
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
    found = scan(path, resume["offset"], resume["line"])
    if found.side_chains or (found.leaf is not None and found.sidechain != resume["sidechain"]):
        return None  # side-chain lines in a main file: read it whole
    if found.leaf is not None:
        if found.broken_at is None:
            return None  # a new root: not a continuation
        cut = next((p for p, n in found.parents.values() if n == found.broken_at), None)
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
        summary=found.summary or done.get("summary"),
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
) -> list[Source]:
    """`source`, and a `Source` for each side chain of a main file (older versions kept
    subagents there): a session of its own, a fork of the main one, named by the source
    id `<session id>/side/<its first line's uuid>`. With `header_of` (a store id -> its
    header), a file imported before is read from where that import stopped, if it can be
    (`resumed`)."""
    if header_of is not None:
        again = resumed(path, header_of)
        if again is not None:
            return [again]
    found = scan(path)
    main = _main(found, path, exists)
    out = [main]
    for root, chain in found.side_chains:
        key = f"{main.source_id}/side/{root}"
        tally = Tally(lines=found.tally.lines, bytes=found.tally.bytes, sha256=found.tally.sha256)
        out.append(
            Source(
                format=NAME,
                path=path,
                source_id=key,
                session_id=derived_id(key),
                tally=tally,
                items=lambda chain=chain, tally=tally: items(path, chain, tally),  # type: ignore[misc]
                cwd=main.cwd,
                branch=main.branch,
                first_time=main.first_time,
                last_time=main.last_time,
                parent=main.session_id,
                extra={"version": found.version, "side_chain_of": main.source_id},
            )
        )
    return out
