"""What the model server says of its limits (issue 41, items 3 and 4): a reply it cut at
its token limit ends with a visible mark and is stored with its finish reason; the
context it holds bounds the budget; an answer that says the context overflowed names
--max-context-tokens, once."""

import json
from pathlib import Path
from typing import Any

from gitsessions.agent.turns import CUT_MARK
from gitsessions.store.sessions import SessionStore
from tests.conftest import exec_args
from tests.fake_openai import FakeOpenAI
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
