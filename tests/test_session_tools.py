"""The session tools' real handlers (agent/session_tools.py, which runs
services/sessions/session_tools.py), registered as the agent registers them, on sessions
stored in a real store: read_session pages chain with the `start` the tool tells the
model to use, to the end, and the last page says so."""

import json
import re
from pathlib import Path
from typing import Any

import pytest

from gitsessions.agent.scope import Scope
from gitsessions.agent.session import AgentSession
from gitsessions.agent.session_tools import register_session_tools
from gitsessions.services.sessions.session_tools import READ_LIMIT
from gitsessions.services.tools import ToolOutcome, ToolRegistry
from gitsessions.store.sessions import SessionStore

TOTAL = 100  # transcript messages, the system prompt included
SEARCH_LIMIT = 20  # hits per search_sessions call
NEXT = re.compile(r"call (?:read_session )?again with start=(\d+)")
INDEX = re.compile(r"^\[(\d+)\] ", re.MULTILINE)


@pytest.fixture
def session(store: SessionStore, workspace: Path) -> AgentSession:
    """A stored session of TOTAL messages; every third user/assistant text holds NEEDLE."""
    agent_session = AgentSession.create(store, "system prompt", {"path": str(workspace)}, "m")
    for n in range(1, TOTAL):
        role = "user" if n % 2 else "assistant"
        text = f"message {n}" + (" NEEDLE" if n % 3 == 0 else "")
        agent_session.add({"role": role, "content": text})
    assert agent_session.checkpoint("turn 1: many messages")
    assert agent_session.head.counts["messages"] == TOTAL
    return agent_session


@pytest.fixture
def registry(session: AgentSession, workspace: Path) -> ToolRegistry:
    tools = ToolRegistry()
    register_session_tools(tools, session, Scope(workspace))
    return tools


def read(registry: ToolRegistry, **arguments: Any) -> ToolOutcome:
    call = {"name": "read_session", "arguments": json.dumps(arguments)}
    return registry.dispatch({"id": "call_1", "type": "function", "function": call})


def read_all(registry: ToolRegistry, **arguments: Any) -> tuple[list[int], list[str]]:
    """Follow the pages as a model would: the indices shown, and every page's text."""
    shown: list[int] = []
    pages: list[str] = []
    start = arguments.pop("start", None)
    while True:
        outcome = read(registry, start=start, **arguments)
        assert outcome.ok, outcome.content
        pages.append(outcome.content)
        page = [int(i) for i in INDEX.findall(outcome.content)]
        assert len(page) <= READ_LIMIT
        shown += page
        more = NEXT.search(outcome.content)
        if more is None:
            return shown, pages
        assert page and int(more.group(1)) > page[-1], "the next page must move forward"
        start = int(more.group(1))
        assert len(pages) <= TOTAL, "pages must not loop"


def test_pages_chain_through_the_whole_transcript(registry: ToolRegistry) -> None:
    shown, pages = read_all(registry)
    assert shown == list(range(TOTAL))
    assert len(pages) == 3  # 40 + 40 + 20
    assert "start=40" in pages[0] and "start=80" in pages[1]
    assert "no more messages" in pages[-1]
    assert all("no more" not in page for page in pages[:-1])


def test_pages_chain_with_a_query_and_an_end(registry: ToolRegistry) -> None:
    shown, pages = read_all(registry, query="needle", end=90)
    assert shown == [n for n in range(1, 90) if n % 3 == 0]
    assert "no more matches" in pages[-1]
    shown, pages = read_all(registry, start=5, end=85)
    assert shown == list(range(5, 85))
    assert "no more messages in [45, 85)" in pages[-1]


def test_a_full_last_page_still_says_there_is_no_more(registry: ToolRegistry) -> None:
    outcome = read(registry, start=TOTAL - READ_LIMIT)
    assert [int(i) for i in INDEX.findall(outcome.content)] == list(range(60, TOTAL))
    assert NEXT.search(outcome.content) is None and "no more messages" in outcome.content


def test_start_past_the_end_is_an_error_result(registry: ToolRegistry) -> None:
    outcome = read(registry, start=TOTAL)
    assert not outcome.ok
    assert outcome.content == (
        f"error: start {TOTAL} is past the end: the transcript has {TOTAL} messages"
    )


