"""The model client (the openai SDK) against a real local HTTP server
(tests/fake_openai.py): replies, streaming, tool calls, usage, and the mapping of every
failure to a one-line error."""

import json
import signal
import socket
import threading
from collections.abc import Iterator

import openai
import pytest

from gitsessions.services.model.completion import Completion, Usage
from gitsessions.services.model.errors import (
    AuthenticationFailed,
    BadResponse,
    EndpointUnreachable,
    IncompleteReply,
    ModelError,
    ModelNotFound,
    ModelTimeout,
    RateLimited,
    RedirectRefused,
    RequestRejected,
    ServerError,
)
from gitsessions.services.model.model import ModelClient
from gitsessions.services.settings.config import resolve_model_settings
from gitsessions.values.messages import text_of
from tests.fake_openai import FakeOpenAI, fake_openai  # noqa: F401  (a pytest fixture)
from tests.hostile_servers import recorder, redirector

USER = [{"role": "user", "content": "hi"}]
CALLS = [
    {"id": "call_a", "name": "read_file", "arguments": {"path": "a.txt"}},
    {"id": "call_b", "name": "run", "arguments": {"command": "ls -la", "timeout": 5}},
]


def make_client(base_url: str, **flags: object) -> ModelClient:
    settings = resolve_model_settings(
        {"base_url": base_url, **flags}, {"OPENAI_API_KEY": "sk-test"}, {}
    )
    return ModelClient(settings)


@pytest.fixture
def server(fake_openai: FakeOpenAI) -> FakeOpenAI:  # noqa: F811
    return fake_openai


@pytest.fixture
def client(server: FakeOpenAI) -> Iterator[ModelClient]:
    with make_client(server.base_url) as model_client:
        yield model_client


def test_plain_completion(server: FakeOpenAI, client: ModelClient) -> None:
    server.reply(content="hello there", usage=(12, 3))
    result = client.complete(USER, temperature=0, max_tokens=50)
    assert result == Completion(
        message={"role": "assistant", "content": "hello there"},
        usage=Usage(12, 3),
        finish_reason="stop",
        model="gemma4",
    )
    request = server.last_request
    assert request["messages"] == USER
    assert (request["temperature"], request["max_tokens"], request["model"]) == (0, 50, "gemma4")
    assert "stream" not in request and "tools" not in request
    assert server.authorizations == ["Bearer sk-test"]


@pytest.mark.parametrize("stream", [False, True])
def test_the_messages_are_sent_as_they_are_not_walked_by_the_sdk(
    server: FakeOpenAI, client: ModelClient, monkeypatch: pytest.MonkeyPatch, stream: bool
) -> None:
    """Issue 24: the SDK's type transform walks every message of a request (0.1-0.3 ms
    each, a cost growing with the session) to change nothing in a plain chat message;
    the messages go as the request's extra JSON instead, the same on the wire."""
    from openai.resources.chat.completions import completions

    walked: list[int] = []
    transform = completions.maybe_transform

    def counting(data: object, *args: object, **kwargs: object) -> object:
        if isinstance(data, dict):
            walked.append(len(data.get("messages") or []))
        return transform(data, *args, **kwargs)

    monkeypatch.setattr(completions, "maybe_transform", counting)
    messages = [{"role": "system", "content": "s"}]
    for n in range(50):
        messages += [{"role": "user", "content": f"q{n}"}, {"role": "assistant", "content": "a"}]
    messages.append({"role": "user", "content": "last"})
    server.reply(content="ok")
    result = client.complete(messages, stream=stream)
    assert text_of(result.message) == "ok"
    assert walked == [0]  # the SDK built the request, and walked none of the messages
    assert server.last_request["messages"] == messages
    assert server.last_request["model"] == "gemma4"


