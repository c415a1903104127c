"""The builtin client's HTTP below chat completions (services/wire.py): plain-HTTP
proxies and `no_proxy`, kept-alive connections, and a kept connection the server closed
meanwhile. What the replies and errors mean is tests/test_model_client.py's (run
against both clients)."""

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest

from gitsessions.services.config import resolve_model_settings
from gitsessions.services.model import EndpointUnreachable, ModelClient
from gitsessions.services.wire import Wire
from tests.fake_openai import FakeOpenAI, fake_openai  # noqa: F401  (a pytest fixture)

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
        forwarded = Wire(self.target, "sk-forwarded", {}).post_json(path, json.loads(body), 10)
        data = json.dumps(forwarded).encode()
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


def client_for(base_url: str, env: dict[str, str]) -> ModelClient:
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


def test_an_unsupported_proxy_scheme_is_named() -> None:
    env = {"https_proxy": "socks5://127.0.0.1:1080"}
    client = client_for("https://model.invalid/v1", env)
    with client, pytest.raises(EndpointUnreachable, match=r'socks5.*set client = "openai"'):
        client.complete(USER)


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


def test_connections_are_kept_and_a_dropped_one_is_replaced(
    fake_openai: FakeOpenAI,  # noqa: F811
) -> None:
    with client_for(fake_openai.base_url, {}) as client:
        client.complete(USER)
        kept = client._wire._connection
        assert kept is not None and kept.sock is not None
        client.complete(USER)
        assert client._wire._connection is kept  # the same connection served both
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