def test_other_sessions_and_search(
    registry: ToolRegistry, session: AgentSession, store: SessionStore, workspace: Path
) -> None:
    other = AgentSession.create(store, "other system", {"path": str(workspace)}, "m")
    other.add({"role": "user", "content": "the other session's NEEDLE question"})
    assert other.checkpoint("turn 1: other")
    outcome = read(registry, session=other.id[:8])
    assert outcome.ok and f"session {other.id} transcript: 2 messages" in outcome.content
    assert "[1] user\nthe other session's NEEDLE question" in outcome.content
    found = registry.dispatch(
        {
            "id": "call_2",
            "type": "function",
            "function": {"name": "search_sessions", "arguments": '{"query": "question"}'},
        }
    )
    assert found.ok and other.id in found.content


def test_long_messages_make_shorter_pages_never_cut_ones(
    store: SessionStore, workspace: Path
) -> None:
    long = AgentSession.create(store, "system prompt", {"path": str(workspace)}, "m")
    for n in range(1, 60):
        long.add({"role": "user", "content": f"message {n} " + "x" * 1500})
    assert long.checkpoint("turn 1: long messages")
    tools = ToolRegistry(output_limit=16_000)
    register_session_tools(tools, long, Scope(workspace))
    shown, pages = read_all(tools)
    assert shown == list(range(60))
    assert all("characters cut" not in page and len(page) <= 16_000 for page in pages)
    assert len(pages) >= 6 and "no more messages" in pages[-1]


def dispatch(registry: ToolRegistry, name: str, **arguments: Any) -> ToolOutcome:
    call = {"name": name, "arguments": json.dumps(arguments)}
    return registry.dispatch({"id": "call_3", "type": "function", "function": call})


def test_nothing_matched_and_bad_session_references(
    registry: ToolRegistry, session: AgentSession
) -> None:
    none = read(registry, query="no such text anywhere", start=10, end=20)
    assert none.ok and none.content.endswith("none matched in [10, 20)")
    for reference in ("ab", "ffffffff", "   "):
        outcome = read(registry, session=reference)
        assert not outcome.ok and "among this workspace's sessions" in outcome.content
    assert dispatch(registry, "search_sessions", query="zzz-nowhere-zzz").content == "no matches"


def test_tool_calls_are_rendered_with_their_ids(store: SessionStore, workspace: Path) -> None:
    agent_session = AgentSession.create(store, "system prompt", {"path": str(workspace)}, "m")
    call = {"id": "c1", "type": "function", "function": {"name": "list_files", "arguments": "{}"}}
    agent_session.add({"role": "assistant", "content": None, "tool_calls": [call]})
    agent_session.add({"role": "tool", "tool_call_id": "c1", "content": "a.txt"})
    assert agent_session.checkpoint("turn 1: tools")
    tools = ToolRegistry()
    register_session_tools(tools, agent_session, Scope(workspace))
    page = read(tools, start=1).content
    assert "[1] assistant\n-> list_files({}) id=c1" in page
    assert "[2] tool (result of c1)\na.txt" in page


def test_update_plan_is_saved_with_the_session(
    registry: ToolRegistry, session: AgentSession, store: SessionStore
) -> None:
    items = [{"step": "read", "status": "completed"}, {"step": "write", "status": "pending"}]
    outcome = dispatch(registry, "update_plan", items=items)
    assert outcome.content == "plan saved:\n[completed] read\n[pending] write"
    assert session.checkpoint("turn 2: plan")
    assert store.read(store.head(session.id), "plan") == items
    assert dispatch(registry, "update_plan", items=[]).content == "plan saved:\n(empty plan)"


def test_search_hits_lead_to_read_session_and_say_when_there_are_more(
    registry: ToolRegistry, session: AgentSession
) -> None:
    found = dispatch(registry, "search_sessions", query="NEEDLE")
    lines = found.content.splitlines()
    hits = [line for line in lines if line.startswith(session.id)]
    assert len(hits) == SEARCH_LIMIT
    assert lines[-1] == (
        f"[more than {SEARCH_LIMIT} matches: narrow the query, or page through one session "
        "with read_session and the same query]"
    )
    for hit in hits[:3]:
        index = int(re.search(r" message (\d+): ", hit).group(1))  # type: ignore[union-attr]
        page = read(registry, session=session.id[:8], start=index, end=index + 1).content
        assert f"[{index}] " in page and "NEEDLE" in page
    few = dispatch(registry, "search_sessions", query="message 9 NEEDLE").content
    assert "more than" not in few and "message 9 NEEDLE" in few
