"""The model client's HTTP below chat completions, as the SDK (httpx) does it, against
real servers on 127.0.0.1: plain-HTTP, CONNECT and SOCKS5 proxies and `no_proxy`, TLS
with a certificate trusted through SSL_CERT_FILE, a kept connection the server closed,
bodies framed every way, redirects, over-long lines of the answer's head. What the
replies and errors mean is tests/test_model_client.py's."""

import json
import select
import shutil
import socket
import ssl
import subprocess
import threading
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from gitsessions.services.model.errors import EndpointUnreachable, RedirectRefused
from gitsessions.services.model.model import ModelClient
from gitsessions.services.settings.config import resolve_model_settings
from tests.fake_openai import FakeOpenAI, fake_openai  # noqa: F401  (a pytest fixture)
from tests.hostile_servers import raw_answer, redirector

USER = [{"role": "user", "content": "hi"}]


class _Proxy(BaseHTTPRequestHandler):
    """A forwarding proxy for plain HTTP: the request line names the whole URL."""

    protocol_version = "HTTP/1.1"
    seen: ClassVar[list[tuple[str, str | None]]] = []
    target = ""

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.seen.append((self.path, self.headers.get("Proxy-Authorization")))
        path = self.path.split("/v1", 1)[1]
        forward = urllib.request.Request(self.target + path, body, method="POST")
        direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with direct.open(forward, timeout=10) as answer:
            data = answer.read()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def proxy(fake_openai: FakeOpenAI) -> Iterator[tuple[str, type[_Proxy]]]:  # noqa: F811
    handler = type("Proxy", (_Proxy,), {"seen": [], "target": fake_openai.base_url})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://user:p%40ss@127.0.0.1:{server.server_address[1]}", handler
    server.shutdown()
    server.server_close()


ENVIRONMENT: list[pytest.MonkeyPatch] = []  # the test's, set by the fixture below


@pytest.fixture(autouse=True)
def environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    ENVIRONMENT.append(monkeypatch)
    yield
    ENVIRONMENT.pop()


def client_for(base_url: str, env: dict[str, str]) -> ModelClient:
    """A client of `base_url` with `env` in the process's environment for the test's
    rest: the SDK's HTTP library reads the proxy variables from there itself."""
    for name, value in env.items():
        ENVIRONMENT[-1].setenv(name, value)
    settings = resolve_model_settings({"base_url": base_url}, {"OPENAI_API_KEY": "k", **env}, {})
    return ModelClient(settings)


def test_requests_go_through_an_http_proxy(
    proxy: tuple[str, type[_Proxy]],
    fake_openai: FakeOpenAI,  # noqa: F811
) -> None:
    url, handler = proxy
    fake_openai.reply(content="via the proxy")
    # the host does not resolve: only the proxy can reach it
    with client_for("http://model.invalid:9/v1", {"http_proxy": url}) as client:
        assert client.complete(USER).message["content"] == "via the proxy"
    [(path, auth)] = handler.seen
    assert path == "http://model.invalid:9/v1/chat/completions"
    assert auth == "Basic dXNlcjpwQHNz"  # user:p@ss


def test_no_proxy_bypasses_the_proxy(
    proxy: tuple[str, type[_Proxy]],
    fake_openai: FakeOpenAI,  # noqa: F811
) -> None:
    url, handler = proxy
    env = {"HTTP_PROXY": url, "NO_PROXY": "localhost,127.0.0.1"}
    with client_for(fake_openai.base_url, env) as client:
        assert client.complete(USER).message["content"] == "ok"
    assert handler.seen == []


class _Socks5(BaseHTTPRequestHandler):
    """A SOCKS5 proxy (no authentication, CONNECT only) that relays bytes both ways."""

    targets: ClassVar[list[tuple[str, int]]] = []

    def handle(self) -> None:
        conn = self.connection
        _, methods = conn.recv(2)
        conn.recv(methods)
        conn.sendall(b"\x05\x00")
        _version, _command, _, kind = conn.recv(4)
        name = kind == 3  # else an IPv4 address
        host = conn.recv(conn.recv(1)[0]).decode() if name else socket.inet_ntoa(conn.recv(4))
        port = int.from_bytes(conn.recv(2), "big")
        self.targets.append((host, port))
        upstream = socket.create_connection(("127.0.0.1", port))
        conn.sendall(b"\x05\x00\x00\x01" + socket.inet_aton("127.0.0.1") + b"\x00\x00")
        relay(conn, upstream)


