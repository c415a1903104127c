"""A minimal HTTP/1.1 client connection on a socket, for the model client (wire.py).

Why not `http.client`: it imports `ssl` and the `email` package (about 20 ms, a third of
what `exec` may add to Python's start-up); this module imports `socket` and `io`, and
`ssl` only for an https URL.

Invariants:
- Every socket operation (connect, a proxy's CONNECT, the TLS handshake, each send and
  each read) waits at most until the connection's deadline (`expires[0]`, a monotonic
  time the caller sets per request); past it, `TimeoutError`.
- A body is read as its headers frame it (Content-Length, chunked, or until the server
  closes); a body cut short raises `BodyCut`, never looks complete. `Disconnected`
  means the server closed before any status line: a kept-alive connection it dropped.
- A line of the answer's framing (status line, header, chunk size, trailer) is at most
  MAX_LINE bytes, its end aside; a longer one raises `ProtocolError`, never is split in
  two (the tail of a header line read as a line of its own is a header slipped in).
- `reusable` is true only when the answer was read to its end and neither side said
  the connection closes.
"""

from __future__ import annotations

import contextlib
import io
import socket
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

MAX_LINE = 65536
URL_SAFE = "/%:@!$&'()*+,;=-._~?#[]"  # a URL's own characters: only others are escaped
QUICKACK: int | None = getattr(socket, "TCP_QUICKACK", None)


class ProtocolError(OSError):
    """The server broke HTTP (a bad status line, chunk size or header)."""


class Disconnected(ConnectionResetError):
    """The server closed the connection without answering."""

    def __init__(self) -> None:
        super().__init__("Server disconnected without sending a response.")


class BodyCut(ProtocolError):
    """The body ended before its framing said it would."""


class _Raw(io.RawIOBase):
    """The socket as a raw stream whose every read first arms the deadline."""

    def __init__(self, connection: Connection) -> None:
        self._connection = connection

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        self._connection.arm()
        return self._connection.sock.recv_into(buffer)


