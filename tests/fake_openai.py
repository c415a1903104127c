"""A scripted, OpenAI-compatible HTTP server on 127.0.0.1 for tests. Never reaches the network.

It is a real server (stdlib `ThreadingHTTPServer`, port 0), so the real `openai` client,
or a `gitsessions` subprocess given `--base-url server.base_url`, talks to it over HTTP.

    with FakeOpenAI() as server:           # or the `fake_openai` pytest fixture below
        server.base_url                    # "http://127.0.0.1:PORT/v1"
        server.reply(content="hi", usage=(10, 5))
        server.reply(tool_calls=[{"name": "read_file", "arguments": {"path": "a.txt"}}])
        server.fail(status=500)            # answers the next request with an error
        server.fail(429, retry_after="2")  #   with a Retry-After header
        server.delay(2.0)                  # waits 2 s, then serves the next queued item
        server.malformed()                 # a 200 whose body is not valid JSON / SSE
        server.responder = fn              # fn(request_json) -> str | dict | Reply
        server.requests                    # every POSTed body (parsed JSON), in order
        server.strict = True               # reject (HTTP 400) messages whose roles do
                                           #   not alternate, as strict chat templates do
        server.rejected                    # the requests strict mode refused
        server.authorizations              # the Authorization header of each POST
        server.headers                     # all headers of each POST (a dict each)

Scripted items are served first-in first-out, one per `POST /v1/chat/completions`. When the
queue is empty the server calls `responder` if set (a `str` is the reply content, a `dict`
holds `reply()` keyword arguments), otherwise answers with `default` (content "ok").
Tool calls may be given in the standard shape (`id`, `type`, `function.name`,
`function.arguments`) or as `{"name": ..., "arguments": dict-or-str}`; missing ids become
`call_<n>`. A request with `"stream": true` is answered as server-sent events: a role
chunk, the content in a few pieces, each tool call as an id/name chunk followed by its
arguments in two pieces, a finish chunk, a usage chunk (`choices: []`) when
`stream_options.include_usage` is set, then `data: [DONE]`. `GET /v1/models` lists
`server.models` (once `server.models_held`, an event, is set, when a test holds it:
`hold_models()`); `server.model_lists` counts those answered. Anything else is a 404.

The context the server holds, as each kind of server says it, once `server.context` is
set to (kind, tokens): "llama.cpp" answers `GET /props` with
`default_generation_settings.n_ctx` (as llama.cpp's server does), "llama.cpp-new" with a
top-level `n_ctx`, "ollama" answers `POST /api/show` with
`model_info["llama.context_length"]` (and `parameters`, `server.num_ctx` set: its
`num_ctx`), "vllm" adds `max_model_len` to each `GET /v1/models` entry. Those two routes
are a 404 otherwise; `server.context_asks` lists each one asked ("GET /props",
"POST /api/show"), never in `requests`.

`POST /v1/responses` (the Responses API, all Codex CLI speaks) serves the same queue: a
`Reply` becomes one `message` output item (its content as `output_text`) and one
`function_call` item per tool call; with `"stream": true` as the typed events
(`response.created`, `response.output_item.added`, `response.output_text.delta` in a few
pieces, `response.function_call_arguments.delta` in two, the `.done` events,
`response.completed` with the whole response and its usage), each as `event:` and
`data:` lines. Its requests go to `server.requests` too (their `input`, not `messages`:
strict mode does not apply); a `Failure` is an error answer as for chat completions;
the chat-only fault modes (`cut`, `chunked`, `trickle`, `hold`) are not served there.

Strict mode (`FakeOpenAI(strict=True)`; the `server` fixture of conftest.py is strict)
answers like Gemma, Mistral or Llama templates served by vLLM or llama.cpp: system
messages only first, then user and assistant in turn, starting with a user message; an
assistant's tool calls are followed by their tool results, after which the assistant or
the user may speak. Anything else gets HTTP 400 "roles must alternate ...".

Fault modes, as `reply()` keywords (streamed or not unless said):

    server.reply(content="abc", cut="content")     # stream: stop after the first content
    server.reply(tool_calls=[...], cut="arguments")  #   piece / inside the last call's
                                                   #   arguments: no finish, no [DONE]
    server.reply(..., chunked=True)                # stream framed as chunked transfer
                                                   #   encoding (a cut then misses the
                                                   #   final 0-length chunk)
    server.reply(content="...", trickle=0.5)       # send the body one byte every 0.5 s
    server.reply(..., trickle=0.5, trickle_headers=True)  # not streamed: the status line
                                                   #   and headers too
    server.reply(content="...", hold=event)        # stream: wait for `event` (at most
                                                   #   60 s) after the first content piece
                                                   #   (`hold_at=0`: before any event);
                                                   #   not streamed: before the answer
    server.progress                                # [bytes sent, bytes in the body] of
                                                   #   each trickled answer, live
    server.reply(tool_calls=[{"id": "x", ...}, {"id": "x", ...}])  # ids may repeat

A cut or trickled answer closes the connection when done; a client that hangs up
mid-trickle ends it quietly.
"""

