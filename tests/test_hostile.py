"""Hostile and broken input: one-line errors, no tracebacks, nothing stored lost."""

import json
import stat

import pytest

from gitsessions.agent.loop import Agent
from gitsessions.agent.session import AgentSession
from gitsessions.agent.turns import AgentConfig, Events
from gitsessions.services.compaction.compaction_policy import Policy
from gitsessions.services.model.model import ModelClient
from gitsessions.services.settings.config import resolve_model_settings
from gitsessions.services.tools import approve_all, create_registry
from gitsessions.store.errors import SessionNotFound
from gitsessions.store.lease import Lease
from gitsessions.values.clock import now_iso
from gitsessions.values.ids import new_id
from gitsessions.values.messages import pairing_errors
from gitsessions.values.tokens import TokenCounter


def call(name: str, **arguments) -> dict:
    return {
        "id": "c1",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }


@pytest.mark.parametrize(
    "tool,arguments",
    [
        ("run_shell", {"command": "echo a\x00b"}),
        ("search_files", {"pattern": "a{99999999999}"}),
        ("read_file", {"path": "\x00"}),
    ],
)
def test_impossible_tool_arguments_are_error_results(tmp_path, tool, arguments):
    registry = create_registry(tmp_path, {"PATH": "/usr/bin:/bin"}, approve=approve_all)
    outcome = registry.dispatch(call(tool, **arguments))
    assert not outcome.ok and outcome.content.startswith("error:")


def test_cli_text_that_is_not_utf8(cli, make_session):
    head = make_session(turns=0)
    assert "not valid UTF-8" in cli("pin", head.id, "bad \udcff", code=1).stderr
    assert "not valid UTF-8" in cli("search", "\udcff", code=1).stderr
    assert cli.json("pins", head.id) == []


@pytest.mark.parametrize(
    "body,message",
    [
        (
            '{"format": "gitsessions.session/1", "id": "%s", "messages": [], "transcript": [],'
            ' "usage": {"prompt_tokens": NaN}}',
            "NaN",
        ),
        (
            '{"format": "gitsessions.session/1", "id": "%s", "messages": [], "transcript": [],'
            ' "summary": "\\ud800"}',
            "not valid UTF-8",
        ),
        ("[" * 100_000, "nested too deeply"),
    ],
)
def test_unstorable_exports(cli, tmp_path, body, message):
    path = tmp_path / "bad.json"
    path.write_text(body.replace("%s", "a" * 32) if "%s" in body else body)
    assert message in cli("import", str(path), code=1).stderr
    assert cli.json("list") == []


def test_export_file_is_private(cli, make_session, tmp_path):
    head = make_session(turns=1)
    out = tmp_path / "session.json"
    cli("export", head.id, "-o", str(out))
    assert stat.S_IMODE(out.stat().st_mode) == 0o600


def test_management_commands_wait_for_a_live_agent(cli, make_session, home):
    head = make_session(turns=1, title="original")
    with Lease(home, head.id):
        for args in (
            ["rename", head.id, "new"],
            ["archive", head.id],
            ["pin", head.id, "x"],
            ["delete", head.id, "--yes"],
        ):
            assert "in use" in cli(*args, code=1).stderr
    assert cli.json("info", head.id)["title"] == "original"
    cli("fork", head.id)  # forking writes nothing of the source: allowed


def test_fork_of_a_deleted_session_fails_cleanly(store, make_session):
    parent = make_session(turns=2)
    child = store.fork(parent, new_id(), title=None, created_at=now_iso())
    store.delete(store.head(parent.id))  # the child keeps the objects alive
    with pytest.raises(SessionNotFound):
        store.fork(parent, new_id(), title=None, created_at=now_iso())
    lone = make_session(turns=1)
    store.delete(store.head(lone.id))  # purged for good
    with pytest.raises(SessionNotFound):
        store.fork(lone, new_id(), title=None, created_at=now_iso())
    assert store.transcript(store.head(child.id))  # the survivor still reads fine


class InterruptOnReply(Events):
    def reply(self, message) -> None:
        if message.get("tool_calls"):
            raise KeyboardInterrupt


def test_interrupt_after_a_tool_call_leaves_valid_pairs(server, store, tmp_path):
    server.reply(
        content=None,
        tool_calls=[
            {"name": "read_file", "arguments": {"path": "a"}},
            {"name": "list_files", "arguments": {}},
        ],
    )
    settings = resolve_model_settings({"base_url": server.base_url, "model": "m"}, {}, {})
    session = AgentSession.create(store, "system", {"path": str(tmp_path)}, "m")
    registry = create_registry(tmp_path, {}, approve=approve_all)
    with ModelClient(settings) as client:
        agent = Agent(
            session,
            client,
            registry,
            TokenCounter(),
            AgentConfig(model="m", summary_model="m", policy=Policy()),
            lambda *a: 0.0,
            InterruptOnReply(),
        )
        with pytest.raises(KeyboardInterrupt):
            agent.run_turn("look around")
    stored = store.read(store.head(session.id), "context")
    assert stored[-1]["content"].startswith("error: cancelled") and len(stored) == 5
    assert pairing_errors(stored) == []
    assert store.transcript(store.head(session.id)) == stored