def relay(conn: socket.socket, upstream: socket.socket) -> None:
    sockets = [conn, upstream]
    while True:
        readable, _, _ = select.select(sockets, [], [], 5)
        if not readable:
            break
        for sock in readable:
            data = sock.recv(65536)
            if not data:
                upstream.close()
                return
            (upstream if sock is conn else conn).sendall(data)


def test_requests_go_through_a_socks5_proxy(fake_openai: FakeOpenAI) -> None:  # noqa: F811
    handler = type("Socks", (_Socks5,), {"targets": []})
    proxy = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    try:
        fake_openai.reply(content="via socks")
        url = f"http://model.invalid:{fake_openai.port}/v1"  # only the proxy reaches it
        env = {"all_proxy": f"socks5h://127.0.0.1:{proxy.server_address[1]}"}
        with client_for(url, env) as client:
            assert client.complete(USER).message["content"] == "via socks"
        assert handler.targets == [("model.invalid", fake_openai.port)]
    finally:
        proxy.shutdown()
        proxy.server_close()


class _ClosesAfterOne(BaseHTTPRequestHandler):
    """Answers as if keeping the connection, then closes it: an idle timeout."""

    protocol_version = "HTTP/1.1"
    connections: ClassVar[list[int]] = []

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self.connections.append(id(self.connection))
        data = json.dumps(
            {
                "model": "m",
                "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": "hi"},
                     "finish_reason": "stop"}
                ],
            }
        ).encode()  # fmt: skip
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        self.close_connection = True  # without saying so