def test_organization_and_project_go_as_the_sdk_sends_them(
    server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = {"OPENAI_API_KEY": "sk-test", "OPENAI_ORG_ID": "org-1", "OPENAI_PROJECT_ID": "proj-1"}
    for name in ("OPENAI_ORG_ID", "OPENAI_PROJECT_ID"):  # the SDK reads them itself
        monkeypatch.setenv(name, env[name])
    settings = resolve_model_settings({"base_url": server.base_url}, env, {})
    with ModelClient(settings) as model_client:
        model_client.complete(USER)
    headers = {name.lower(): value for name, value in server.headers[0].items()}
    assert headers["openai-organization"] == "org-1" and headers["openai-project"] == "proj-1"


def test_model_override_and_tools_are_sent(server: FakeOpenAI, client: ModelClient) -> None:
    tools = [{"type": "function", "function": {"name": "noop", "parameters": {}}}]
    client.complete(USER, model="summarizer", tools=tools)
    assert server.last_request["model"] == "summarizer"
    assert server.last_request["tools"] == tools


def test_non_streamed_tool_calls(server: FakeOpenAI, client: ModelClient) -> None:
    server.reply(tool_calls=CALLS)
    result = client.complete(USER)
    assert result.finish_reason == "tool_calls"
    assert result.message["content"] is None
    assert [c["function"]["name"] for c in result.message["tool_calls"]] == ["read_file", "run"]


def test_streaming_assembles_text_deltas(server: FakeOpenAI, client: ModelClient) -> None:
    server.reply(content="The quick brown fox", usage=(7, 4))
    pieces: list[str] = []
    result = client.complete(USER, stream=True, on_text=pieces.append)
    assert len(pieces) > 1
    assert "".join(pieces) == "The quick brown fox"
    assert result.message == {"role": "assistant", "content": "The quick brown fox"}
    assert result.usage == Usage(7, 4)
    assert result.finish_reason == "stop"
    assert server.last_request["stream"] is True
    assert server.last_request["stream_options"] == {"include_usage": True}


def test_streamed_tool_calls_are_assembled_by_index(
    server: FakeOpenAI, client: ModelClient
) -> None:
    server.reply(content="Let me look.", tool_calls=CALLS, usage=(30, 9))
    result = client.complete(USER, stream=True)
    assert result.message == {
        "role": "assistant",
        "content": "Let me look.",
        "tool_calls": [
            {
                "id": "call_a",
                "type": "function",
                "function": {"name": "read_file", "arguments": '{"path": "a.txt"}'},
            },
            {
                "id": "call_b",
                "type": "function",
                "function": {"name": "run", "arguments": '{"command": "ls -la", "timeout": 5}'},
            },
        ],
    }
    assert result.finish_reason == "tool_calls"
    assert result.usage == Usage(30, 9)


def test_missing_usage_is_none(server: FakeOpenAI, client: ModelClient) -> None:
    server.reply(content="a", usage=None)
    assert client.complete(USER).usage is None
    server.reply(content="b", usage=None)
    assert client.complete(USER, stream=True).usage is None


def test_responder_sees_the_request(server: FakeOpenAI, client: ModelClient) -> None:
    server.responder = lambda request: f"you said {request['messages'][-1]['content']}"
    assert client.complete(USER).message["content"] == "you said hi"


def test_list_models(client: ModelClient) -> None:
    assert client.list_models() == ["fake-model", "gemma4"]


def test_connection_refused_names_the_url_and_the_fix() -> None:
    with socket.socket() as sock:  # bound but not listening: connections are refused
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
        with make_client(url) as model_client, pytest.raises(EndpointUnreachable) as caught:
            model_client.complete(USER)
    message = str(caught.value)
    assert url in message
    assert "--base-url" in message and "GITSESSIONS_BASE_URL" in message
    assert "flag --base-url" in message  # where the URL came from


@pytest.mark.parametrize(
    ("status", "error", "hint"),
    [
        (401, AuthenticationFailed, "OPENAI_API_KEY"),
        (403, AuthenticationFailed, "OPENAI_API_KEY"),
        (404, ModelNotFound, "GITSESSIONS_MODEL"),
        (429, RateLimited, "429"),
        (500, ServerError, "HTTP 500"),
        (503, ServerError, "HTTP 503"),
        (400, RequestRejected, "HTTP 400"),
    ],
)
@pytest.mark.parametrize("stream", [False, True])
def test_http_errors_map_to_specific_errors(
    server: FakeOpenAI,
    client: ModelClient,
    status: int,
    error: type[ModelError],
    hint: str,
    stream: bool,
) -> None:
    server.fail(status=status, message="nope\nreally")
    with pytest.raises(error) as caught:
        client.complete(USER, stream=stream)
    message = str(caught.value)
    assert hint in message
    assert "\n" not in message
    assert "server said: nope really" in message
    if status == 404:
        assert "'gemma4'" in message and server.base_url in message
    assert len(server.requests) == 1  # no retries


def test_timeout_names_the_seconds(server: FakeOpenAI) -> None:
    server.delay(30)
    client = make_client(server.base_url, timeout=0.2)
    with client, pytest.raises(ModelTimeout, match=r"within 0\.2 s"):
        client.complete(USER)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("stream", [False, True])
def test_timeout_is_a_deadline_for_the_whole_request(server: FakeOpenAI, stream: bool) -> None:
    # One byte every 0.3 s: no single read ever waits 1 s, so only a deadline for the
    # whole request stops it (the body takes minutes to send).
    server.reply(content="a slow answer " * 20, trickle=0.3)
    slow_client = make_client(server.base_url, timeout=1)
    with slow_client, pytest.raises(ModelTimeout) as caught:
        slow_client.complete(USER, stream=stream)
    assert "did not finish within 1 s" in str(caught.value)
    assert "timeout from flag --timeout" in str(caught.value)
    [(sent, total)] = server.progress
    assert 0 < sent < total  # it was sending, and had much more to send
    if stream:
        assert caught.value.partial is None or caught.value.partial.finish_reason is None
    server.reply(content="fast")  # the client is still usable, with a fresh deadline
    with make_client(server.base_url, timeout=2) as fast_client:
        assert fast_client.complete(USER, stream=stream).message["content"] == "fast"


@pytest.mark.timeout(60)
def test_the_deadline_covers_trickled_headers(server: FakeOpenAI) -> None:
    server.reply(content="slow", trickle=0.3, trickle_headers=True)
    slow_client = make_client(server.base_url, timeout=1)
    with slow_client, pytest.raises(ModelTimeout, match="did not finish within 1 s"):
        slow_client.complete(USER)
    [(sent, total)] = server.progress
    assert 0 < sent < total


@pytest.mark.parametrize("chunked", [False, True])
def test_a_stream_cut_before_its_finish_is_incomplete(
    server: FakeOpenAI, client: ModelClient, chunked: bool
) -> None:
    server.reply(content="The first part and the rest", cut="content", chunked=chunked)
    pieces: list[str] = []
    with pytest.raises(IncompleteReply) as caught:
        client.complete(USER, stream=True, on_text=pieces.append)
    partial = caught.value.partial
    assert partial is not None and partial.finish_reason is None
    assert partial.message == {"role": "assistant", "content": "".join(pieces)}
    assert pieces and "rest" not in "".join(pieces)
    assert "\n" not in str(caught.value) and server.base_url in str(caught.value)


@pytest.mark.parametrize("chunked", [False, True])
def test_a_stream_cut_inside_tool_arguments_keeps_the_cut_call(
    server: FakeOpenAI, client: ModelClient, chunked: bool
) -> None:
    calls = [{"id": "call_w", "name": "write_file", "arguments": {"path": "x", "content": "y"}}]
    server.reply(content="Writing.", tool_calls=calls, cut="arguments", chunked=chunked)
    with pytest.raises(IncompleteReply) as caught:
        client.complete(USER, stream=True)
    partial = caught.value.partial
    assert partial is not None
    [call] = partial.message["tool_calls"]
    assert call["id"] == "call_w" and call["function"]["name"] == "write_file"
    arguments = call["function"]["arguments"]
    assert arguments and '{"path": "x", "content": "y"}'.startswith(arguments)
    with pytest.raises(ValueError):
        json.loads(arguments)


@pytest.mark.parametrize("stream", [False, True])
def test_repeated_tool_call_ids_are_made_unique(
    server: FakeOpenAI, client: ModelClient, stream: bool
) -> None:
    calls = [
        {"id": "call_0", "name": "read_file", "arguments": {"path": n}} for n in ("a", "b", "c")
    ]
    calls.append({"id": "call_0-2", "name": "read_file", "arguments": {"path": "d"}})
    server.reply(content=None, tool_calls=calls)
    result = client.complete(USER, stream=stream)
    ids = [c["id"] for c in result.message["tool_calls"]]
    assert ids == ["call_0", "call_0-2", "call_0-3", "call_0-2-2"]
    paths = [json.loads(c["function"]["arguments"])["path"] for c in result.message["tool_calls"]]
    assert paths == ["a", "b", "c", "d"]


@pytest.mark.parametrize("body", ["{this is not json", '{"unexpected": 1}', "[]", '"text"'])
@pytest.mark.parametrize("stream", [False, True])
def test_malformed_bodies_are_bad_responses(
    server: FakeOpenAI, client: ModelClient, body: str, stream: bool
) -> None:
    server.malformed(body)
    with pytest.raises(BadResponse) as caught:
        client.complete(USER, stream=stream)
    assert "\n" not in str(caught.value)


def test_keyboard_interrupt_propagates_and_closes_the_stream(
    server: FakeOpenAI, client: ModelClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    closed = threading.Event()
    stream_class = openai.Stream
    original_close = stream_class.close

    def spy_close(self: object) -> None:
        closed.set()
        original_close(self)  # type: ignore[arg-type]

    monkeypatch.setattr(stream_class, "close", spy_close)

    def interrupt(text: str) -> None:
        raise KeyboardInterrupt

    server.reply(content="a long answer")
    with pytest.raises(KeyboardInterrupt):
        client.complete(USER, stream=True, on_text=interrupt)
    assert closed.wait(10)  # by the request's worker thread, which the Ctrl-C let go
    server.reply(content="still works")
    assert client.complete(USER).message["content"] == "still works"


def test_keyboard_interrupt_while_waiting_is_not_swallowed(server: FakeOpenAI) -> None:
    server.delay(30)
    interrupt = threading.Timer(
        0.2, signal.pthread_kill, (threading.main_thread().ident, signal.SIGINT)
    )
    with make_client(server.base_url) as model_client, pytest.raises(KeyboardInterrupt):
        interrupt.start()
        try:
            model_client.complete(USER)
        finally:
            interrupt.cancel()


def test_the_strict_server_refuses_roles_that_do_not_alternate(server: FakeOpenAI) -> None:
    """The test server's strict mode (the `server` fixtures use it) answers like a strict
    chat template; the client's requests pass it because they alternate."""
    import urllib.error
    import urllib.request

    def post(messages: list[dict]) -> tuple[int, dict]:
        body = json.dumps({"model": "m", "messages": messages}).encode()
        request = urllib.request.Request(f"{server.base_url}/chat/completions", body)
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())

    system = {"role": "system", "content": "s"}
    user = {"role": "user", "content": "u"}
    answer = {"role": "assistant", "content": "a"}
    calling = {"role": "assistant", "content": None, "tool_calls": [{"id": "c"}]}
    result = {"role": "tool", "tool_call_id": "c", "content": "r"}
    good = [
        [system, user],
        [system, user, answer, user],
        [system, user, calling, result, answer, user],
        [system, user, calling, result, calling, result, user],  # after a cancelled tool
    ]
    bad = [
        [system, user, user],
        [system, answer],
        [system, user, answer, answer],
        [system, user, system],
        [system, user, calling, user],  # a call without its result
        [system, user, result],
    ]
    assert [post(m)[0] for m in good] == [200] * len(good)
    refused = [post(m) for m in bad]
    assert [status for status, _ in refused] == [400] * len(bad)
    assert all("roles must alternate" in body["error"]["message"] for _, body in refused)
    assert len(server.rejected) == len(bad)


def test_consecutive_user_messages_are_sent_as_one(server: FakeOpenAI, client: ModelClient) -> None:
    """A continuation note before the kept prompt, or a prompt after an unanswered one:
    one user message on the wire, texts joined by a blank line; the caller's list is
    not changed."""
    messages = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "note"},
        {"role": "user", "content": "prompt"},
        {"role": "assistant", "content": "a"},
        {"role": "user", "content": [{"type": "text", "text": "x"}]},
        {"role": "user", "content": "y"},
    ]
    kept = json.loads(json.dumps(messages))
    client.complete(messages)
    assert server.last_request["messages"] == [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "note\n\nprompt"},
        {"role": "assistant", "content": "a"},
        {"role": "user", "content": [{"type": "text", "text": "x"}, {"type": "text", "text": "y"}]},
    ]
    assert messages == kept and server.rejected == []


