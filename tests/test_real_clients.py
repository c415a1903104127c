"""Real clients written by others drive `gitsessions mcp` and `gitsessions acp` (issue 32):
the `@modelcontextprotocol/inspector` CLI lists and calls every MCP tool, and every message
a scripted editor session receives from `gitsessions acp` validates against ACP's official
`schema.json` (from the npm package `@agentclientprotocol/sdk`). Both are pinned and
installed by `.ci/install-test-tools`; elsewhere these tests skip, naming it.

The assertions are protocol facts (no JSON-RPC error, results shaped as the specs say),
not the servers' wording, which other tests pin."""

import json
import os
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from gitsessions.services.sessions import manage
from gitsessions.store.sessions import SessionStore
from tests.acp_raw import PARAMS, RESPONSES, RawEditor, Schema
from tests.diff_helpers import turn
from tests.fake_openai import FakeOpenAI
from tests.real_tools import INSPECTOR, acp_schema, need, node
from tests.test_mcp_server import exec_turn
from tests.view_demo import compaction

WAIT = 60  # seconds any one step may take (never reached when well)


def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path


def inspector(cwd: Path, *args: str) -> Any:
    """One run of the inspector's CLI against `gitsessions mcp --allow-writes`; its JSON."""
    done = subprocess.run(
        [node(), str(INSPECTOR), "--cli",
         "-e", f"GITSESSIONS_HOME={os.environ['GITSESSIONS_HOME']}",
         "-e", f"HOME={os.environ['HOME']}",
         sys.executable, "-m", "gitsessions", "mcp", "--allow-writes", *args],
        capture_output=True, text=True, cwd=cwd, timeout=WAIT, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, (args, done.stdout, done.stderr)  # no protocol error
    return json.loads(done.stdout)


def arguments(tool: dict[str, Any], values: dict[str, Any]) -> list[str]:
    """--tool-arg for each argument the tool requires, and for every optional one we know:
    every value JSON-encoded, as the inspector reads `k=v` values as JSON when they
    parse (a session id of digits only would be sent as a number)."""
    schema = tool["inputSchema"]
    missing = set(schema.get("required", [])) - set(values)
    assert not missing, f"{tool['name']} requires {missing}: give this test a value"
    out = []
    for name in schema.get("properties", {}):
        if name in values:
            out += ["--tool-arg", f"{name}={json.dumps(values[name])}"]
    return out


def compacted_with_a_fork(session: str) -> str:
    """`session` given compaction 1, and a fork of it with a turn of its own to merge
    back: the fork's id."""
    store = SessionStore(Path(os.environ["GITSESSIONS_HOME"]))
    try:
        head = store.head(session)
        compaction(store, head, [m for m, _ref in store.context_lines(head)])
        fork = manage.fork(store, session, "tried another way")
        return turn(store, store.head(fork.id), 3, "fork").id
    finally:
        store.close()


def calls(cwd: Path, listed: list[dict[str, Any]], values: dict[str, Any]) -> dict[str, Any]:
    """Each listed tool called by an inspector of its own (a run calls one tool): the
    read-only tools side by side, the write tools one after another in listed order
    beside them (each run is a process pair mostly starting up: two cores at once)."""

    def one(tool: dict[str, Any]) -> Any:
        return inspector(
            cwd, "--method", "tools/call", "--tool-name", tool["name"], *arguments(tool, values)
        )

    writes = [t for t in listed if not t.get("annotations", {}).get("readOnlyHint")]
    with ThreadPoolExecutor(max_workers=3) as pool:
        chain = pool.submit(lambda: {t["name"]: one(t) for t in writes})
        reads = {t["name"]: pool.submit(one, t) for t in listed if t not in writes}
        return {**{name: r.result() for name, r in reads.items()}, **chain.result()}


def test_the_inspector_lists_and_calls_every_mcp_tool(tmp_path):
    need(INSPECTOR)
    here = project(tmp_path)
    with FakeOpenAI(strict=True) as server:
        first = exec_turn(server, here, "how does the pagination cursor work")
        exec_turn(server, here, "and the page size", "--resume", first)
        second = exec_turn(server, here, "a second session")
    joined = compacted_with_a_fork(first)  # for show_compaction and merge_session
    (here / "notes.txt").write_text("a line for blame\n")
    listed = inspector(here, "--method", "tools/list")["tools"]
    names = [tool["name"] for tool in listed]
    assert {"list_sessions", "search_sessions", "read_session", "session_info"} <= set(names)
    assert {"pin", "rename", "fork"} <= set(names)  # --allow-writes
    values = {
        "session": first, "a": f"{first}@turn:1", "b": first, "query": "pagination",
        "text": "a pinned note", "title": "renamed by the inspector", "at": "turn:1",
        "start": 0, "count": 3, "limit": 5, "include_archived": True,
        "file": "notes.txt", "line": 1, "number": 1, "fork": joined, "code": False,
    }  # fmt: skip
    for tool in listed:
        assert tool["inputSchema"]["type"] == "object", tool["name"]
        Draft202012Validator.check_schema(tool["inputSchema"])
        if "outputSchema" in tool:
            Draft202012Validator.check_schema(tool["outputSchema"])
    results = calls(here, listed, values)
    assert sorted(results) == sorted(names)  # every tool called, once
    for tool in listed:
        result = results[tool["name"]]
        assert result.get("isError", False) is False, (tool["name"], result)
        assert result["content"], tool["name"]
        assert all(
            item["type"] in {"text", "resource_link", "resource"} for item in result["content"]
        )
        if "outputSchema" in tool:  # then structured content is required, and must fit it
            assert "structuredContent" in result, tool["name"]
            Draft202012Validator(tool["outputSchema"]).validate(result["structuredContent"])
    # a call that fails is a tool error (isError), never a protocol error
    read = next(tool for tool in listed if tool["name"] == "read_session")
    bad = {**values, "session": "feedfacefeedface"}
    result = inspector(here, "--method", "tools/call", "--tool-name", "read_session",
                       *arguments(read, bad))  # fmt: skip
    assert result["isError"] is True and result["content"][0]["type"] == "text"
    assert second  # the other session is in the home the tools read


WRITE = {"name": "write_file", "arguments": {"path": "notes.txt", "content": "hi\n"}}
CLIENT = {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False}


def test_every_message_of_an_editor_session_validates_against_acps_schema(tmp_path):
    schema = Schema()
    ws = tmp_path / "project"
    ws.mkdir()
    held = threading.Event()
    with FakeOpenAI(strict=True) as server:
        server.reply(tool_calls=[WRITE])
        server.reply(content="wrote notes.txt")
        server.reply(content="A title")  # the list summary, asked after the first reply
        server.reply(content="Held answer begins here, then the server waits", hold=held)
        editor = RawEditor(server.base_url, "fake-model", schema, tmp_path / "acp-stderr.txt")
        try:
            ready = editor.ask("initialize", {"protocolVersion": 1, "clientCapabilities": CLIENT})
            assert ready["result"]["protocolVersion"] == 1
            new = editor.ask("session/new", {"cwd": str(ws), "mcpServers": []})
            sid = new["result"]["sessionId"]
            prompt = [{"type": "text", "text": "write a note"}]
            done = editor.ask("session/prompt", {"sessionId": sid, "prompt": prompt})
            assert done["result"]["stopReason"] == "end_turn"
            assert (ws / "notes.txt").read_text() == "hi\n"  # allowed, and so it ran
            turn = editor.start("session/prompt", {"sessionId": sid, "prompt": [
                {"type": "text", "text": "hold on"}]})  # fmt: skip
            while True:  # the first piece of the held reply (the first turn's come before)
                update = editor.updates.get(timeout=WAIT)["params"]["update"]
                chunk = update["sessionUpdate"] == "agent_message_chunk"
                if chunk and update["content"]["text"].startswith("Held"):
                    break
            editor.notify("session/cancel", {"sessionId": sid})
            assert editor.answer(turn)["result"]["stopReason"] == "cancelled"
            held.set()
            listed = editor.ask("session/list", {"cwd": str(ws)})
            assert [s["sessionId"] for s in listed["result"]["sessions"]] == [sid]
            loaded = editor.ask("session/load", {"sessionId": sid, "cwd": str(ws),
                                                 "mcpServers": []})  # fmt: skip
            assert "result" in loaded
            unknown = editor.ask("session/load", {"sessionId": "feedfacefeedface",
                                                  "cwd": str(ws), "mcpServers": []})  # fmt: skip
            assert "error" in unknown
            nosuch = editor.ask("session/nosuch", {})
            assert nosuch["error"]["code"] == -32601  # method not found
            assert editor.close() == 0
        finally:
            held.set()
            if editor.child.poll() is None:
                editor.child.kill()
    kinds = editor.validate_all()
    assert kinds["session/request_permission"] == 1
    assert kinds["session/update"] > 5 and kinds["error"] == 2
    assert {"initialize", "session/new", "session/prompt", "session/list", "session/load"} <= set(
        kinds
    )
    updates = {m["params"]["update"]["sessionUpdate"] for m in editor.received
               if m.get("method") == "session/update"}  # fmt: skip
    assert {"agent_message_chunk", "user_message_chunk", "tool_call", "tool_call_update"} <= updates


def test_the_schema_holds_every_definition_these_tests_check():
    assert {*RESPONSES.values(), *PARAMS.values(), "Error"} <= set(acp_schema()["$defs"])
