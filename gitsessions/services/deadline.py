"""A deadline for a whole HTTP request: connecting, sending and every read of the answer.

Invariant: once a request started under `Deadline.running(seconds)`, no wait on the
network outlasts the deadline (a server that trickles a byte every half second is cut when
the deadline comes, whether it trickles the headers or the body). httpx's own timeouts are
per operation, so a slow but steady server would never trip them. Here, in two layers:
- public httpx event hooks cap each operation's timeout by what is left when the request
  starts, and make the answer's byte stream check the clock after every read;
- `install` also wraps the client's socket layer (httpcore's network backend, reached
  through private attributes, skipped if they are not there) so that every single read
  and write, headers included, waits at most until the deadline.
Exceeding it raises httpx's `ReadTimeout` (or `ConnectTimeout`), which the openai client
turns into its timeout error.

Imported only by the model client, and only once it talks to a server: the HTTP library
comes with `openai` (`httpx2` in recent releases, `httpx` before) and is as slow to import.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

try:
    import httpcore2
    import httpx2
except ImportError:  # openai releases before the httpx2 fork
    import httpcore as httpcore2  # type: ignore[no-redef]
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

    def install(self, client: httpx2.Client) -> bool:
        """Bound every socket read and write of `client`'s direct connections by the
        deadline; False when this httpx has no such layer to wrap (the hooks still hold)."""
        pool = getattr(getattr(client, "_transport", None), "_pool", None)
        backend = getattr(pool, "_network_backend", None)
        if backend is None:
            return False
        pool._network_backend = _DeadlineBackend(backend, self)  # type: ignore[union-attr]
        return True

    def cap(self, timeout: float | None) -> float | None:
        """`timeout` shortened to what is left; raises `ReadTimeout` when nothing is."""
        left = self._left()
        if left is None:
            return timeout
        if left <= 0:
            raise httpcore2.ReadTimeout("the request deadline passed")
        return left if timeout is None else min(timeout, left)

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


class _DeadlineBackend:
    """httpcore's network backend, handing out streams bounded by the deadline."""

    def __init__(self, inner: Any, deadline: Deadline) -> None:
        self._inner = inner
        self._deadline = deadline

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, **kw: Any) -> Any:
        timeout = self._deadline.cap(timeout)
        return _DeadlineNetworkStream(
            self._inner.connect_tcp(host, port, timeout, **kw), self._deadline
        )

    def connect_unix_socket(self, path: str, timeout: float | None = None, **kw: Any) -> Any:
        timeout = self._deadline.cap(timeout)
        return _DeadlineNetworkStream(
            self._inner.connect_unix_socket(path, timeout, **kw), self._deadline
        )

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class _DeadlineNetworkStream:
    """One connection's socket: each read and write waits at most until the deadline of
    the request using it (a kept-alive connection serves several, each with its own)."""

    def __init__(self, inner: Any, deadline: Deadline) -> None:
        self._inner = inner
        self._deadline = deadline

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return bytes(self._inner.read(max_bytes, self._deadline.cap(timeout)))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, self._deadline.cap(timeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None, **kw: Any) -> Any:
        return _DeadlineNetworkStream(
            self._inner.start_tls(ssl_context, server_hostname, **kw), self._deadline
        )

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)
