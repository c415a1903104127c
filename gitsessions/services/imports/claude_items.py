"""Claude Code's lines mapped to items for `assemble.py` (the second pass over a file):
a prompt, a piece of a reply (a reply is split over lines sharing `message.id`), a tool's
result, a compaction's boundary and summary. Only the lines a path of the file's tree
holds (`claude_chain`) are mapped; `toolUseResult` (the structured copy of a tool's
result) is not kept: the `tool_result` block is what the model saw.
"""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from gitsessions.services.imports.assemble import (
    Boundary,
    Item,
    Prompt,
    Reply,
    Result,
    Summary,
    call,
)
from gitsessions.services.imports.images import kept
from gitsessions.services.imports.lines import Tally, read_objects

FINAL_STOPS = ("end_turn", "stop_sequence", "max_tokens", "refusal", "pause_turn")


def items(
    path: Path, chain: bytearray, tally: Tally, offset: int = 0, line: int = 0, after: int = 0
) -> Iterator[Item]:
    """The second pass: the lines of `chain` (a bitmap of line numbers) as items, from
    `offset` (the start of line `line + 1`) on; only those past line `after`."""

    def on_path(number: int, _raw: bytes) -> bool:
        return after < number < len(chain) and chain[number] == 1

    for number, obj in read_objects(path, offset=offset, line=line, wanted=on_path):
        yield from _items(number, obj, tally)


def _items(n: int, obj: dict[str, Any], tally: Tally) -> Iterator[Item]:
    kind = obj.get("type")
    time = obj.get("timestamp") if isinstance(obj.get("timestamp"), str) else None
    message = given if isinstance(given := obj.get("message"), dict) else {}
    if kind == "system":
        if obj.get("subtype") == "compact_boundary":
            meta = given if isinstance(given := obj.get("compactMetadata"), dict) else {}
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
                files: dict[str, bytes] = {}  # its images, filled by _text (images.py)
                yield Result(
                    block["tool_use_id"], _text(block.get("content"), files), n, time,
                    block.get("is_error") is True, files,
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


def _text(content: Any, files: dict[str, bytes] | None = None) -> str:
    """A tool result's or summary's content as text; an image named, and kept in
    `files` (a tool result's: `images.kept`)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    texts = []
    for block in content:
        if isinstance(block, dict) and block.get("type") == "text":
            texts.append(str(block.get("text", "")))
        elif isinstance(block, dict) and block.get("type") == "image":
            texts.append(kept(block, files))
    return "\n".join(texts)


def _image(block: dict[str, Any]) -> dict[str, Any]:
    source = given if isinstance(given := block.get("source"), dict) else {}
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
