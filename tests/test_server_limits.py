"""What the model server says of its limits (issue 41, items 3 and 4): a reply it cut at
its token limit ends with a visible mark and is stored with its finish reason; the
context it holds bounds the budget; an answer that says the context overflowed names
--max-context-tokens, once."""

import json
import re
from pathlib import Path
from typing import Any

import pytest

from gitsessions.agent.turns import CUT_MARK
from gitsessions.services.model import context_window
from gitsessions.services.model.errors import ContextOverflow
from gitsessions.services.model.model import ModelClient
from gitsessions.services.settings.config import ModelSettings
from gitsessions.store.sessions import SessionStore
from tests.conftest import exec_args
from tests.fake_openai import FakeOpenAI
from tests.hostile_servers import endless_answer, raw_answer, recorder, redirector
from tests.test_auto_compaction import responder as compaction_responder
from tests.test_chat import leave, say, spawn


def replies(home: Path, session_id: str) -> list[dict[str, Any]]:
    """The session's transcript records of assistant replies."""
    store = SessionStore(home)
    try:
        records = store.records(store.head(session_id))
    finally:
        store.close()
    return [r for r in records if r["message"]["role"] == "assistant"]


def test_exec_marks_a_reply_cut_at_the_token_limit_and_stores_why(server, workspace, home, cli):
    server.reply(content="the first half of a long ans", finish_reason="length")
    done = cli(*exec_args(server, workspace), "explain", "--json")
    said = json.loads(done.stdout)
    assert said["reply"] == "the first half of a long ans"
    assert said["finish_reason"] == "length"
    assert CUT_MARK in done.stderr
    [cut] = replies(home, said["session"])
    assert cut["finish_reason"] == "length"
    assert cut["message"] == {"role": "assistant", "content": "the first half of a long ans"}

    server.reply(content="all of it")  # a reply that ends as it should: no mark
    done = cli(*exec_args(server, workspace), "explain", "--json")
    assert "finish_reason" not in json.loads(done.stdout) and CUT_MARK not in done.stderr
    assert "finish_reason" not in replies(home, json.loads(done.stdout)["session"])[0]

    server.reply(content="cut again", finish_reason="length")
    plain = cli(*exec_args(server, workspace), "again", "--resume", said["session"])
    assert plain.stdout == "cut again\n"
    assert plain.stderr.rstrip().endswith(CUT_MARK)


def test_the_chat_ends_a_streamed_reply_cut_at_the_token_limit_with_a_mark(
    server: FakeOpenAI, workspace: Path, home: Path
) -> None:
    """The chat streams: the finish reason comes in the last chunk, after the text."""
    server.reply(content="a reply the server stopped in the mid", finish_reason="length")
    child = spawn(server.base_url, workspace)
    cut = " ".join(say(child, "tell me everything").split())
    whole = " ".join(say(child, "and the rest").split())
    leave(child)
    assert "a reply the server stopped in the mid" in cut
    assert cut.index("stopped in the mid") < cut.index(CUT_MARK)
    assert " ok " in whole and CUT_MARK not in whole  # the default reply, whole
    assert server.requests[0]["stream"] is True


# -- the context the server holds ------------------------------------------------------


def settings_for(base_url: str, model: str = "fake-model") -> ModelSettings:
    return ModelSettings(model=model, base_url=base_url, api_key="k-test-1234", summary_model=model)


def asked(settings: ModelSettings, listed: list[dict[str, Any]] | None = None) -> Any:
    """`context_window.ask` through a model client made for it, as chat's probe makes one."""
    with ModelClient(settings) as client:
        return context_window.ask(settings, client, listed)


@pytest.mark.parametrize(
    ("kind", "said_by"),
    [
        ("llama.cpp", "llama.cpp (GET /props)"),
        ("llama.cpp-new", "llama.cpp (GET /props)"),
        ("ollama", "Ollama (POST /api/show)"),
        ("vllm", "vLLM (GET /v1/models)"),
    ],
)
def test_each_server_is_asked_its_context_its_own_way(kind: str, said_by: str) -> None:
    with FakeOpenAI() as server:
        server.context = (kind, 8192)
        assert asked(settings_for(server.base_url)) == (8192, said_by)
        assert server.authorizations == []  # no chat request: nothing but the asks
    with FakeOpenAI() as server:  # the list chat's probe read already: not asked again
        server.context = (kind, 8192)
        listed = [{"id": "fake-model", "max_model_len": 8192}] if kind == "vllm" else []
        said = asked(settings_for(server.base_url), listed)
        assert said == (8192, said_by) and server.model_lists == 0


def test_ollama_s_num_ctx_bounds_the_model_s_context_length() -> None:
    with FakeOpenAI() as server:
        server.context, server.num_ctx = ("ollama", 131072), 4096
        assert asked(settings_for(server.base_url)) == (
            4096,
            "Ollama (POST /api/show)",
        )
        assert "POST /api/show" in server.context_asks and server.requests == []


@pytest.mark.parametrize(
    "body",
    [
        b'{"default_generation_settings": {"n_ctx": "4096"}, "n_ctx": true}',
        b'{"n_ctx": -1, "model_info": {"general.architecture": "x", "x.context_length": 0}}',
        b'{"n_ctx": 1000000000000, "data": [{"id": "fake-model", "max_model_len": 4.5}]}',
        b'{"n_ctx": 1' + b"0" * 5000 + b"}",
        b"[" * 100_000,
        b"<html>not json</html>",
    ],
)
def test_a_server_saying_nonsense_about_its_context_is_not_believed(body: bytes) -> None:
    head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}"
    with raw_answer(head.encode() + b"\r\nConnection: close\r\n\r\n" + body) as base:
        assert asked(settings_for(f"{base}/v1")) is None