def retrying_client(server: FakeOpenAI, waits: list[float], retries: int = 3) -> ModelClient:
    settings = resolve_model_settings(
        {"base_url": server.base_url}, {"OPENAI_API_KEY": "sk-test"}, {}
    )
    return ModelClient(settings, retries=retries, wait=lambda retry: waits.append(retry.seconds))


@pytest.mark.parametrize("stream", [False, True])
def test_rate_limits_and_server_errors_are_retried_honouring_retry_after(
    server: FakeOpenAI, stream: bool
) -> None:
    waits: list[float] = []
    server.fail(429, retry_after="7")
    server.fail(503)  # no Retry-After: backoff
    server.fail(500)
    server.reply(content="at last")
    with retrying_client(server, waits) as client:
        assert text_of(client.complete(USER, stream=stream).message) == "at last"
    assert waits == [7.0, 2.0, 4.0]
    assert len(server.requests) == 4


def test_retries_give_up_after_the_last_try_or_a_long_retry_after(server: FakeOpenAI) -> None:
    waits: list[float] = []
    for _ in range(3):
        server.fail(502)
    with retrying_client(server, waits, retries=2) as client:
        with pytest.raises(ServerError, match="HTTP 502"):
            client.complete(USER)
        assert waits == [1.0, 2.0] and len(server.requests) == 3
        server.fail(429, retry_after="3600")  # an hour: say so instead of waiting
        with pytest.raises(RateLimited, match="retry after 3600 s"):
            client.complete(USER)
        server.fail(400)  # the request itself is wrong: sending it again cannot help
        with pytest.raises(RequestRejected):
            client.complete(USER)
    assert waits == [1.0, 2.0] and len(server.requests) == 5