import json
import socket
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


@dataclass
class Reply:
    """One assistant answer: text and/or tool calls, with the usage the server reports."""

    content: str | None = "ok"
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    usage: tuple[int, int] | None = (10, 5)
    finish_reason: str | None = None
    model: str | None = None
    cut: str | None = None  # "content" or "arguments": where a stream stops early
    chunked: bool = False
    trickle: float | None = None  # seconds between bytes
    trickle_headers: bool = False
    hold: threading.Event | None = None  # a stream waits after `hold_at` events, else the answer
    hold_at: int = 2  # the role's, then the first content piece's


@dataclass
class Failure:
    """An HTTP error answer with an OpenAI-style error body."""

    status: int
    message: str
    retry_after: str | None = None


@dataclass
class Delay:
    """Wait, then serve the next item (or the default)."""

    seconds: float


@dataclass
class Malformed:
    """A 200 answer whose body is not what the client can parse."""

    body: str


Responder = Callable[[dict[str, Any]], "str | dict[str, Any] | Reply"]


def _tool_call(call: dict[str, Any], n: int) -> dict[str, Any]:
    function = call.get("function", call)
    arguments = function.get("arguments", "{}")
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments)
    return {
        "id": call.get("id", f"call_{n}"),
        "type": "function",
        "function": {"name": function["name"], "arguments": arguments},
    }


