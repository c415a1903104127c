"""What a model server's answer may cost: its bytes, an event stream's lines, its time;
enforced by a public httpx event hook wrapping the byte stream of every answer
(redirects and errors included) before httpx or the SDK read it.

Invariants:
- At most `MAX_REPLY_BYTES` of body (as sent, before decoding), else `ReplyTooLarge`.
- In an uncompressed event stream at most `MAX_EVENT_BYTES` between two blank lines
  (the SDK's decoder would gather an endless line without end).
- Each read checks `inflight.Limits`: once abandoned, the next read raises, so a worker
  left behind ends at the server's next byte. These are not httpx errors: they pass
  through httpx and the SDK as they are.
Imported only once the client talks to a server (httpx is slow to import).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import httpx2

from gitsessions.services.model.inflight import Limits, ReplyTooLarge

MAX_REPLY_BYTES = 32 * 1024 * 1024  # one answer's body
MAX_EVENT_BYTES = 1024 * 1024  # one event (its lines) of a streamed answer
BLANK_LINES = (b"\n\n", b"\r\r", b"\r\n\r\n")


class ReplyLimits:
    """The event hook of one HTTP client: `hooks` for its `event_hooks`. The thread that
    sends a request says which `Limits` hold for it (`running`); a thread without any
    (none here) reads under the caps alone."""

    def __init__(self) -> None:
        self._local = threading.local()

    def running(self, limits: Limits | None) -> None:
        self._local.limits = limits

    @property
    def hooks(self) -> dict[str, list[Any]]:
        return {"response": [self._on_response]}

    def _on_response(self, response: httpx2.Response) -> None:
        limits: Limits | None = getattr(self._local, "limits", None)
        if limits is not None:
            limits.responses.append(response)
            limits.check()
        kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
        encoded = response.headers.get("content-encoding", "identity").strip().lower()
        events = kind == "text/event-stream" and encoded in ("", "identity")
        response.stream = _CappedStream(response.stream, limits, events)


class _CappedStream(httpx2.SyncByteStream):
    """An answer's bytes, cut by the caps and the request's `Limits`."""

    def __init__(self, inner: Any, limits: Limits | None, events: bool) -> None:
        self._inner = inner
        self._limits = limits
        self._events = events

    def __iter__(self) -> Iterator[bytes]:
        total = 0
        pending = 0  # bytes since the last blank line
        tail = b""
        for chunk in self._inner:
            if self._limits is not None:
                self._limits.check()
            total += len(chunk)
            if total > MAX_REPLY_BYTES:
                raise ReplyTooLarge(f"an answer over {MAX_REPLY_BYTES // 2**20} MiB")
            if self._events:
                seen = tail + chunk
                ends = [(seen.rfind(blank), len(blank)) for blank in BLANK_LINES]
                at, size = max(ends)
                pending = pending + len(chunk) if at < 0 else len(seen) - at - size
                if pending > MAX_EVENT_BYTES:
                    raise ReplyTooLarge(
                        f"a stream line or event over {MAX_EVENT_BYTES // 2**20} MiB"
                    )
                tail = seen[-3:]
            yield chunk

    def close(self) -> None:
        self._inner.close()
