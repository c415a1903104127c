"""The OpenAI-compatible wire on the standard library: `POST {base}/chat/completions`
(a JSON answer, or server-sent events when streamed) and `GET {base}/models`.

Why: importing the openai package costs about half a second, ten times what a one-turn
`exec` is allowed; this module and its HTTP (`services/http1.py`) import `socket` and
nothing else of weight. It knows HTTP and SSE only: what the JSON means, and how a
failure is told to the user, is `services/model.py`'s job (the one place both clients
share).

Invariants:
- The deadline covers the whole request: connecting (a proxy's CONNECT included),
  sending, and every single read of the status line, the headers and the body. Each
  socket operation waits at most until it; past it, `WireTimeout`.
- Every failure is one of the `WireError`s below, or `ValueError` for a body that is not
  JSON; a KeyboardInterrupt goes through untouched, and the connection it interrupted is
  dropped, never reused.
- A connection is kept for the next request only when its answer was read to the end and
  the server did not say it closes it; a kept connection the server dropped meanwhile is
  replaced once, before anything of the request was answered.
- Redirects are followed as httpx follows them, except that a POST (the conversation)
  is never sent on to another origin, and the API key goes along to another origin only
  on an upgrade to https of the same host (services/origins.py).
- Proxies are given (`{"http": url, "https": url, "no": "host,..."}`, as
  `urllib.request.getproxies()` names them), never read from the environment here.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import SplitResult, unquote, urljoin, urlsplit

from gitsessions.services.http1 import Connection, Response
from gitsessions.services.origins import CrossOriginRedirect, key_may_follow, refuse_cross_origin

MAX_ERROR_BODY = 1_000_000  # bytes of an error answer read for its message
MAX_REDIRECTS = 20  # as httpx
REDIRECTS = (301, 302, 303, 307, 308)
DRAIN_SECONDS = 0.5  # how long the end of a body after `[DONE]` may take to come
USER_AGENT = "gitsessions"


class WireError(Exception):
    """The request failed below the level of chat completions."""


class WireTimeout(WireError):
    """The deadline passed."""


class WireConnectionError(WireError):
    """No connection, or it broke (refused, DNS, reset, a body cut short); the message
    says why, as the socket layer did."""


class WireStatusError(WireError):
    """The server answered with an HTTP error status; `body` is its JSON (or text)."""

    def __init__(self, status: int, headers: Mapping[str, str], body: Any) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.headers = headers
        self.body = body


class WireRedirectRefused(WireError):
    """A POST redirected to another origin, not followed; `source` and `target` name
    both origins."""

    def __init__(self, refused: CrossOriginRedirect) -> None:
        super().__init__(str(refused))
        self.source = refused.source
        self.target = refused.target


class WireStreamError(WireError):
    """The server reported an error inside a stream (an `error` member in an event)."""


class Wire:
    """One server's chat-completions endpoint; one request at a time."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        proxies: Mapping[str, str],
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.base = urlsplit(base_url.rstrip("/"))
        self.api_key = api_key
        self.proxies = proxies
        self.headers = dict(headers or {})  # sent with every request (OpenAI-Project...)
        self._expires = [0.0]
        self._connection: Connection | None = None
        self._connected: tuple[str, str] | None = None  # the origin it goes to
        self._forward: dict[str, str] | None = None  # via a plain-HTTP proxy: its headers

    # -- requests --------------------------------------------------------------------

    def post_json(self, path: str, body: Any, seconds: float) -> Any:
        """POST `body` as JSON; the JSON answer (ValueError when it is not JSON)."""
        response = self._send("POST", path, body, seconds, stream=False)
        return json.loads(self._read_all(response))

    def post_stream(self, path: str, body: Any, seconds: float) -> EventStream:
        """POST `body` as JSON; the answer's server-sent events, one JSON value each."""
        response = self._send("POST", path, body, seconds, stream=True)
        return EventStream(self, response)

    def get_json(self, path: str, seconds: float) -> Any:
        response = self._send("GET", path, None, seconds, stream=False)
        return json.loads(self._read_all(response))

    def close(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()

    # -- internals -------------------------------------------------------------------

    def _send(self, method: str, path: str, body: Any, seconds: float, *, stream: bool) -> Response:
        """The answer's head, after following redirects as the SDK's httpx does: 307 and
        308 resend the request, 301 and 302 a POST and any 303 become a GET without
        body; the API key is not sent on to another origin (an upgrade to https on the
        same host aside). A POST is never redirected to another origin: that raises
        `WireRedirectRefused` before anything is sent there (services/origins.py)."""
        self._expires[0] = time.monotonic() + seconds
        data = None if body is None else json.dumps(body).encode("utf-8")
        headers = {
            "Authorization": f"Bearer {self.api_key}",
            "Accept": "text/event-stream" if stream else "application/json",
            "User-Agent": USER_AGENT,
            **self.headers,
        }
        if data is not None:
            headers["Content-Type"] = "application/json"
        origin, target = self.base, self.base.path + path
        for _ in range(MAX_REDIRECTS + 1):
            response = self._exchange(method, origin, target, headers, data)
            location = response.headers.get("location")
            if response.status not in REDIRECTS or not location:
                break
            here = f"{origin.scheme}://{origin.netloc}{target}"
            to = urlsplit(urljoin(here, location.strip()))
            try:
                refuse_cross_origin(method, here, to.geturl())
            except CrossOriginRedirect as refused:
                self.close()  # the redirect's body is left unread
                raise WireRedirectRefused(refused) from None
            self._read_all(response, MAX_ERROR_BODY)  # its body is not the answer
            if to.scheme not in ("http", "https") or not to.hostname:
                raise WireConnectionError(f"redirected to an unsupported URL: {to.scheme}://...")
            if response.status == 303 or (response.status in (301, 302) and method == "POST"):
                method, data = "GET", None
                headers.pop("Content-Type", None)
            if not key_may_follow(here, to.geturl()):
                headers.pop("Authorization", None)
            origin, target = to, to.path + (f"?{to.query}" if to.query else "")
        else:
            self.close()
            raise WireConnectionError("Exceeded maximum allowed redirects.")
        if response.status >= 400:
            raw = self._read_all(response, MAX_ERROR_BODY)
            self.close()
            raise WireStatusError(response.status, response.headers, _error_body(raw))
        return response

    def _exchange(
        self,
        method: str,
        origin: SplitResult,
        target: str,
        headers: dict[str, str],
        data: bytes | None,
    ) -> Response:
        """One request to `origin` and its answer's head, on the kept connection when
        it goes there (once more on a new one when the server had closed it)."""
        while True:
            reused = self._connection is not None and self._connected == _origin(origin)
            try:
                connection = self._connect(origin)
                sent = dict(headers)
                url = target
                host = origin.netloc.rpartition("@")[2]  # never a URL's user:password
                if self._forward is not None:  # a plain-HTTP proxy is sent the whole URL
                    url = f"http://{host}{target}"
                    sent.update(self._forward)
                return connection.request(method, url, host, sent, data)
            except (ConnectionResetError, BrokenPipeError) as error:  # RemoteDisconnected too
                self.close()
                if reused:
                    continue  # a kept connection the server closed meanwhile: once more
                raise WireConnectionError(_reason(error)) from error
            except (WireError, KeyboardInterrupt):
                self.close()
                raise
            except Exception as error:
                self.close()
                raise _wire_error(error) from error

    def _read_all(self, response: Response, limit: int | None = None) -> bytes:
        try:
            raw = response.read(limit)
        except KeyboardInterrupt:
            self.close()
            raise
        except Exception as error:
            self.close()
            raise _wire_error(error) from error
        self._done(response)
        return raw

    def _done(self, response: Response) -> None:
        """The answer was read to its end: keep the connection if the server does."""
        if not response.reusable:
            self.close()

    def _connect(self, origin: SplitResult) -> Connection:
        if self._connection is not None and self._connected == _origin(origin):
            return self._connection
        self.close()
        tls = _tls() if origin.scheme == "https" else None
        host, port = origin.hostname or "", origin.port or (443 if tls else 80)
        proxy = self._proxy(origin.scheme, host)
        self._forward = None
        if proxy is None:
            connection = Connection.open(host, port, self._expires, tls=tls)
        else:
            parts = urlsplit(proxy)
            if parts.scheme != "http" or not parts.hostname:
                raise WireConnectionError(
                    f"proxy {parts.scheme}://{parts.hostname} is not supported by the "
                    'built-in client (http:// proxies only); set client = "openai"'
                )
            auth = _proxy_auth(parts)
            at = (parts.hostname, parts.port or 80)
            if tls:  # a CONNECT tunnel through the proxy, TLS to the server inside it
                connection = Connection.open(*at, self._expires, tls=tls, tunnel=(host, port, auth))
            else:
                connection = Connection.open(*at, self._expires)
                self._forward = auth
        self._connection, self._connected = connection, _origin(origin)
        return connection

    def _proxy(self, scheme: str, host: str) -> str | None:
        proxy = self.proxies.get(scheme) or self.proxies.get("all")
        if not proxy:
            return None
        if self.proxies.get("no"):
            import urllib.request  # only with a proxy set

            if urllib.request.proxy_bypass_environment(host, {"no": self.proxies["no"]}):
                return None
        return proxy


class EventStream:
    """The data of each server-sent event, parsed as JSON, until `[DONE]` or the end of
    the body; `close()` (also on leaving a `with`) drops the connection unless the answer
    was read to its end."""

    def __init__(self, wire: Wire, response: Response) -> None:
        self._wire = wire
        self._response = response
        self._finished = False
        self.closed = False

    def __enter__(self) -> EventStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __iter__(self) -> Iterator[Any]:
        data: list[str] = []
        event: str | None = None
        try:
            for raw in self._lines():
                line = raw.decode("utf-8").rstrip("\r")
                if line:
                    field, _, value = line.partition(":")
                    value = value.removeprefix(" ")
                    if field == "data":
                        data.append(value)
                    elif field == "event":
                        event = value
                    continue
                if not data:
                    event = None
                    continue
                text, data = "\n".join(data), []
                if text.startswith("[DONE]"):
                    self._drain()
                    return
                yield _event(text, event)
                event = None
            if data and not "\n".join(data).startswith("[DONE]"):
                yield _event("\n".join(data), event)
            self._finished = True
            self._wire._done(self._response)
        except (WireError, ValueError, GeneratorExit, KeyboardInterrupt):
            self.close()
            raise
        except Exception as error:
            self.close()
            raise _wire_error(error) from error

    def _lines(self) -> Iterator[bytes]:
        """The body's lines as they arrive (without their `\\n`); a body cut short raises
        (`BodyCut`)."""
        pending: list[bytes] = []
        while piece := self._response.read1(65536):
            if b"\n" not in piece:
                pending.append(piece)  # a long line: joined once, when it ends
                continue
            pending.append(piece)
            *lines, rest = b"".join(pending).split(b"\n")
            pending = [rest] if rest else []
            yield from lines
        if pending:
            yield b"".join(pending)

    def _drain(self) -> None:
        """Read what follows `[DONE]` (the end of the chunked body) so the connection
        can serve the next request. A server that keeps sending, or is slow to end its
        body (more than DRAIN_SECONDS), is cut off instead: the reply is complete."""
        if self._response.will_close:
            return
        expires = self._wire._expires
        expires[0] = min(expires[0], time.monotonic() + DRAIN_SECONDS)
        try:
            self._response.read(65536)
        except OSError:  # TimeoutError too
            return
        if self._response.done:
            self._finished = True
            self._wire._done(self._response)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if not self._finished:
            self._wire.close()


def _event(text: str, event: str | None) -> Any:
    data = json.loads(text)
    if isinstance(data, Mapping) and data.get("error"):
        error = data["error"]
        message = error.get("message") if isinstance(error, Mapping) else None
        if not message or not isinstance(message, str):
            message = "An error occurred during streaming"
        raise WireStreamError(message)
    return data


def _error_body(raw: bytes) -> Any:
    """An error answer's body: its JSON's `error` member (or the whole JSON), else text."""
    text = raw.decode("utf-8", "replace").strip()
    try:
        body = json.loads(text)
    except ValueError:
        return text
    return body.get("error", body) if isinstance(body, Mapping) else body


def _wire_error(error: Exception) -> Exception:
    """What an exception below HTTP becomes."""
    if isinstance(error, TimeoutError):
        return WireTimeout(str(error) or "timed out")
    if isinstance(error, OSError):  # BodyCut, ProtocolError and Disconnected too
        return WireConnectionError(_reason(error))
    return error


def _reason(error: BaseException) -> str:
    return str(error) or type(error).__name__


def _origin(url: SplitResult) -> tuple[str, str]:
    return url.scheme, url.netloc.rpartition("@")[2].lower()


def _proxy_auth(parts: Any) -> dict[str, str]:
    if parts.username is None:
        return {}
    import base64

    pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
    return {"Proxy-Authorization": "Basic " + base64.b64encode(pair).decode("ascii")}


_context: Any = None


def _tls() -> Any:
    """The TLS context (the system's CA store), made at the first https request."""
    global _context
    if _context is None:
        import ssl

        _context = ssl.create_default_context()
    return _context