class Connection:
    """One connection to a server (directly, or through a proxy)."""

    def __init__(self, sock: socket.socket, expires: list[float]) -> None:
        self.sock = sock
        self.expires = expires
        self.reader = io.BufferedReader(_Raw(self), MAX_LINE)
        self.closed = False

    @classmethod
    def open(
        cls,
        host: str,
        port: int,
        expires: list[float],
        *,
        tls: Any = None,
        tunnel: tuple[str, int, Mapping[str, str]] | None = None,
    ) -> Connection:
        """Connect to `host:port`; with `tunnel` (the server behind an HTTP proxy at
        host:port), CONNECT through it first; with `tls` (an SSLContext), wrap the
        socket for the server's name."""
        # an ASCII name as bytes: a str goes through the idna codec (2 ms to import)
        name: str | bytes = host.encode("ascii") if host.isascii() else host
        sock = socket.create_connection((name, port), timeout=_left(expires))  # type: ignore[arg-type]
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        connection = cls(sock, expires)
        try:
            server = host
            if tunnel is not None:
                server = tunnel[0]
                connection.tunnel(*tunnel)
            if tls is not None:
                sock.settimeout(_left(expires))
                connection = cls(tls.wrap_socket(sock, server_hostname=server), expires)
        except BaseException:
            sock.close()
            raise
        return connection

    def tunnel(self, host: str, port: int, headers: Mapping[str, str]) -> None:
        lines = [f"CONNECT {host}:{port} HTTP/1.1", f"Host: {host}:{port}"]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        self.send(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        response = Response(self, "CONNECT")
        if response.status != 200:
            raise OSError(f"Tunnel connection failed: {response.status} {response.reason}")

    def arm(self) -> None:
        """Limit the next socket operation to what is left of the deadline; ask the
        kernel to acknowledge what arrives at once (Linux; it forgets after a while,
        hence before every read): a server without TCP_NODELAY (Python's http.server)
        sends a body only once its headers are acknowledged, and a delayed ACK on a
        kept-alive connection costs 40 ms a request."""
        self.sock.settimeout(_left(self.expires))
        if QUICKACK is not None:
            with contextlib.suppress(OSError):
                self.sock.setsockopt(socket.IPPROTO_TCP, QUICKACK, 1)

    def send(self, data: bytes) -> None:
        self.arm()
        self.sock.sendall(data)

    def request(
        self, method: str, target: str, host: str, headers: Mapping[str, str], body: bytes | None
    ) -> Response:
        """Send a request (headers and body in one write) and read the answer's head.
        A header value that could end its line, or is not Latin-1, is refused (named,
        never shown: it may be the API key)."""
        target = quote(target, safe=URL_SAFE)
        lines = [f"{method} {target} HTTP/1.1", f"Host: {host}", "Accept-Encoding: identity"]
        for name, value in headers.items():
            if "\r" in value or "\n" in value or not _latin1(value):
                raise ProtocolError(f"the {name} header holds a character HTTP cannot send")
            lines.append(f"{name}: {value}")
        if body is not None:
            lines.append(f"Content-Length: {len(body)}")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        self.send(head + body if body is not None else head)
        return Response(self, method)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            with contextlib.suppress(OSError):
                self.sock.close()


class Response:
    """An answer: status, headers (lower-case names), and its body read piece by piece."""

    def __init__(self, connection: Connection, method: str) -> None:
        self._connection = connection
        reader = connection.reader
        while True:
            line = _line(reader, "status line")
            if not line:
                raise Disconnected()
            version, _, rest = line.decode("latin-1").rstrip("\r\n").partition(" ")
            code, _, self.reason = rest.partition(" ")
            if not version.startswith("HTTP/") or not code.isdigit() or len(code) != 3:
                raise ProtocolError(f"illegal status line: {line[:100]!r}")
            self.status = int(code)
            self.headers = _headers(reader)
            if not 100 <= self.status < 200 or method == "CONNECT":
                break  # 1xx: informational, the real answer follows
        framing = self.headers.get("transfer-encoding", "").lower()
        length = self.headers.get("content-length")
        self._chunked = "chunked" in framing
        self._left: int | None = None  # bytes left in the body (Content-Length) or chunk
        self._crlf = False  # a chunk's closing CRLF is still to be read
        self.done = False
        said = self.headers.get("connection", "").lower()
        self.will_close = "close" in said or (version == "HTTP/1.0" and "keep-alive" not in said)
        if method in ("HEAD", "CONNECT") or self.status in (204, 304):
            self.done = True
        elif self._chunked:
            self._left = 0
        elif length is not None:
            if not length.strip().isdigit():
                raise ProtocolError(f"bad Content-Length: {length[:40]!r}")
            self._left = int(length)
            self._length = self._left
            self.done = self._left == 0
        else:
            self.will_close = True  # the body ends when the server closes

    @property
    def reusable(self) -> bool:
        return self.done and not self.will_close

    def read1(self, size: int = MAX_LINE) -> bytes:
        """At most `size` bytes of the body, as soon as some arrive; b"" at its end."""
        if self.done:
            return b""
        reader = self._connection.reader
        if self._chunked and self._left == 0:
            if self._crlf:
                _line(reader, "chunk end")
                self._crlf = False
            line = _line(reader, "chunk size line")
            if not line:
                raise BodyCut(
                    "peer closed connection without sending complete message body "
                    "(incomplete chunked read)"
                )
            try:
                self._left = int(line.split(b";", 1)[0].strip(), 16)
            except ValueError:
                raise ProtocolError(f"bad chunk size: {line[:40]!r}") from None
            if self._left == 0:
                while _line(reader, "trailer line") not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                self.done = True
                return b""
        if self._left is None:  # until the server closes
            data = reader.read1(size)
            self.done = not data
            return data
        data = reader.read1(min(size, self._left))
        if not data:
            if self._chunked:
                detail = "incomplete chunked read"
            else:
                got = self._length - self._left
                detail = f"received {got} bytes, expected {self._length}"
            raise BodyCut(
                f"peer closed connection without sending complete message body ({detail})"
            )
        self._left -= len(data)
        if self._left == 0:
            if self._chunked:
                self._crlf = True
            else:
                self.done = True
        return data

    def read(self, limit: int | None = None) -> bytes:
        """The rest of the body (at most `limit` bytes)."""
        pieces: list[bytes] = []
        count = 0
        while limit is None or count < limit:
            piece = self.read1(MAX_LINE if limit is None else min(MAX_LINE, limit - count))
            if not piece:
                break
            pieces.append(piece)
            count += len(piece)
        return b"".join(pieces)


def _headers(reader: io.BufferedReader) -> dict[str, str]:
    headers: dict[str, str] = {}
    for _ in range(200):
        line = _line(reader, "header line")
        if line in (b"\r\n", b"\n", b""):
            return headers
        name, colon, value = line.decode("latin-1").partition(":")
        if not colon:
            raise ProtocolError(f"bad header line: {line[:100]!r}")
        key = name.strip().lower()
        value = value.strip()
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
    raise ProtocolError("more than 200 header lines")


def _line(reader: io.BufferedReader, what: str) -> bytes:
    """The next line of the answer's framing, its end included (without one only at the
    end of the stream); one longer than MAX_LINE bytes, its end aside, raises."""
    line = reader.readline(MAX_LINE + 2)
    if len(line.rstrip(b"\r\n")) > MAX_LINE:
        raise ProtocolError(f"the server sent a {what} longer than {MAX_LINE} bytes")
    return line


def _latin1(value: str) -> bool:
    try:
        value.encode("latin-1")
    except UnicodeEncodeError:
        return False
    return True


def _left(expires: list[float]) -> float:
    left = expires[0] - time.monotonic()
    if left <= 0:
        raise TimeoutError("the request deadline passed")
    return left
