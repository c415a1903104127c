"""Real servers on 127.0.0.1 that answer as a hostile model server might.

For the redirect tests, two HTTP servers: one that answers every request with a
redirect, and one, on another port (another origin), that records every request it gets
(method, path, headers, body) and answers it as a model server would.

    with recorder() as elsewhere, redirector(307, elsewhere.base) as here:
        ...  # a client pointed at f"{here.base}/v1"
        elsewhere.seen  # [] when nothing reached the other origin

`redirector(status, target)` sends `Location: target + path` (the request's own path),
so `/v1/chat/completions` goes to `{target}/v1/chat/completions`; a `same=True`
redirector sends `/old/...` to `/v1/...` on itself and answers `/v1/...` itself.

`raw_answer(data)` is a socket server that reads each request and writes `data` back,
byte for byte, then closes: for answers no HTTP server library would send.

    with raw_answer(b"HTTP/1.1 200 OK\r\n...") as base:  # "http://127.0.0.1:PORT"

`endless_answer(head, piece)` writes `head`, then `piece` without end: a stream, a
line, a body that never stops (tests/test_hostile_model_server.py).

Run as a program, a hostile MCP server over stdio (JSON-RPC written by hand, no SDK):

    python tests/hostile_servers.py mcp KIND [ARG]

KIND `endless`: its tool `flood` answers with one line that never ends; `huge`: with one
line of ARG MB (default 200); `sleep`: `flood` answers after `seconds` (an argument),
and the process writes its pid to $HOSTILE_PID_FILE; `invalid`: lines the SDK cannot
validate before every answer; `tools`: ARG tools (`t0`, `t1`, ...) in one listing;
`schema`: one tool of ARG properties; `names`: tools named by ARG, a JSON list.
"""

import json
import os
import socket
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, NamedTuple

REPLY = {
    "id": "x",
    "object": "chat.completion",
    "model": "gemma4",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "followed"},
         "finish_reason": "stop"}
    ],
    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
}  # fmt: skip
MODELS = {"object": "list", "data": [{"id": "m1", "object": "model", "created": 0,
                                      "owned_by": "x"}]}  # fmt: skip


class Seen(NamedTuple):
    method: str
    path: str
    headers: dict[str, str]  # names in lower case
    body: bytes


