"""The ACP connection's framing: newline-delimited JSON-RPC on stdin and stdout, each line
read with a byte cap (a transport, as `acp.AgentSideConnection` takes one).

Invariants:
- No line over `LINE_CAP` is held whole (about twice the cap buffered); the rest of an
  over-long line is dropped as it is read and answered `-32600` (its id when its first
  bytes name one), never echoing it; a line that is not a JSON object is `-32700`.
- An error's `data` written back is cut to `ERROR_DATA_CAP` (the package echoes the
  rejected input), each validation error's `input` dropped.
- Messages are written whole, one at a time, in the order sent.
"""

import asyncio
import json
import re
from typing import Any

LINE_CAP = 16 * 1024 * 1024  # bytes in one JSON-RPC line (a prompt with embedded files)
HEAD = 4096  # bytes of an over-long line looked at for its id
ERROR_DATA_CAP = 2000  # characters of JSON an error's `data` keeps
INVALID_REQUEST, PARSE_ERROR = -32600, -32700
_ID = re.compile(rb'"id"\s*:\s*(-?\d{1,18}|"(?:[^"\\]|\\.){0,200}")')


def id_in(head: bytes) -> Any:
    """The request id in the first bytes of a line, when one is named before its
    `params` (where a nested "id" could be); else None."""
    before = head.split(b'"params"', 1)[0]
    found = _ID.search(before)
    if found is None:
        return None
    try:
        return json.loads(found.group(1))
    except ValueError:
        return None


def error(request_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def bounded(message: dict[str, Any]) -> dict[str, Any]:
    """`message`, its error's data cut to ERROR_DATA_CAP characters of JSON (no
    rejected input echoed whole)."""
    failure = message.get("error")
    if not isinstance(failure, dict) or failure.get("data") is None:
        return message
    data = failure["data"]
    if isinstance(data, dict) and isinstance(data.get("errors"), list):
        data = {
            **data,
            "errors": [
                {k: v for k, v in e.items() if k not in ("input", "ctx", "url")}
                if isinstance(e, dict)
                else e
                for e in data["errors"]
            ],
        }
    text = json.dumps(data, ensure_ascii=False)
    if len(text) > ERROR_DATA_CAP:
        data = {"details": text[:ERROR_DATA_CAP] + f" [... {len(text) - ERROR_DATA_CAP:,} cut]"}
    return {**message, "error": {**failure, "data": data}}


class LineTransport:
    """`acp`'s Transport (send, receive, close) over stdio streams, lines capped."""

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, cap: int = LINE_CAP
    ) -> None:
        self.reader = reader  # made with limit=cap: readuntil stops there
        self.writer = writer
        self.cap = cap
        self._lock = asyncio.Lock()

    async def send(self, message: dict[str, Any]) -> None:
        data = json.dumps(bounded(message), separators=(",", ":"), ensure_ascii=False)
        async with self._lock:
            self.writer.write(data.encode("utf-8") + b"\n")
            await self.writer.drain()

    async def receive(self) -> dict[str, Any] | None:
        """The next message; None at the end of input."""
        while True:
            try:
                line = await self.reader.readuntil(b"\n")
            except asyncio.IncompleteReadError as end:  # a last line with no newline
                line = end.partial
                if not line.strip():
                    return None
            except asyncio.LimitOverrunError as over:
                await self._skip_line(over.consumed)
                continue
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except ValueError:
                await self.send(error(None, PARSE_ERROR, "Parse error: a line that is not JSON"))
                continue
            if isinstance(message, dict):
                return message
            await self.send(error(None, INVALID_REQUEST, "Invalid request: not a JSON object"))

    async def _skip_line(self, consumed: int) -> None:
        """Drop an over-long line (its first `consumed` bytes are buffered), a buffer at a
        time, and answer it."""
        head = await self.reader.readexactly(min(consumed, HEAD))
        consumed -= len(head)
        while True:
            if consumed:
                await self.reader.readexactly(consumed)  # dropped: at most the buffer
            try:
                await self.reader.readuntil(b"\n")
                break
            except asyncio.LimitOverrunError as over:
                consumed = over.consumed
            except asyncio.IncompleteReadError:  # the input ended inside it
                break
        megabytes = self.cap // (1024 * 1024)
        await self.send(
            error(
                id_in(head),
                INVALID_REQUEST,
                f"Invalid request: a line over {megabytes} MiB (the limit of one message); "
                "not read",
            )
        )

    async def close(self) -> None:
        async with self._lock:  # what is being written is written; stdout stays open
            return


async def serve_stdio(agent: Any) -> None:
    """Run the ACP `agent` on stdin and stdout, lines capped, until stdin closes."""
    # the acp SDK (pydantic): only when the adapter serves
    from acp import run_agent, stdio_streams

    reader, writer = await stdio_streams(limit=LINE_CAP)
    # session/resume and session/fork: routed as unstable by this version of the SDK
    await run_agent(agent, LineTransport(reader, writer), use_unstable_protocol=True)