def _pieces(text: str, count: int = 3) -> list[str]:
    size = max(1, -(-len(text) // count))
    return [text[i : i + size] for i in range(0, len(text), size)]


class FakeOpenAI:
    """The scripted server. See the module docstring for the API."""

    def __init__(self, default: Reply | None = None, strict: bool = False) -> None:
        self.default = default or Reply()
        self.strict = strict
        self.rejected: list[dict[str, Any]] = []
        self.responder: Responder | None = None
        self.models: list[str] = ["gemma4", "fake-model"]
        self.models_held: threading.Event | None = None
        self.model_lists = 0
        self.context: tuple[str, int] | None = None
        self.num_ctx: int | None = None
        self.context_asks: list[str] = []
        self.requests: list[dict[str, Any]] = []
        self.authorizations: list[str | None] = []
        self.headers: list[dict[str, str]] = []
        self.progress: list[list[int]] = []
        self._queue: deque[Reply | Failure | Delay | Malformed] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.fake = self  # type: ignore[attr-defined]
        self._thread: threading.Thread | None = None

    # -- scripting -------------------------------------------------------------------

    def reply(
        self,
        content: str | None = None,
        tool_calls: list[dict[str, Any]] | None = None,
        usage: tuple[int, int] | None = (10, 5),
        finish_reason: str | None = None,
        model: str | None = None,
        cut: str | None = None,
        chunked: bool = False,
        trickle: float | None = None,
        trickle_headers: bool = False,
        hold: threading.Event | None = None,
        hold_at: int = 2,
    ) -> None:
        """Queue one assistant answer (see the module docstring for the fault modes)."""
        assert cut in (None, "content", "arguments"), cut
        self._push(
            Reply(
                content,
                list(tool_calls or []),
                usage,
                finish_reason,
                model,
                cut=cut,
                chunked=chunked,
                trickle=trickle,
                trickle_headers=trickle_headers,
                hold=hold,
                hold_at=hold_at,
            )
        )

    def fail(
        self, status: int = 500, message: str = "scripted failure", retry_after: str | None = None
    ) -> None:
        """Queue an HTTP error answer (with a Retry-After header when given)."""
        self._push(Failure(status, message, retry_after))

    def delay(self, seconds: float) -> None:
        """Queue a pause before the next answer (for client timeouts)."""
        self._push(Delay(seconds))

    def malformed(self, body: str = "{this is not json") -> None:
        """Queue a 200 answer with an unparseable body."""
        self._push(Malformed(body))

    def hold_models(self) -> threading.Event:
        """Answer `GET /v1/models` only once the returned event is set."""
        self.models_held = threading.Event()
        return self.models_held

    def _push(self, item: Reply | Failure | Delay | Malformed) -> None:
        with self._lock:
            self._queue.append(item)

    # -- lifecycle -------------------------------------------------------------------

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def last_request(self) -> dict[str, Any]:
        return self.requests[-1]

    def start(self) -> "FakeOpenAI":
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,), daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join()
        self._httpd.server_close()

    def __enter__(self) -> "FakeOpenAI":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- serving ---------------------------------------------------------------------

    def _next(self, request: dict[str, Any]) -> Reply | Failure | Malformed:
        while True:
            with self._lock:
                item = self._queue.popleft() if self._queue else None
            if isinstance(item, Delay):
                self._stopping.wait(item.seconds)
                continue
            if item is not None:
                return item
            if self.responder is None:
                return self.default
            answer = self.responder(request)
            if isinstance(answer, str):
                return Reply(content=answer)
            return answer if isinstance(answer, Reply) else Reply(**answer)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that timed out or hung up mid-answer is expected, not worth a traceback.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        # As real servers do (Go's net/http, which Ollama uses, and uvicorn): without it
        # the body, written after the head, waits for the client's delayed ACK (~40 ms)
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    @property
    def fake(self) -> FakeOpenAI:
        return self.server.fake  # type: ignore[attr-defined]

    def do_GET(self) -> None:
        kind, tokens = self.fake.context or ("", 0)
        if self.path.rstrip("/") == "/v1/models":
            held = self.fake.models_held
            if held is not None:
                held.wait(60)
            with self.fake._lock:
                self.fake.model_lists += 1
            data = [
                {"id": m, "object": "model", "created": 0, "owned_by": "fake"}
                for m in self.fake.models
            ]
            if kind == "vllm":
                data = [{**entry, "max_model_len": tokens} for entry in data]
            self._json(200, {"object": "list", "data": data})
        elif self.path == "/props":
            with self.fake._lock:
                self.fake.context_asks.append("GET /props")
            if kind == "llama.cpp":
                slot = {"id": 0, "n_ctx": tokens, "params": {"n_predict": -1}}
                self._json(200, {"default_generation_settings": slot, "total_slots": 1})
            elif kind == "llama.cpp-new":
                self._json(200, {"n_ctx": tokens, "total_slots": 1, "model_path": "m.gguf"})
            else:
                self._json(404, _error(f"no route {self.path}", "not_found"))
        else:
            self._json(404, _error(f"no route {self.path}", "not_found"))

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        route = self.path.rstrip("/")
        if route == "/api/show":
            self._show(raw)
            return
        if route not in ("/v1/chat/completions", "/v1/responses"):
            self._json(404, _error(f"no route {self.path}", "not_found"))
            return
        try:
            request = json.loads(raw)
        except ValueError:
            self._json(400, _error("request body is not JSON", "invalid_request_error"))
            return
        with self.fake._lock:
            self.fake.requests.append(request)
            self.fake.authorizations.append(self.headers.get("Authorization"))
            self.fake.headers.append(dict(self.headers))
        if route == "/v1/responses":
            self._responses(request)
            return
        problem = alternation_error(request.get("messages")) if self.fake.strict else None
        if problem is not None:
            with self.fake._lock:
                self.fake.rejected.append(request)
            self._json(400, _error(f"roles must alternate: {problem}", "invalid_request_error"))
            return
        item = self.fake._next(request)
        stream = bool(request.get("stream"))
        if isinstance(item, Failure):
            headers = {"Retry-After": item.retry_after} if item.retry_after is not None else {}
            body = json.dumps(_error(item.message, f"http_{item.status}")).encode()
            self._send(item.status, "application/json", body, headers=headers)
        elif isinstance(item, Malformed):
            if stream:
                self._send(200, "text/event-stream", f"data: {item.body}\n\n".encode())
            else:
                self._send(200, "application/json", item.body.encode())
        elif stream:
            include_usage = bool((request.get("stream_options") or {}).get("include_usage"))
            self._stream(item, request.get("model", "fake-model"), include_usage)
        else:
            if item.hold is not None:  # not streamed: the whole answer waits
                item.hold.wait(60)
            body = json.dumps(_completion(item, request.get("model", "fake-model"))).encode()
            if item.trickle_headers:
                head = (
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
                )
                self.close_connection = True
                self._write(head.encode() + body, item.trickle)
            else:
                self._send(200, "application/json", body, trickle=item.trickle)

    def _show(self, raw: bytes) -> None:
        """Ollama's `POST /api/show`: the model's facts, its context among them."""
        with self.fake._lock:
            self.fake.context_asks.append("POST /api/show")
        kind, tokens = self.fake.context or ("", 0)
        if kind != "ollama":
            self._json(404, _error(f"no route {self.path}", "not_found"))
            return
        info = {"general.architecture": "llama", "llama.context_length": tokens}
        body: dict[str, Any] = {"model_info": info, "details": {"format": "gguf"}}
        if self.fake.num_ctx is not None:
            body["parameters"] = (
                f'stop                           "<|eot|>"\nnum_ctx {self.fake.num_ctx}'
            )
        self._json(200, body)

    def _responses(self, request: dict[str, Any]) -> None:
        """Answer `POST /v1/responses` with the next item, whole or as typed events."""
        item = self.fake._next(request)
        if isinstance(item, Failure):
            headers = {"Retry-After": item.retry_after} if item.retry_after is not None else {}
            body = json.dumps(_error(item.message, f"http_{item.status}")).encode()
            self._send(item.status, "application/json", body, headers=headers)
            return
        if isinstance(item, Malformed):
            kind = "text/event-stream" if request.get("stream") else "application/json"
            self._send(200, kind, f"data: {item.body}\n\n".encode())
            return
        response = _response(item, request.get("model", "fake-model"))
        if not request.get("stream"):
            self._json(200, response)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        for n, event in enumerate(_response_events(response)):
            event["sequence_number"] = n
            self.wfile.write(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
            self.wfile.flush()

    def _json(self, status: int, body: dict[str, Any]) -> None:
        self._send(status, "application/json", json.dumps(body).encode())

    def _send(
        self,
        status: int,
        content_type: str,
        body: bytes,
        trickle: float | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        if trickle:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self._write(body, trickle)

    def _write(self, body: bytes, trickle: float | None) -> None:
        """Send `body`, all at once or one byte every `trickle` seconds."""
        if not trickle:
            self.wfile.write(body)
            self.wfile.flush()
            return
        progress = [0, len(body)]
        with self.fake._lock:
            self.fake.progress.append(progress)
        for byte in body:
            if self.fake._stopping.wait(trickle):
                return
            try:
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
            except OSError:  # the client gave up
                return
            progress[0] += 1

    def _stream(self, reply: Reply, model: str, include_usage: bool) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        if reply.chunked:
            self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        calls = [_tool_call(c, n) for n, c in enumerate(reply.tool_calls)]
        deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
        deltas += [{"content": piece} for piece in _pieces(reply.content or "")]
        cut_at = 2 if reply.cut == "content" else None  # after the first content piece
        for index, call in enumerate(calls):
            name = call["function"]["name"]
            head = {"index": index, "id": call["id"], "type": "function"}
            deltas.append({"tool_calls": [{**head, "function": {"name": name, "arguments": ""}}]})
            for n, piece in enumerate(_pieces(call["function"]["arguments"], 2)):
                deltas.append({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
                if n == 0 and reply.cut == "arguments":
                    cut_at = len(deltas)  # after the first half of this call's arguments
        finish = reply.finish_reason or ("tool_calls" if calls else "stop")
        base = {
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": reply.model or model,
        }
        events = [
            {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
            for delta in deltas
        ]
        events.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
        if include_usage and reply.usage is not None:
            events.append({**base, "choices": [], "usage": _usage(reply.usage)})
        lines = [f"data: {json.dumps(event)}\n\n".encode() for event in events]
        if reply.cut is None:
            lines.append(b"data: [DONE]\n\n")
        else:
            assert cut_at is not None, "nothing to cut there"
            lines = lines[:cut_at]
        if reply.chunked:
            lines = [b"%x\r\n%s\r\n" % (len(line), line) for line in lines]
            if reply.cut is None:
                lines.append(b"0\r\n\r\n")
        if reply.trickle:
            self._write(b"".join(lines), reply.trickle)
            return
        for n, line in enumerate(lines):
            if n == reply.hold_at and reply.hold is not None:
                reply.hold.wait(60)
            self.wfile.write(line)
            self.wfile.flush()


def alternation_error(messages: Any) -> str | None:
    """Why `messages` would break a strict chat template, or None when they alternate:
    system messages first only, then user/assistant in turn starting with user; tool
    results only right after the assistant's calls (or each other), followed by either
    side."""
    if not isinstance(messages, list):
        return "messages is not a list"
    expected: tuple[str, ...] = ("system", "user")
    for n, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role not in expected:
            return f"message {n} is {role!r}, expected {' or '.join(expected)}"
        if role == "system":
            expected = ("system", "user")
        elif role == "user":
            expected = ("assistant",)
        elif role == "assistant":
            expected = ("tool",) if message.get("tool_calls") else ("user",)
        else:
            expected = ("tool", "assistant", "user")
    return None


def _usage(usage: tuple[int, int]) -> dict[str, int]:
    prompt, completion = usage
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def _error(message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "code": kind, "param": None}}


def _completion(reply: Reply, model: str) -> dict[str, Any]:
    calls = [_tool_call(c, n) for n, c in enumerate(reply.tool_calls)]
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if calls:
        message["tool_calls"] = calls
    body: dict[str, Any] = {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": reply.model or model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": reply.finish_reason or ("tool_calls" if calls else "stop"),
            }
        ],
    }
    if reply.usage is not None:
        body["usage"] = _usage(reply.usage)
    return body


def _response(reply: Reply, model: str) -> dict[str, Any]:
    """`reply` as a completed Responses API object: a message item, then its calls."""
    output: list[dict[str, Any]] = []
    if reply.content is not None:
        output.append({
            "type": "message", "id": "msg_fake", "status": "completed", "role": "assistant",
            "content": [{"type": "output_text", "text": reply.content, "annotations": []}],
        })  # fmt: skip
    for n, call in enumerate(_tool_call(c, n) for n, c in enumerate(reply.tool_calls)):
        output.append({
            "type": "function_call", "id": f"fc_{n}", "call_id": call["id"],
            "name": call["function"]["name"], "arguments": call["function"]["arguments"],
            "status": "completed",
        })  # fmt: skip
    prompt, completion = reply.usage or (0, 0)
    return {
        "id": "resp_fake", "object": "response", "created_at": 0, "status": "completed",
        "model": reply.model or model, "output": output, "parallel_tool_calls": True,
        "tool_choice": "auto", "tools": [], "error": None, "incomplete_details": None,
        "usage": {
            "input_tokens": prompt, "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": completion, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": prompt + completion,
        },
    }  # fmt: skip


def _response_events(response: dict[str, Any]) -> list[dict[str, Any]]:
    """The typed stream of a Responses API answer, `response` being its completed form."""
    started = {**response, "status": "in_progress", "output": [], "usage": None}
    events: list[dict[str, Any]] = [{"type": "response.created", "response": started}]
    for index, item in enumerate(response["output"]):
        where = {"output_index": index, "item_id": item["id"]}
        if item["type"] == "message":
            text = item["content"][0]["text"]
            empty = {**item, "status": "in_progress", "content": []}
            part = {"type": "output_text", "text": "", "annotations": []}
            events.append({"type": "response.output_item.added", "output_index": index,
                           "item": empty})  # fmt: skip
            events.append({"type": "response.content_part.added", **where, "content_index": 0,
                           "part": part})  # fmt: skip
            for piece in _pieces(text) if text else []:
                events.append({"type": "response.output_text.delta", **where,
                               "content_index": 0, "delta": piece, "logprobs": []})  # fmt: skip
            events.append({"type": "response.output_text.done", **where, "content_index": 0,
                           "text": text, "logprobs": []})  # fmt: skip
            events.append({"type": "response.content_part.done", **where, "content_index": 0,
                           "part": {**part, "text": text}})  # fmt: skip
        else:
            empty = {**item, "status": "in_progress", "arguments": ""}
            events.append({"type": "response.output_item.added", "output_index": index,
                           "item": empty})  # fmt: skip
            for piece in _pieces(item["arguments"], 2):
                events.append({"type": "response.function_call_arguments.delta", **where,
                               "delta": piece})  # fmt: skip
            events.append({"type": "response.function_call_arguments.done", **where,
                           "arguments": item["arguments"]})  # fmt: skip
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    events.append({"type": "response.completed", "response": response})
    return events


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    """A started `FakeOpenAI` in strict mode, stopped after the test."""
    with FakeOpenAI(strict=True) as server:
        yield server