class Running(NamedTuple):
    base: str  # "http://127.0.0.1:PORT"
    seen: list[Seen]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen: list[Seen]
    status = 0  # a redirector's status; 0: answer every request (the recorder)
    target = ""

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _handle(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        headers = {name.lower(): value for name, value in self.headers.items()}
        self.seen.append(Seen(self.command, self.path, headers, body))
        if self.status and (self.target or self.path.startswith("/old/")):
            location = self.target + self.path
            if not self.target:  # the same origin, another path
                location = self.path.replace("/old/", "/v1/", 1)
            self.send_response(self.status)
            self.send_header("Location", location)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        answer = MODELS if self.path.endswith("/models") else REPLY
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = _handle


@contextmanager
def _serving(status: int, target: str) -> Iterator[Running]:
    seen: list[Seen] = []
    handler = type("Handler", (_Handler,), {"seen": seen, "status": status, "target": target})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield Running(f"http://127.0.0.1:{server.server_address[1]}", seen)
    finally:
        server.shutdown()
        thread.join()
        server.server_close()


def recorder() -> Any:
    """A server that records and answers every request."""
    return _serving(0, "")


def redirector(status: int, target: str = "", *, same: bool = False) -> Any:
    """A server that redirects every request to `target` (another origin), or with
    `same`, `/old/...` to `/v1/...` on itself."""
    assert same == (not target)
    return _serving(status, target)


@contextmanager
def raw_answer(data: bytes) -> Iterator[str]:
    """A server writing `data` as its answer to every request (read to its end first)."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.05)
    stopping = threading.Event()

    def serve() -> None:
        while not stopping.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            with conn, suppress(OSError):  # a client that hung up early
                conn.settimeout(10)
                _read_request(conn)
                conn.sendall(data)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stopping.set()
        thread.join()
        listener.close()


def _read_request(conn: socket.socket) -> None:
    received = b""
    while b"\r\n\r\n" not in received:
        piece = conn.recv(65536)
        if not piece:
            return
        received += piece
    head, _, body = received.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        piece = conn.recv(65536)
        if not piece:
            return
        body += piece


@contextmanager
def endless_answer(head: bytes, piece: bytes) -> Iterator[str]:
    """A server answering every request with `head`, then `piece` again and again until
    the client hangs up (or the server stops): an answer that never ends."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.05)
    stopping = threading.Event()

    def answer(conn: socket.socket) -> None:
        with conn, suppress(OSError):  # the client hung up: what is wanted
            conn.settimeout(10)
            _read_request(conn)
            conn.sendall(head)
            while not stopping.is_set():
                conn.sendall(piece)

    def serve() -> None:
        while not stopping.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            threading.Thread(target=answer, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stopping.set()
        thread.join()
        listener.close()


def _mcp_tools(kind: str, arg: str) -> list[dict[str, Any]]:
    schema = {"type": "object", "properties": {"seconds": {"type": "number"}}}
    if kind == "tools":
        return [{"name": f"t{n}", "description": f"Tool number {n}.", "inputSchema": schema}
                for n in range(int(arg))]  # fmt: skip
    if kind == "schema":
        properties = {f"p{n}": {"type": "string", "description": f"field {n}"}
                      for n in range(int(arg))}  # fmt: skip
        return [{"name": "wide", "inputSchema": {"type": "object", "properties": properties}}]
    if kind == "names":
        return [{"name": name, "inputSchema": schema} for name in json.loads(arg)]
    return [{"name": "flood", "description": "Answers badly.", "inputSchema": schema}]


def _mcp_answer(out: Any, kind: str, arg: str, id_: Any, arguments: dict[str, Any]) -> None:
    head = (
        '{"jsonrpc":"2.0","id":' + json.dumps(id_) + ',"result":{"content":[{"type":"text","text":"'
    )
    if kind == "endless":
        out.write(head.encode())
        while True:
            out.write(b"a" * 65536)
    if kind == "huge":
        out.write(head.encode())
        for _ in range(int(arg or 200) * 16):
            out.write(b"a" * 65536)
        out.write(b'"}]}}\n')
        out.flush()
        return
    if kind == "sleep":
        time.sleep(float(arguments.get("seconds") or 0))
    text = f"slept {arguments.get('seconds')}" if kind == "sleep" else "fine"
    _mcp_send(out, {"jsonrpc": "2.0", "id": id_,
                    "result": {"content": [{"type": "text", "text": text}]}})  # fmt: skip


def _mcp_send(out: Any, message: dict[str, Any]) -> None:
    out.write(json.dumps(message).encode() + b"\n")
    out.flush()


INVALID = [
    b"hello, not JSON at all",
    b'{"jsonrpc": "2.0", "method": 5}',
    b'{"jsonrpc": "2.0", "id": "x", "error": {"code": "bad"}}',
    b'{"jsonrpc": "2.0", "method": "notifications/progress", "params": {"x": 1}}',
]


def mcp_server(kind: str, arg: str) -> None:
    """A hostile MCP server on stdin/stdout (see the module's docstring)."""
    if os.environ.get("HOSTILE_PID_FILE"):
        with open(os.environ["HOSTILE_PID_FILE"], "a") as file:
            file.write(f"{os.getpid()}\n")
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        request = json.loads(line)
        id_, method = request.get("id"), request.get("method")
        if id_ is None:
            continue  # a notification
        if kind == "invalid":
            for junk in INVALID:
                out.write(junk + b"\n")
        if method == "initialize":
            version = request["params"]["protocolVersion"]
            result: dict[str, Any] = {
                "protocolVersion": version,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "hostile", "version": "1"},
            }
        elif method == "tools/list":
            result = {"tools": _mcp_tools(kind, arg)}
        elif method == "tools/call":
            _mcp_answer(out, kind, arg, id_, request["params"].get("arguments") or {})
            continue
        else:
            result = {}
        _mcp_send(out, {"jsonrpc": "2.0", "id": id_, "result": result})


if __name__ == "__main__":
    if sys.argv[1:2] == ["mcp"]:
        mcp_server(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else "")
