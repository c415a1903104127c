"""The stdio transport of an MCP server: its process, its stdout read as newline-delimited
JSON-RPC for the SDK's `ClientSession`, each message bounded; and where the SDK's own
logging goes.

Invariants:
- At most `MAX_MESSAGE` bytes of a line are held: a longer line ends the connection
  (waiting calls fail at once; `Link.cut` says why). The SDK's own reader has no limit.
- A line that is not JSON-RPC is one line in the server's log; nothing reaches the terminal.
- The server runs in its own process group; closing is stdin, then SIGTERM, then SIGKILL,
  then its stdout read to its end, every wait bounded: nothing is left open.
- `route_sdk_logging()` sends the `mcp` loggers' records to the server's log, never to
  the root logger (whose last-resort handler prints to stderr).
"""

import contextlib
import contextvars
import logging
import os
import signal
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import anyio

MAX_MESSAGE = 1024 * 1024  # bytes of one JSON-RPC line from a server
GRACE = 1.0  # seconds a server gets to exit after its stdin closes, and after SIGTERM
SDK_LOGGERS = ("mcp", "mcp_types", "client")  # the SDK's client session logs as "client"
MAX_LOG_RECORD = 2000  # characters of one log record written to the server's log

_server_log: contextvars.ContextVar[Path | None] = contextvars.ContextVar(
    "mcp_server_log", default=None
)


@dataclass
class Link:
    """What the transport tells its owner: why it ended the connection, if it did."""

    cut: str | None = None


def log_line(log: Path, text: str) -> None:
    """Append one line to a server's log (bounded; a failure to write is ignored)."""
    line = " ".join(text.split())[:MAX_LOG_RECORD]
    with contextlib.suppress(OSError), open(log, "a", encoding="utf-8") as file:
        file.write(f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} gitsessions: {line}\n")


class _ToServerLog(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        log = _server_log.get()
        if log is None:
            return  # not within a server's task: dropped, never printed
        text = f"{record.levelname} {record.name}: {record.getMessage()}"
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            text += f" ({type(error).__name__}: {error})"
        log_line(log, text)


def route_sdk_logging() -> None:
    """The SDK's loggers write to the server's log (see the invariants); idempotent."""
    for name in SDK_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(h, _ToServerLog) for h in logger.handlers):
            logger.addHandler(_ToServerLog())
        logger.setLevel(logging.WARNING)
        logger.propagate = False


def use_log(log: Path) -> None:
    """This task's (and its children's) SDK log records go to `log`."""
    _server_log.set(log)


def _parse(line: bytes, log: Path) -> Any:
    # the mcp SDK: only with an MCP server configured
    from mcp.shared.message import SessionMessage
    from mcp.types import jsonrpc_message_adapter

    try:
        return SessionMessage(jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as error:
        first = str(error).splitlines()[0] if str(error) else type(error).__name__
        log_line(log, f"not a JSON-RPC message ({len(line):,} bytes): {first}")
        return error


@contextlib.asynccontextmanager
async def stdio_transport(
    command: str,
    args: list[str],
    env: dict[str, str],
    cwd: str | None,
    errlog: TextIO,
    log: Path,
    link: Link,
) -> AsyncIterator[tuple[Any, Any]]:
    """The server's (read, write) streams for `ClientSession` (see the invariants)."""
    # the mcp SDK: only with an MCP server configured
    from mcp.client.stdio import get_default_environment
    from mcp.shared.message import SessionMessage

    process = await anyio.open_process(
        [command, *args],
        env=get_default_environment() | env,
        cwd=cwd,
        stderr=errlog,
        start_new_session=True,
    )
    reader_end, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, writer_end = anyio.create_memory_object_stream[SessionMessage](0)

    async def read() -> None:
        assert process.stdout is not None
        held = bytearray()
        async with reader_end:
            with contextlib.suppress(
                anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError
            ):
                while True:
                    chunk = await process.stdout.receive(65536)
                    start = 0
                    while (end := chunk.find(b"\n", start)) >= 0:
                        held += chunk[start:end]
                        start = end + 1
                        if len(held) > MAX_MESSAGE:
                            break
                        if held.strip():
                            await reader_end.send(_parse(bytes(held), log))
                        held.clear()
                    else:
                        held += chunk[start:]
                    if len(held) > MAX_MESSAGE:
                        link.cut = f"a message over {MAX_MESSAGE:,} bytes"
                        log_line(log, f"{link.cut}: cut, and the connection closed")
                        return  # the session sees the end of the stream

    async def write() -> None:
        assert process.stdin is not None
        async with writer_end:
            try:
                async for message in writer_end:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send(data.encode() + b"\n")
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                await reader_end.aclose()  # the server stopped reading: the session ends

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(read)
            group.start_soon(write)
            try:
                yield read_stream, write_stream
            finally:
                with anyio.CancelScope(shield=True):
                    await _stop(process)
                group.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await _release(process)
        for stream in (read_stream, write_stream):
            await stream.aclose()


async def _stop(process: Any) -> None:
    """Close the server's stdin; SIGTERM to its group after `GRACE`; SIGKILL after
    another; every wait bounded."""
    with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await process.stdin.aclose()
    for sent in (None, signal.SIGTERM, signal.SIGKILL):
        if sent is not None:
            with contextlib.suppress(OSError):
                os.killpg(process.pid, sent)
        deadline = anyio.current_time() + GRACE
        while process.returncode is None and anyio.current_time() < deadline:
            await anyio.sleep(0.01)
        if process.returncode is not None:
            break


async def _release(process: Any) -> None:
    """Read the ended server's stdout to its end (at most `GRACE` seconds), then close it:
    a pipe left unread (a reader that stopped at a cut) is never seen to end, and asyncio
    would keep it and the process's transport open until the garbage collector finds
    them."""
    with (
        anyio.move_on_after(GRACE),
        contextlib.suppress(
            anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError
        ),
    ):
        while True:
            await process.stdout.receive(65536)
    with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await process.stdout.aclose()
