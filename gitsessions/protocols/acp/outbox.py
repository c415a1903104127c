"""What the agent (on the main thread, or a tool's output reader) sends the ACP client.

Invariant: session updates leave in the order they were made, from whichever thread
(one queue, one sender task on the protocol's event loop), and every update a turn made
is written before that turn's `session/prompt` answer or a permission request
(`flush`). A permission request waits on the calling thread, interruptibly: a cancel
(SIGINT, protocols/acp/worker.py) stops the wait and withdraws the request. No wait outlives
the protocol's loop: once the client is gone a flush returns and a request raises
ClientGone.
"""

import asyncio
import contextlib
from concurrent.futures import Future
from typing import Any, TypeVar

from acp.interfaces import Client
from acp.schema import PermissionOption, RequestPermissionResponse, ToolCallUpdate

from gitsessions.values.errors import GitsessionsError

T = TypeVar("T")


class ClientGone(GitsessionsError):
    """A permission request with no client left to answer it."""


class Outbox:
    """Made on the protocol's event loop, used from any thread."""

    def __init__(self, loop: asyncio.AbstractEventLoop, client: Client) -> None:
        self.loop = loop
        self.client = client
        self._queue: asyncio.Queue[tuple[str, Any] | Future[None]] = asyncio.Queue()
        self._task = loop.create_task(self._send_all(), name="gitsessions.acp.outbox")

    async def _send_all(self) -> None:
        while True:
            item = await self._queue.get()
            if isinstance(item, Future):
                item.set_result(None)
                continue
            session_id, update = item
            # a client gone: the turn still saves, and there is no one to tell
            with contextlib.suppress(Exception):
                await self.client.session_update(session_id=session_id, update=update)

    def send(self, session_id: str, update: Any) -> None:
        # a loop already closed (the client left while a tool ran): nothing to send to
        with contextlib.suppress(RuntimeError):
            self.loop.call_soon_threadsafe(self._queue.put_nowait, (session_id, update))

    @property
    def closed(self) -> bool:
        """The protocol's loop is over (the client left): nothing more is sent."""
        return self._task.done() or self.loop.is_closed()

    def _wait(self, future: "Future[T]") -> T:
        """`future`'s result, or ClientGone once the loop that would give it is over."""
        while True:
            if self.closed and not future.done():
                future.cancel()
                raise ClientGone("the ACP client is gone")
            try:
                return future.result(timeout=0.2)
            except TimeoutError:
                continue

    def flush(self) -> None:
        """Wait until every update sent before this one is written (not on the loop);
        at once when the client is gone."""
        done: Future[None] = Future()
        try:
            self.loop.call_soon_threadsafe(self._queue.put_nowait, done)
            self._wait(done)
        except (RuntimeError, ClientGone):  # a loop closed, or stopped: nothing to wait for
            return

    async def drain(self) -> None:
        """The same, on the loop."""
        done: Future[None] = Future()
        self._queue.put_nowait(done)
        await asyncio.wrap_future(done)

    def ask(
        self, session_id: str, call: ToolCallUpdate, options: list[PermissionOption]
    ) -> RequestPermissionResponse:
        """`session/request_permission`, waited for on this thread."""
        self.flush()
        request = self.client.request_permission(
            session_id=session_id, tool_call=call, options=options
        )
        try:
            future = asyncio.run_coroutine_threadsafe(request, self.loop)
        except RuntimeError:  # the loop is closed
            request.close()
            raise ClientGone("the ACP client is gone") from None
        try:
            return self._wait(future)
        except BaseException:
            future.cancel()
            raise
