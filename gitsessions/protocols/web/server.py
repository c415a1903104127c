"""The web view's HTTP server: stdlib `ThreadingHTTPServer` on 127.0.0.1, read-only.

Invariants (the door, as Jupyter keeps it):
- Every request must name this server in its Host header (`127.0.0.1:PORT` or
  `localhost:PORT`, nothing else: a page of another site that rebinds its name to
  127.0.0.1 is refused) and carry the token: in the URL (`?token=`, once: answered with a
  cookie named for the port, HttpOnly, SameSite=Strict, and a redirect to the same page
  without it) or in that cookie. Anything else gets 403 and one line, before any page is built.
- Only GET and HEAD; every answer says `Cache-Control: no-store`, `nosniff`, and a
  Content-Security-Policy allowing no script at all, no frames around it, styles and
  images from itself only.
- Pages are built one at a time under the source's lock (the store is read by one
  thread at a time); a page's error is one line in a page of its own, escaped.
"""

import hmac
import secrets
from http import HTTPStatus
from http.cookies import CookieError, SimpleCookie
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib.resources import files
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from gitsessions.protocols.web.markup import e, page
from gitsessions.protocols.web.source import Source
from gitsessions.values.errors import GitsessionsError

COOKIE = "gitsessions_view"  # and the port: a browser sends one host's cookies to every port
POLICY = (
    "default-src 'none'; style-src 'self'; img-src 'self' data:; script-src 'none'; "
    "frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
)
HEADERS = {
    "Content-Security-Policy": POLICY,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "Cross-Origin-Resource-Policy": "same-origin",
}
TIMEOUT = 30  # seconds a connection may stay silent


def stylesheet() -> bytes:
    """The one stylesheet, shipped in the package."""
    return files("gitsessions.protocols.web").joinpath("assets", "view.css").read_bytes()


class ViewServer(ThreadingHTTPServer):
    """The server: `url` is what to open (the token in it)."""

    daemon_threads = True

    def __init__(self, source: Source, port: int = 0, token: str | None = None) -> None:
        super().__init__(("127.0.0.1", port), Handler)
        self.source = source
        self.token = token or secrets.token_urlsafe(32)
        self.css = stylesheet()
        self.hosts = {f"127.0.0.1:{self.port}", f"localhost:{self.port}"}
        self.cookie_name = f"{COOKIE}_{self.port}"  # two views at once keep their own

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A connection that broke (a browser closing it mid-answer) ends quietly: the
        server prints nothing, and the next request is served."""

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    def url(self, path: str = "/") -> str:
        return f"http://127.0.0.1:{self.port}{path}?{urlencode({'token': self.token})}"


def _number(query: dict[str, list[str]], key: str) -> int:
    text = (query.get(key) or ["0"])[0]
    return min(int(text), 10**9) if text.isdigit() and len(text) < 12 else 0


class Handler(BaseHTTPRequestHandler):
    server: ViewServer
    timeout = TIMEOUT
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Nothing is printed: the CLI owns the terminal."""

    def do_HEAD(self) -> None:
        self.do_GET(body=False)

    def do_GET(self, body: bool = True) -> None:
        status, headers, content = self.answer()
        self.send_response(status)
        for key, value in {**HEADERS, **headers}.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(content)))
        self.end_headers()
        if body:
            self.wfile.write(content)

    def answer(self) -> tuple[int, dict[str, str], bytes]:
        """(status, headers, body) for this request: the door first, then the page."""
        if self.headers.get("Host", "") not in self.server.hosts:
            return self.refuse("this server answers only to 127.0.0.1 and localhost")
        url = urlsplit(self.path)
        try:
            query = parse_qs(url.query, max_num_fields=16)
        except ValueError:
            line = b"bad request: too many query fields\n"
            return HTTPStatus.BAD_REQUEST, {"Content-Type": "text/plain; charset=utf-8"}, line
        token = self.server.token
        given = (query.get("token") or [""])[0]
        if given:
            if not hmac.compare_digest(given.encode(), token.encode()):
                return self.refuse("wrong token")
            rest = {k: v for k, v in query.items() if k != "token"}
            target = url.path + ("?" + urlencode(rest, doseq=True) if rest else "")
            cookie = f"{self.server.cookie_name}={token}; HttpOnly; SameSite=Strict; Path=/"
            return HTTPStatus.SEE_OTHER, {"Location": target, "Set-Cookie": cookie}, b""
        if not hmac.compare_digest(self.cookie().encode(), token.encode()):
            return self.refuse("no token: open the URL `gitsessions view` printed")
        if url.path == "/assets/view.css":
            return HTTPStatus.OK, {"Content-Type": "text/css; charset=utf-8"}, self.server.css
        try:
            with self.server.source.lock:
                title, html = route(self.server.source, url.path, query)
            status = HTTPStatus.OK
        except GitsessionsError as error:
            title, html = "not found", f'<p class="error">{e(str(error).splitlines()[0])}</p>'
            status = HTTPStatus.NOT_FOUND
        except NotFound:
            title, html = "not found", f'<p class="error">no page {e(url.path)}</p>'
            status = HTTPStatus.NOT_FOUND
        except Exception as error:  # the last line: one page failing never stops the server
            title, html = "error", f'<p class="error">{e(type(error).__name__)}: {e(error)}</p>'
            status = HTTPStatus.INTERNAL_SERVER_ERROR
        content = page(title, html).encode("utf-8", "replace")
        return status, {"Content-Type": "text/html; charset=utf-8"}, content

    def cookie(self) -> str:
        try:
            jar = SimpleCookie(self.headers.get("Cookie", ""))
        except CookieError:
            return ""
        morsel = jar.get(self.server.cookie_name)
        return morsel.value if morsel is not None else ""

    def refuse(self, why: str) -> tuple[int, dict[str, str], bytes]:
        line = f"forbidden: {why}\n".encode()
        return HTTPStatus.FORBIDDEN, {"Content-Type": "text/plain; charset=utf-8"}, line


class NotFound(Exception):
    """No page at this path."""


def route(source: Source, path: str, query: dict[str, list[str]]) -> tuple[str, str]:
    """(title, body) of the page at `path`."""
    # the pages read the store (dulwich) and the search index (sqlite): imported on the
    # first page, so the server is listening as soon as `list` would have printed
    from gitsessions.protocols.web import index_page, session_page, turn_page

    parts = [p for p in path.split("/") if p]
    if not parts:
        archived = (query.get("archived") or [""])[0] == "1"
        text = (query.get("q") or [""])[0][:500]
        return index_page.render(source, _number(query, "page"), archived, text)
    if parts[0] != "s" or len(parts) not in (2, 4) or not parts[1].isalnum():
        raise NotFound(path)
    session = parts[1][:64]
    if len(parts) == 2:
        since = (query.get("log") or [""])[0][:40]
        return session_page.render(source, session, _number(query, "at"), since)
    if not parts[3].isdigit() or len(parts[3]) > 9:
        raise NotFound(path)
    if parts[2] == "turn":
        return turn_page.render_turn(source, session, int(parts[3]))
    if parts[2] == "compaction":
        return turn_page.render_compaction(source, session, int(parts[3]))
    raise NotFound(path)
