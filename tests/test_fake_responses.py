"""The fake server's Responses API (`POST /v1/responses`, what Codex CLI speaks, used by
`bench/peers.py`), driven by the real openai SDK: a streamed answer's typed events add up
to the completed response the SDK assembles, tool calls included, and the request is
recorded like a chat completion's."""

import json

import openai

from tests.fake_openai import FakeOpenAI


def client(server: FakeOpenAI) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="sk-fake", max_retries=0)


def test_streamed_response_text_and_usage() -> None:
    with FakeOpenAI() as server:
        server.reply(content="hello from the fake", usage=(12, 4))
        stream = client(server).responses.create(
            model="fake-model", input=[{"role": "user", "content": "hi"}], stream=True
        )
        events = list(stream)
    kinds = [event.type for event in events]
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    deltas = [event.delta for event in events if event.type == "response.output_text.delta"]
    assert len(deltas) > 1 and "".join(deltas) == "hello from the fake"
    assert [event.sequence_number for event in events] == list(range(len(events)))
    done = events[-1].response
    assert done.output_text == "hello from the fake"
    assert done.usage is not None and (done.usage.input_tokens, done.usage.output_tokens) == (
        12,
        4,
    )
    assert server.requests[-1]["input"] == [{"role": "user", "content": "hi"}]
    assert server.requests[-1]["stream"] is True


def test_streamed_response_tool_call() -> None:
    with FakeOpenAI() as server:
        server.reply(content=None, tool_calls=[{"name": "shell", "arguments": {"cmd": "ls -l"}}])
        with client(server).responses.stream(model="m", input="list files") as stream:
            arguments = "".join(
                event.delta
                for event in stream
                if event.type == "response.function_call_arguments.delta"
            )
            final = stream.get_final_response()
    assert json.loads(arguments) == {"cmd": "ls -l"}
    (call,) = final.output
    assert call.type == "function_call"
    assert (call.name, call.call_id, json.loads(call.arguments)) == (
        "shell",
        "call_0",
        {"cmd": "ls -l"},
    )


def test_whole_response_and_failure() -> None:
    with FakeOpenAI() as server:
        server.reply(content="whole")
        server.fail(status=400, message="no such model")
        api = client(server)
        assert api.responses.create(model="m", input="hi").output_text == "whole"
        try:
            api.responses.create(model="m", input="again", stream=True)
        except openai.BadRequestError as error:
            assert "no such model" in str(error)
        else:
            raise AssertionError("the scripted failure was not served")
    assert [r["input"] for r in server.requests] == ["hi", "again"]
