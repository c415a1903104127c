"""The streamable HTTP transport of an MCP server given by `url`: the `mcp` SDK's client
over an httpx2 client whose answers are held to a stdio server's byte cap.

Invariants:
- Every request asks `Accept-Encoding: identity`; a compressed answer is refused before a
  byte is unpacked (a 1 MiB gzip can unpack to a gigabyte).
- A JSON answer is read up to `MAX_MESSAGE` bytes (`link.cut` says why it stopped); event
  streams are capped by the SDK (`max_sse_event_size`, the same cap).
- A call is bounded by the hub's `tool_timeout`, never sooner by the HTTP client.
- A refused answer fails as a broken stream (`Refused`): the call ends at once in one
  line, the hub closes the connection, the server's log says why.
"""

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
from mcp.client.streamable_http import streamable_http_client

from gitsessions.services.tools.mcp_stdio import MAX_MESSAGE, Link, log_line

EVENT_STREAM = "text/event-stream"


class Refused(httpx2.StreamError):
    """An answer over the byte cap, or compressed though identity was asked."""


class _Capped(httpx2.AsyncByteStream):
    """An answer's bytes as they arrive, refused past `MAX_MESSAGE` (or at once, when
    `why`)."""

    def __init__(self, inner: Any, link: Link, log: Path, why: str | None) -> None:
        self._inner = inner
        self._link = link
        self._log = log
        self._why = why

    def _refuse(self, why: str) -> Refused:
        self._link.cut = why
        log_line(self._log, f"{why}: refused, and the connection closed")
        return Refused(f"the server sent {why}")

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self._why is not None:
            raise self._refuse(self._why)
        held = 0
        async for chunk in self._inner:
            held += len(chunk)
            if held > MAX_MESSAGE:
                raise self._refuse(f"a message over {MAX_MESSAGE:,} bytes")
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


class _CappedTransport(httpx2.AsyncBaseTransport):
    """httpx2's own transport, an answer's stream wrapped in `_Capped` unless it is an
    event stream sent as it is (the SDK caps each event itself)."""

    def __init__(self, link: Link, log: Path) -> None:
        self._inner = httpx2.AsyncHTTPTransport()
        self._link = link
        self._log = log

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self._inner.handle_async_request(request)
        encoding = response.headers.get("content-encoding", "").strip().lower()
        why = None
        if encoding not in ("", "identity"):
            why = f"an answer compressed as {encoding[:20]!r} though none was asked"
        streamed = response.headers.get("content-type", "").lower().startswith(EVENT_STREAM)
        if why is not None or not streamed:
            response.stream = _Capped(response.stream, self._link, self._log, why)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


CONNECT = 30.0  # seconds to connect, send or wait for a pooled connection
IDLE_STREAM = 300.0  # seconds an event stream may stay silent (the SDK's default)


def http_transport(
    url: str, headers: Mapping[str, str], tool_timeout: float, link: Link, log: Path
) -> Any:
    """The SDK's (read, write) streams context for the server at `url`."""
    sent = dict(headers)
    sent["Accept-Encoding"] = "identity"  # over any header of the config
    timeout = httpx2.Timeout(CONNECT, read=max(IDLE_STREAM, tool_timeout + CONNECT))
    client = httpx2.AsyncClient(
        headers=sent, timeout=timeout, transport=_CappedTransport(link, log)
    )
    return _closing(
        client, streamable_http_client(url, http_client=client, max_sse_event_size=MAX_MESSAGE)
    )


@asynccontextmanager
async def _closing(client: httpx2.AsyncClient, streams: Any) -> AsyncIterator[Any]:
    """`streams` entered, and `client` closed after them (the SDK leaves a client it is
    given open: its connections would wait for the garbage collector)."""
    async with client, streams as entered:
        yield entered
