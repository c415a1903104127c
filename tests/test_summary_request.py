"""The agent's own compaction (chat, exec) budgets the summary request for what it
carries: the summarizer's instructions and the data, not the agent's tool schemas (about
1,500 tokens in a chat; here the registry's built-in ones, about 500), which the request
does not carry. With a real store, a real (scripted) model server and the real tool
registry."""

import json
from pathlib import Path

from gitsessions.agent.loop import Agent
from gitsessions.agent.session import AgentSession
from gitsessions.agent.turns import AgentConfig
from gitsessions.services.compaction.compaction_policy import Policy
from gitsessions.services.model.model import ModelClient
from gitsessions.services.settings.config import resolve_model_settings
from gitsessions.services.tools import approve_all, create_registry
from gitsessions.store.sessions import SessionStore
from gitsessions.values.tokens import TokenCounter
from tests.fake_openai import FakeOpenAI
from tests.tool_helpers import ENV

SUMMARIZER = "You write the continuation summary"
REPLIES = [f"reply {n}: " + " ".join(f"n{n}x{i}" for i in range(400)) for n in range(3)]


def responder(request: dict) -> str:
    """The summarizer, the title writer and the agent's turns, each by what it is asked."""
    messages = request["messages"]
    if messages[0]["content"].startswith(SUMMARIZER):
        return "a summary"
    if "title" in messages[0]["content"]:
        return "A title"
    prompt = messages[-1]["content"]
    return REPLIES[int(prompt.split()[-1])] if prompt.startswith("task") else "the latest answer"


def test_the_agents_summary_request_is_not_cut_for_its_tool_schemas(
    server: FakeOpenAI, store: SessionStore, workspace: Path
) -> None:
    settings = resolve_model_settings({"base_url": server.base_url, "model": "m"}, {}, {})
    session = AgentSession.create(store, "system", {"path": str(workspace)}, "m")
    agent = Agent(
        session,
        ModelClient(settings),
        create_registry(workspace, ENV, approve=approve_all),
        TokenCounter(),
        AgentConfig(
            model="m", summary_model="m", policy=Policy(max_context_tokens=4000), stream=False
        ),
        lambda *a: 0.0,
    )
    server.responder = responder
    try:
        for n in range(len(REPLIES)):
            agent.run_turn(f"task {n}")
        agent.run_turn("the latest one")
        assert not any(r["messages"][0]["content"].startswith(SUMMARIZER) for r in server.requests)
        result = agent.compact("manual")
    finally:
        agent.client.close()
    assert result is not None and result.changed, result
    assert not any(note.startswith("summarizer input") for note in result.notes), result.notes
    asked = [r for r in server.requests if r["messages"][0]["content"].startswith(SUMMARIZER)]
    assert len(asked) == 1 and "tools" not in asked[0]
    data = json.loads(asked[0]["messages"][1]["content"])
    sent = [m["content"] for m in data["messages"] if m["role"] == "assistant"]
    assert sent == REPLIES  # every older reply, whole