def test_a_connection_the_server_dropped_is_replaced() -> None:
    handler = type("Closing", (_ClosesAfterOne,), {"connections": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        with client_for(url, {}) as client:
            for _ in range(3):
                assert client.complete(USER).message["content"] == "hi"
        assert len(handler.connections) == 3
    finally:
        server.shutdown()
        server.server_close()


class _DropsFirst(_ClosesAfterOne):
    """Closes the first `drops` requests' connections unanswered (a kept connection the
    server timed out just as the request went out), then answers."""

    drops = 1
    seen: ClassVar[list[int]] = []

    def do_POST(self) -> None:
        self.seen.append(1)
        if len(self.seen) <= self.drops:
            self.rfile.read(int(self.headers["Content-Length"]))
            self.close_connection = True
            return
        super().do_POST()


@pytest.mark.parametrize("drops", [1, 2])
def test_a_request_the_server_dropped_unanswered_is_sent_once_more(drops: int) -> None:
    handler = type("Drops", (_DropsFirst,), {"connections": [], "seen": [], "drops": drops})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        with client_for(url, {}) as client:
            if drops == 1:
                assert client.complete(USER).message["content"] == "hi"
            else:  # once more only: the second drop is the error
                with pytest.raises(EndpointUnreachable, match="cannot reach the model server"):
                    client.complete(USER)
        assert len(handler.seen) == 2
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def tls_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    """The fake server behind TLS, with a certificate for `localhost` made by stock
    openssl and trusted through SSL_CERT_FILE (OpenSSL's own variable)."""
    if shutil.which("openssl") is None:
        pytest.skip("no openssl to make a certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    server = FakeOpenAI()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    httpd = server._httpd
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    with server:
        yield server


class _Tunnel(BaseHTTPRequestHandler):
    """A proxy that answers CONNECT and then relays bytes both ways."""

    tunnels: ClassVar[list[str]] = []

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_CONNECT(self) -> None:
        self.tunnels.append(self.path)
        host, port = self.path.rsplit(":", 1)
        upstream = socket.create_connection((host, int(port)))
        self.send_response(200, "Connection established")
        self.end_headers()
        relay(self.connection, upstream)


def test_https_directly_and_through_a_connect_tunnel(tls_server: FakeOpenAI) -> None:
    url = f"https://localhost:{tls_server.port}/v1"
    tls_server.reply(content="over TLS")
    tls_server.reply(content="streamed over TLS")
    with client_for(url, {}) as client:
        assert client.complete(USER).message["content"] == "over TLS"
        assert client.complete(USER, stream=True).message["content"] == "streamed over TLS"
    handler = type("Tunnel", (_Tunnel,), {"tunnels": []})
    proxy = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    try:
        env = {"HTTPS_PROXY": f"http://127.0.0.1:{proxy.server_address[1]}"}
        tls_server.reply(content="through the tunnel")
        with client_for(url, env) as client:
            assert client.complete(USER).message["content"] == "through the tunnel"
        assert handler.tunnels == [f"localhost:{tls_server.port}"]
    finally:
        proxy.shutdown()
        proxy.server_close()


def test_an_untrusted_certificate_is_refused(
    tls_server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SSL_CERT_FILE")
    url = f"https://localhost:{tls_server.port}/v1"
    with client_for(url, {}) as client, pytest.raises(EndpointUnreachable, match="CERTIFICATE"):
        client.complete(USER)


def test_a_plain_http_client_trusts_no_certificate(tls_server: FakeOpenAI) -> None:
    """An http:// server's client loads no trust store (model.tls_for): TLS that a
    redirect leads it to fails closed, even to a certificate SSL_CERT_FILE trusts."""
    tls_server.models = ["m1"]
    with redirector(302, f"https://localhost:{tls_server.port}") as here:
        refused = pytest.raises(EndpointUnreachable, match="CERTIFICATE_VERIFY_FAILED")
        with client_for(f"{here.base}/v1", {}) as client, refused:
            client.list_models()
        assert [seen.path for seen in here.seen] == ["/v1/models"]
    assert tls_server.model_lists == 0
    with client_for(f"https://localhost:{tls_server.port}/v1", {}) as client:
        assert client.list_models() == ["m1"]  # the same server, trusted over https://


class _LingersAfterDone(BaseHTTPRequestHandler):
    """A stream whose chunked body never ends after `data: [DONE]`."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        chunk = {"model": "m", "choices": [{"index": 0, "delta": {"content": "hi"},
                                            "finish_reason": "stop"}]}  # fmt: skip
        for line in (f"data: {json.dumps(chunk)}\n\n", "data: [DONE]\n\n"):
            data = line.encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
        self.server.release.wait(60)  # type: ignore[attr-defined]  # no last chunk meanwhile


@pytest.mark.timeout(30)  # waiting for the body's end would take the server's 60 s
def test_a_stream_that_lingers_after_done_is_not_waited_for() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _LingersAfterDone)
    server.daemon_threads = True
    server.release = threading.Event()  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        with client_for(url, {}) as client:
            assert client.complete(USER, stream=True).message["content"] == "hi"
    finally:
        server.release.set()  # type: ignore[attr-defined]
        server.shutdown()
        server.server_close()


def test_a_header_that_could_inject_lines_is_refused_without_showing_it(
    fake_openai: FakeOpenAI,  # noqa: F811
) -> None:
    settings = resolve_model_settings(
        {"base_url": fake_openai.base_url}, {"OPENAI_API_KEY": "sk-a\r\nX-Evil: 1"}, {}
    )
    with ModelClient(settings) as client, pytest.raises(EndpointUnreachable) as caught:
        client.complete(USER)
    assert "Authorization header" in str(caught.value)
    assert "sk-a" not in str(caught.value) and "Evil" not in str(caught.value)
    assert fake_openai.requests == []


REPLY = {
    "model": "m",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "framed"}, "finish_reason": "stop"}
    ],
    "usage": {"prompt_tokens": 3, "completion_tokens": 1},
}


class _Framed(BaseHTTPRequestHandler):
    """A JSON answer framed as `framing` says: chunked (with a trailer and a 100
    Continue first), or ended by closing the connection (HTTP/1.0, no length)."""

    protocol_version = "HTTP/1.1"
    framing = "chunked"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        data = json.dumps(REPLY).encode()
        if self.framing == "chunked":
            self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for piece in (data[:10], data[10:]):
                self.wfile.write(b"%x;ext=1\r\n%s\r\n" % (len(piece), piece))
            self.wfile.write(b"0\r\nX-Trailer: yes\r\n\r\n")
        else:
            self.wfile.write(b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n" + data)
            self.close_connection = True


@pytest.mark.parametrize("framing", ["chunked", "close"])
def test_bodies_framed_every_way_are_read_whole(framing: str) -> None:
    handler = type("Framed", (_Framed,), {"framing": framing})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        with client_for(url, {}) as client:
            for _ in range(2):  # the chunked one keeps its connection for the second
                reply = client.complete(USER)
                assert reply.message["content"] == "framed" and reply.usage is not None
    finally:
        server.shutdown()
        server.server_close()


class _Redirects(BaseHTTPRequestHandler):
    """/old/...: 308 to /v1/... here; /away/...: 307 to `elsewhere`; /v1/chat/completions:
    the answer, each request's method and Authorization recorded."""

    protocol_version = "HTTP/1.1"
    seen: ClassVar[list[tuple[str, str, str | None]]] = []
    elsewhere = ""

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _redirect(self, status: int, location: str) -> None:
        self.send_response(status)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.seen.append(("POST", self.path, self.headers.get("Authorization")))
        if self.path.startswith("/old/"):
            self._redirect(308, self.path.replace("/old/", "/v1/", 1))
        elif self.path.startswith("/away/"):
            self._redirect(307, self.elsewhere + self.path.removeprefix("/away"))
        else:
            data = json.dumps(REPLY).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)


def test_redirects_are_followed_on_their_origin_only(
    fake_openai: FakeOpenAI,  # noqa: F811
) -> None:
    handler = type("Redirects", (_Redirects,), {"seen": [], "elsewhere": fake_openai.base_url})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        here = f"http://127.0.0.1:{server.server_address[1]}"
        with client_for(f"{here}/old", {}) as client:
            assert client.complete(USER).message["content"] == "framed"
        assert handler.seen == [
            ("POST", "/old/chat/completions", "Bearer k"),
            ("POST", "/v1/chat/completions", "Bearer k"),  # same origin: the key goes along
        ]
        refused = pytest.raises(RedirectRefused, match="refusing to send the conversation")
        with client_for(f"{here}/away", {}) as client, refused:  # another origin: not followed
            client.complete(USER)
        assert fake_openai.requests == [] and fake_openai.authorizations == []
    finally:
        server.shutdown()
        server.server_close()


def test_a_base_url_with_credentials_never_sends_them_as_the_host(
    proxy: tuple[str, type[_Proxy]],
    fake_openai: FakeOpenAI,  # noqa: F811
) -> None:
    direct = fake_openai.base_url.replace("http://", "http://me:s3cret@")
    with client_for(direct, {}) as client:
        assert client.complete(USER).message["content"] == "ok"
    assert fake_openai.headers[-1]["Host"] == fake_openai.base_url.split("/")[2]
    url, handler = proxy
    with client_for("http://me:s3cret@model.invalid:9/v1", {"http_proxy": url}) as client:
        client.complete(USER)
    [(path, _auth)] = handler.seen
    assert path == "http://model.invalid:9/v1/chat/completions"


MAX_LINE = 64 * 1024
OVER_HEAD = 200 * 1024  # past what httpcore lets h11 gather of an answer's head (100 KiB)


def overlong_head(where: str, size: int, padding: bytes = b"X-Injected: yes") -> bytes:
    """An answer whose status line or first header line is `size` bytes and one, then
    `padding` (that a line cut at a cap would read as a header of its own)."""
    over = size + 1
    status = b"HTTP/1.1 200 OK\r\n"
    line = b"X-Pad: " + b"a" * (over - 7) + padding + b"\r\n"
    if where == "status line":
        status, line = b"HTTP/1.1 200 " + b"O" * (over - 13) + padding + b"\r\n", b""
    body = json.dumps(REPLY).encode()
    framing = b"Content-Type: application/json\r\nContent-Length: %d\r\n" % len(body)
    return status + line + framing + b"Connection: close\r\n\r\n" + body


def test_a_header_line_over_64_kib_is_read_whole_not_split() -> None:
    """Its tail is never read as a header a server could inject (h11 parses whole
    lines): the answer reads as it was sent."""
    answer = raw_answer(overlong_head("header line", MAX_LINE))
    with answer as base, client_for(f"{base}/v1", {}) as client:
        assert client.complete(USER).message["content"] == "framed"


@pytest.mark.parametrize("where", ["status line", "header line"])
def test_a_line_of_the_answer_head_over_its_cap_is_one_error(where: str) -> None:
    refused = pytest.raises(EndpointUnreachable)
    answer = raw_answer(overlong_head(where, OVER_HEAD))
    with answer as base, client_for(f"{base}/v1", {}) as client, refused as caught:
        client.complete(USER)
    message = str(caught.value)
    assert "\n" not in message and base in message


def test_a_chunk_size_line_over_its_cap_is_an_error_not_read_as_data() -> None:
    body = json.dumps(REPLY).encode()
    chunk = b"%x;ext=" % len(body) + b"x" * OVER_HEAD + b"\r\n" + body + b"\r\n0\r\n\r\n"
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
    refused = pytest.raises(EndpointUnreachable)
    answer = raw_answer(head + b"\r\n" + chunk)
    with answer as base, client_for(f"{base}/v1", {}) as client, refused as caught:
        client.complete(USER)
    assert "\n" not in str(caught.value)
