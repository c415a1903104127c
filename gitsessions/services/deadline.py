"""A deadline for a whole HTTP request: connecting, sending and every read of the answer.

Invariant: once a request started under `Deadline.running(seconds)`, no wait on the
network outlasts the deadline by more than one read (a server that trickles a byte every
half second is cut at the first read that ends after the deadline). httpx's own timeouts
are per operation, so a slow but steady server would never trip them; here each
operation's timeout is capped by what is left, and the answer's byte stream checks the
clock after every read. Exceeding it raises httpx's `ReadTimeout` (or `ConnectTimeout`),
which the openai client turns into its timeout error.

Imported only by the model client, and only once it talks to a server: the HTTP library
comes with `openai` (`httpx2` in recent releases, `httpx` before) and is as slow to import.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

try:
    import httpx2
except ImportError:  # openai releases before the httpx2 fork
    import httpx as httpx2  # type: ignore[no-redef]

TIMEOUT_KEYS = ("connect", "read", "write", "pool")


class Deadline:
    """The deadline of the request in flight (None: no deadline). One per HTTP client,
    which serves one request at a time; pass `hooks` to the client as `event_hooks`."""

    def __init__(self) -> None:
        self.expires: float | None = None

    @contextmanager
    def running(self, seconds: float) -> Iterator[None]:
        """Every request sent inside the block must be finished `seconds` from now."""
        self.expires = time.monotonic() + seconds
        try:
            yield
        finally:
            self.expires = None

    @property
    def hooks(self) -> dict[str, list[object]]:
        return {"request": [self._on_request], "response": [self._on_response]}

    def _left(self) -> float | None:
        return None if self.expires is None else self.expires - time.monotonic()

    def _on_request(self, request: httpx2.Request) -> None:
        left = self._left()
        if left is None:
            return
        if left <= 0:
            raise httpx2.ConnectTimeout("the request deadline passed", request=request)
        timeouts = request.extensions.get("timeout") or {}
        request.extensions["timeout"] = {
            key: left if timeouts.get(key) is None else min(timeouts[key], left)
            for key in TIMEOUT_KEYS
        }

    def _on_response(self, response: httpx2.Response) -> None:
        if self.expires is not None:
            response.stream = _DeadlineStream(response.stream, self.expires, response.request)


class _DeadlineStream(httpx2.SyncByteStream):
    """An answer's bytes, cut with `ReadTimeout` at the first read that ends too late."""

    def __init__(self, inner: object, expires: float, request: httpx2.Request) -> None:
        assert isinstance(inner, httpx2.SyncByteStream)
        self._inner = inner
        self._expires = expires
        self._request = request

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._inner:
            if time.monotonic() > self._expires:
                raise httpx2.ReadTimeout("the request deadline passed", request=self._request)
            yield chunk

    def close(self) -> None:
        self._inner.close()