def test_an_endless_answer_about_the_context_is_cut_and_not_believed() -> None:
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n"
    with endless_answer(head + b'{"n_ctx": 4096, "x": "', b"y" * 65536) as base:
        assert asked(settings_for(f"{base}/v1")) is None


def test_the_context_is_asked_of_the_base_url_s_host_only() -> None:
    """A redirect is no answer: the other origin gets nothing, the key least of all."""
    with recorder() as elsewhere, redirector(307, elsewhere.base) as here:
        assert asked(settings_for(f"{here.base}/v1")) is None
        assert sorted(seen.path for seen in here.seen) == ["/api/show", "/props", "/v1/models"]
        assert elsewhere.seen == []


def test_exec_compacts_at_80_percent_of_what_the_server_holds(
    server, tmp_path, home, cli, monkeypatch
):
    """The budget is 24,000 by default; the llama.cpp server holds 4,000: the second
    turn compacts, as it does under --max-context-tokens 4000 (test_auto_compaction)."""
    # the answer is waited for as long as a loaded machine needs (2 s by default)
    monkeypatch.setattr(context_window, "ASK_SECONDS", 120.0)
    ws = tmp_path / "p"
    ws.mkdir()
    (ws / "big.txt").write_text(" ".join(f"w{i:04d}" for i in range(700)))
    server.responder = compaction_responder
    server.context = ("llama.cpp", 4000)
    common = ("--base-url", server.base_url, "--model", "fake", "--workspace", str(ws), "--json")
    first = json.loads(cli("exec", "read big.txt", *common).stdout)
    assert first["compacted"] is False
    second = cli("exec", "read it again", "--continue", *common)
    assert json.loads(second.stdout)["compacted"] is True
    assert "compacting" in second.stderr and "of 4,000 tokens" in second.stderr
    assert "GET /props" in server.context_asks
    info = cli.json("info", first["session"])
    assert info["context_budget"] == 4000
    assert info["settings"]["max_context_tokens"] == 24000
    assert info["settings"]["server_context_tokens"] == 4000
    shown = cli("info", first["session"]).stdout
    assert "24,000 tokens, the server holds 4,000: the budget" in " ".join(shown.split())


def test_a_server_holding_more_than_the_budget_changes_nothing(server, workspace, cli):
    server.context = ("vllm", 131072)
    said = json.loads(cli(*exec_args(server, workspace), "hello", "--json").stdout)
    info = cli.json("info", said["session"])
    assert info["context_budget"] == 24000 and info["settings"]["server_context_tokens"] == 131072


def test_a_server_too_small_for_the_tools_is_refused_naming_it(server, workspace, cli):
    server.context = ("ollama", 2048)
    done = cli(*exec_args(server, workspace), "hello", code=2)
    assert "holds 2,048 tokens of context (Ollama (POST /api/show))" in done.stderr
    assert server.requests == []


@pytest.mark.parametrize(
    ("status", "said"),
    [
        (500, "the request exceeds the available context size, try increasing it"),
        (400, "This model's maximum context length is 4096 tokens. However, you requested 9000"),
    ],
)
def test_an_overflowed_context_names_the_flag_once_and_is_not_retried(
    server, workspace, cli, status: int, said: str
) -> None:
    server.fail(status, said)
    done = cli(*exec_args(server, workspace), "a long prompt", code=1)
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "--max-context-tokens 24,000" in errors[0]
    assert "context overflowed" in errors[0] and "retrying" not in done.stderr
    assert len(server.requests) == 1


def test_the_chat_s_status_line_shows_the_budget_the_server_holds(
    server: FakeOpenAI, workspace: Path, home: Path
) -> None:
    server.context = ("vllm", 6000)
    child = spawn(server.base_url, workspace)
    out = " ".join(say(child, "hello").split())
    leave(child)
    assert re.search(r"context [\d,]+ / 6,000 tokens", out), out
    assert server.model_lists == 1  # the probe's list said it: not asked twice


def answer(status: str, kind: str, body: bytes) -> bytes:
    head = f"HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nConnection: close\r\n"
    return f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body


def test_openai_s_code_and_an_error_inside_a_stream_are_overflows_too() -> None:
    """OpenAI says it in its error's code; a server may say it in an error event of a
    stream that had begun: either way a ContextOverflow naming the flag."""
    error = {"message": "Your input is long.", "code": "context_length_exceeded"}
    coded = answer("400 Bad Request", "application/json", json.dumps({"error": error}).encode())
    event = {"error": {"message": "the request exceeds the available context size"}}
    streamed = answer("200 OK", "text/event-stream", f"data: {json.dumps(event)}\n\n".encode())
    for data, stream in ((coded, False), (streamed, True)):
        with (
            raw_answer(data) as base,
            ModelClient(settings_for(f"{base}/v1"), retries=3) as client,
            pytest.raises(ContextOverflow, match="--max-context-tokens 24,000"),
        ):
            client.complete([{"role": "user", "content": "hi"}], stream=stream)
