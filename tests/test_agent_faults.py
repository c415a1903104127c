"""The turn loop when the model or the store fails mid-turn, with a real store, a real
(scripted) model server and real tools: a reply cut mid-stream is recorded, marked
incomplete, and none of its tool calls runs; a reply whose commit fails is not lost."""

import json
from pathlib import Path

import pytest

from gitsessions.agent.loop import Agent
from gitsessions.agent.session import AgentSession
from gitsessions.agent.turns import AgentConfig, ReplyNotSaved
from gitsessions.services.compaction.compaction_policy import Policy
from gitsessions.services.model.errors import IncompleteReply
from gitsessions.services.model.model import ModelClient
from gitsessions.services.settings.config import resolve_model_settings
from gitsessions.services.tools import approve_all, create_registry
from gitsessions.store.sessions import SessionStore
from gitsessions.values.messages import pairing_errors
from gitsessions.values.tokens import TokenCounter
from tests.conftest import fsck
from tests.fake_openai import FakeOpenAI
from tests.tool_helpers import ENV

WRITE = {"id": "call_w", "name": "write_file", "arguments": {"path": "x.txt", "content": "x"}}
SHELL = {"id": "call_s", "name": "run_shell", "arguments": {"command": "touch ran.txt"}}


def make_agent(store: SessionStore, server: FakeOpenAI, ws: Path, session: AgentSession) -> Agent:
    settings = resolve_model_settings({"base_url": server.base_url, "model": "m"}, {}, {})
    return Agent(
        session,
        ModelClient(settings),
        create_registry(ws, ENV, approve=approve_all),
        TokenCounter(),
        AgentConfig(model="m", summary_model="m", policy=Policy(), stream=True),
        lambda *a: 0.0,
    )


@pytest.mark.parametrize("chunked", [False, True])
def test_a_reply_cut_inside_tool_arguments_runs_nothing_and_is_kept_marked(
    server: FakeOpenAI, store: SessionStore, workspace: Path, home: Path, cli, chunked: bool
) -> None:
    server.reply(content="I will write it.", tool_calls=[WRITE, SHELL], cut="arguments")
    session = AgentSession.create(store, "system", {"path": str(workspace)}, "m")
    agent = make_agent(store, server, workspace, session)
    with pytest.raises(IncompleteReply, match="before the reply was finished"):
        agent.run_turn("write x and run it")
    agent.client.close()
    # nothing ran: the first call was whole, the second cut; a cut reply runs neither
    assert not (workspace / "x.txt").exists() and not (workspace / "ran.txt").exists()
    audit = home / "audit.jsonl"
    assert not audit.exists() or '"tool"' not in audit.read_text()
    head = store.head(session.id)
    transcript = store.transcript(head)
    kept = transcript[-1]
    assert kept["role"] == "assistant" and kept["incomplete"] is True
    assert kept["content"] == "I will write it."
    assert "tool_calls" not in kept
    unsent = kept["unsent_tool_calls"]
    assert [c["id"] for c in unsent] == ["call_w", "call_s"]
    assert json.loads(unsent[0]["function"]["arguments"]) == WRITE["arguments"]
    with pytest.raises(ValueError):  # the cut one
        json.loads(unsent[1]["function"]["arguments"])
    # the context is what it was before the request: the prompt waits for a reply
    context = store.read(head, "context")
    assert context[-1] == {"role": "user", "content": "write x and run it"}
    assert pairing_errors(context) == [] and pairing_errors(transcript) == []
    fsck(home)

    # resumed (a new process would do the same), the turn is retried and goes on
    server.reply(content=None, tool_calls=[WRITE])
    server.reply(content="Wrote x.txt.")
    server.reply(content="Writing x")  # the list summary after the first turn
    resumed = AgentSession(store, store.head(session.id))
    assert resumed.unanswered_prompt() == "write x and run it"
    again = make_agent(store, server, workspace, resumed)
    assert again.retry_turn().reply == "Wrote x.txt."
    again.client.close()
    assert (workspace / "x.txt").read_text() == "x"
    retried = json.dumps(server.requests[1]["messages"])
    assert "incomplete" not in retried and "unsent_tool_calls" not in retried
    assert "I will write it." not in retried  # the model never sees the cut reply
    subjects = [c.message.decode().split("\n")[0] for _, c in store.history(store.head(session.id))]
    assert subjects[:4] == [  # the retry goes on after the saved step
        'turn 1.3: reply "Wrote x.txt."',
        "turn 1.2: write_file x.txt",
        "turn 1.1: cut off: write_file x.txt; run_shell",  # its arguments were cut
        "turn 1: write x and run it",
    ]
    # the stored session, incomplete message included, exports and imports again
    exported = home.parent / "export.json"
    cli("export", session.id, "-o", str(exported))
    cli("import", str(exported), "--new-id")
    fsck(home)


def test_a_reply_whose_commit_fails_stays_pending_and_is_raised_with_the_reply(
    server: FakeOpenAI, store: SessionStore, workspace: Path, home: Path
) -> None:
    session = AgentSession.create(store, "system", {"path": str(workspace)}, "m")
    other = SessionStore(home)

    def answer(request: dict) -> str:
        # another writer moves the branch while the model answers: the commit must fail
        head = other.head(session.id)
        other.commit(head, _rename(head), event="rename", subject="rename: elsewhere")
        return "the reply"

    server.responder = answer
    agent = make_agent(store, server, workspace, session)
    with pytest.raises(ReplyNotSaved) as caught:
        agent.run_turn("question")
    agent.client.close()
    other.close()
    assert caught.value.result.reply == "the reply"
    assert "could not be saved" in str(caught.value)
    assert session.dirty and session.pending[-1] == {"role": "assistant", "content": "the reply"}
    assert session.context[-1] == {"role": "assistant", "content": "the reply"}
    fsck(home)


def _rename(head):  # type: ignore[no-untyped-def]
    from gitsessions.store.sessions import Change, touch

    return Change(header=touch(head.header, title="renamed elsewhere"))