SECRET = [{"role": "user", "content": "the secret plan"}]


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("status", [307, 308, 301, 302, 303])
def test_a_redirect_of_the_request_to_another_origin_is_refused(status: int, stream: bool) -> None:
    """307/308 would re-send the whole conversation, 301/302/303 turn it into a GET whose
    answer another origin would write: none is followed, the other origin gets nothing."""
    with recorder() as elsewhere, redirector(status, elsewhere.base) as here:
        with make_client(f"{here.base}/v1") as client, pytest.raises(RedirectRefused) as caught:
            client.complete(SECRET, stream=stream)
        assert elsewhere.seen == []  # no request: no body, no message, no key
        assert [(s.method, s.path) for s in here.seen] == [("POST", "/v1/chat/completions")]
    message = str(caught.value)
    assert message == (
        f"the model server at {here.base} redirected the request to {elsewhere.base}; "
        "refusing to send the conversation to another origin; check --base-url or "
        "GITSESSIONS_BASE_URL"
    )
    assert caught.value.partial is None


def test_a_redirect_of_the_request_on_its_own_origin_is_followed() -> None:
    with redirector(308, same=True) as here:
        with make_client(f"{here.base}/old") as client:
            assert text_of(client.complete(SECRET).message) == "followed"
        assert [(s.method, s.path, s.headers.get("authorization")) for s in here.seen] == [
            ("POST", "/old/chat/completions", "Bearer sk-test"),
            ("POST", "/v1/chat/completions", "Bearer sk-test"),
        ]
        assert json.loads(here.seen[1].body)["messages"] == SECRET


def test_the_model_list_follows_a_redirect_to_another_origin_without_the_key() -> None:
    with recorder() as elsewhere, redirector(307, elsewhere.base) as here:
        with make_client(f"{here.base}/v1") as client:
            assert client.list_models() == ["m1"]
        [seen] = elsewhere.seen
        assert (seen.method, seen.path) == ("GET", "/v1/models")
        assert "authorization" not in seen.headers
