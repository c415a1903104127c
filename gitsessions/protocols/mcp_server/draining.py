"""`gitsessions mcp` at the end of its input: every call it read is answered first.

A client may write its last calls and close stdin at once (a script piping requests in,
a client leaving). The SDK's dispatcher ends when its read stream does: it cancels the
calls still running, and a call read but not yet started is dropped without an answer
(two of five calls written together with the end of input went unanswered). So the
server reads through `answered_first`, whose read stream ends only once every request
read has had its answer (a result or an error) written, or the client cancelled it
(`notifications/cancelled`: the spec forbids an answer then). A call that has not
finished within `FINISH_SECONDS` of the end of input is left to the SDK, which cancels
it and answers it "Connection closed".
"""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
from anyio.abc import ObjectReceiveStream, ObjectSendStream
from mcp.shared.message import SessionMessage

FINISH_SECONDS = 10.0  # after the end of input, for the calls read to be answered

Received = SessionMessage | Exception


class _Unanswered:
    """The ids of the requests read and not answered yet."""

    def __init__(self) -> None:
        self.ids: set[Any] = set()
        self.changed = anyio.Event()

    def read(self, message: Any) -> None:
        if isinstance(message, types.JSONRPCRequest):
            self.ids.add(message.id)
        elif (
            isinstance(message, types.JSONRPCNotification)
            and message.method == "notifications/cancelled"
            and isinstance(message.params, dict)
        ):
            self.settled(message.params.get("requestId"))

    def written(self, message: Any) -> None:
        if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            self.settled(message.id)

    def settled(self, request_id: Any) -> None:
        self.ids.discard(request_id)
        self.changed.set()

    async def none_left(self) -> None:
        while self.ids:
            self.changed = anyio.Event()
            await self.changed.wait()


@asynccontextmanager
async def answered_first(
    read: ObjectReceiveStream[Received],
    write: ObjectSendStream[SessionMessage],
    finish: float = FINISH_SECONDS,
) -> AsyncIterator[tuple[ObjectReceiveStream[Received], ObjectSendStream[SessionMessage]]]:
    """The streams to serve over instead of `read` and `write`: the same messages, the
    read side ending only once what was read is answered (or `finish` seconds on)."""
    unanswered = _Unanswered()
    to_server, server_reads = anyio.create_memory_object_stream[Received](0)
    server_writes, from_server = anyio.create_memory_object_stream[SessionMessage](0)

    async def pass_in() -> None:
        async with to_server:
            try:
                async for item in read:
                    if isinstance(item, SessionMessage):
                        unanswered.read(item.message)
                    await to_server.send(item)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                return  # the server stopped reading: nothing is left to wait for
            with anyio.move_on_after(finish):
                await unanswered.none_left()

    async def pass_out() -> None:
        async with write, from_server:
            async for item in from_server:
                await write.send(item)
                unanswered.written(item.message)

    async with anyio.create_task_group() as group:
        group.start_soon(pass_in)
        group.start_soon(pass_out)
        yield server_reads, server_writes
