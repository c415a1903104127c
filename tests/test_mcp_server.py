"""`gitsessions mcp` (issue 23, item 3): a real MCP client of the `mcp` SDK starts the
server as a subprocess over stdio and calls its tools: list, search, read (paged), info
and diff, scoped to the project it was started in; writes only with --allow-writes.
(`--help` against tools/list builds the server in process: no process is its subject.)"""

import asyncio
import json
import os
import re
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from mcp import Client, ClientSession, StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from gitsessions.protocols.mcp_server.server import build
from gitsessions.store.sessions import SessionStore
from tests.conftest import run_gitsessions
from tests.fake_openai import FakeOpenAI


def exec_turn(server: FakeOpenAI, cwd: Path, prompt: str, *flags: str) -> str:
    server.reply(content=f"answer to {prompt}")
    server.reply(content=f"summary of {prompt}")
    done = run_gitsessions(
        "exec", prompt, "--base-url", server.base_url, "--model", "m", "--json", *flags, cwd=cwd
    )  # in this process: only what the server reads is a process's subject here
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["session"]


class Result(NamedTuple):
    error: bool
    text: str
    data: Any  # structuredContent


class Served(NamedTuple):
    init: Any  # the initialize result
    tools: dict[str, Any]  # name -> Tool, as tools/list gave them
    results: list[Result]


async def serve(cwd: Path, calls: list[tuple[str, dict]], *flags: str) -> Served:  # type: ignore[type-arg]
    """Start `gitsessions mcp` in `cwd` with the SDK's stdio client (which checks each
    result against the tool's output schema) and make `calls` in order."""
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "gitsessions", "mcp", *flags], cwd=str(cwd),
        env={k: v for k, v in os.environ.items() if k.startswith(("GITSESSIONS_", "HOME", "PATH"))},
    )  # fmt: skip
    results = []
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        init = await session.initialize()
        tools = {t.name: t for t in (await session.list_tools()).tools}
        for name, arguments in calls:
            try:
                result = await session.call_tool(name, arguments)
            except MCPError as error:  # a protocol error: an unknown tool
                results.append(Result(True, f"{error.error.code}: {error.error.message}", None))
                continue
            text = "".join(getattr(c, "text", "") for c in result.content)
            results.append(Result(result.is_error, text, result.structured_content))
    return Served(init, tools, results)


async def call(cwd: Path, calls: list[tuple[str, dict]], *flags: str) -> list:  # type: ignore[type-arg]
    served = await serve(cwd, calls, *flags)
    return [sorted(served.tools), *served.results]


def project(tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    path.mkdir()
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path


def test_another_agent_searches_and_reads_this_projects_sessions(tmp_path):
    here, other = project(tmp_path, "here"), project(tmp_path, "other")
    with FakeOpenAI(strict=True) as server:
        mine = exec_turn(server, here, "how does the pagination cursor work")
        for n in range(3):
            exec_turn(server, here, f"more {n}", "--resume", mine)
        theirs = exec_turn(server, other, "pagination elsewhere")
    tools, listed, found, page, rest, info, outside, diffed, denied = asyncio.run(call(here, [
        ("list_sessions", {}),
        ("search_sessions", {"query": "pagination"}),
        ("read_session", {"session": mine[:8], "start": 0, "count": 3}),
        ("read_session", {"session": mine, "start": 3, "count": 50}),
        ("session_info", {"session": mine}),
        ("read_session", {"session": theirs}),
        ("diff_sessions", {"a": f"{mine}@turn:1", "b": mine}),
        ("pin", {"session": mine, "text": "x"}),
    ]))  # fmt: skip
    assert tools == ["blame", "diff_sessions", "list_sessions", "read_session", "search_sessions",
                     "session_info", "show_compaction"]  # fmt: skip
    assert [r["id"] for r in listed.data["sessions"]] == [mine]
    assert {h["session"] for h in found.data["hits"]} == {mine}  # not the other project's
    first = page.data
    assert [m["index"] for m in first["messages"]] == [0, 1, 2] and first["next"] == 3
    assert first["messages"][1]["text"] == "how does the pagination cursor work"
    second = rest.data
    assert second["next"] is None and second["messages"][-1]["index"] == second["total"] - 1
    assert second["messages"][0]["index"] == 3
    assert info.data["id"] == mine and "system_prompt" not in info.data
    assert outside[0] and "among this project's sessions" in outside[1]
    assert not diffed[0] and "messages" in diffed[1]
    assert denied.text.startswith("-32602: no tool 'pin'")  # no writes without --allow-writes

    everything = asyncio.run(call(here, [("read_session", {"session": theirs})], "--all-sessions"))
    assert not everything[1][0]


def test_writes_only_with_allow_writes(tmp_path):
    here = project(tmp_path, "here")
    with FakeOpenAI(strict=True) as server:
        mine = exec_turn(server, here, "a session")
    tools, pinned, renamed, forked, empty = asyncio.run(call(here, [
        ("pin", {"session": mine, "text": "keep the API stable"}),
        ("rename", {"session": mine, "title": "API work"}),
        ("fork", {"session": mine}),
        ("search_sessions", {"query": " "}),
    ], "--allow-writes"))  # fmt: skip
    assert {"pin", "rename", "fork"} <= set(tools)
    assert not pinned[0] and not renamed[0] and not forked[0], (pinned, renamed, forked)
    assert forked.data["parent_id"] == mine
    assert empty[0] and "empty query" in empty[1]
    shown = run_gitsessions("info", mine, "--json")
    assert json.loads(shown.stdout)["title"] == "API work"


def test_an_id_out_of_scope_reads_as_one_that_does_not_exist(tmp_path):
    """Another project's id, its prefix and an id that exists nowhere get one answer:
    ids of other projects cannot be enumerated a prefix at a time."""
    here, other = project(tmp_path, "here"), project(tmp_path, "other")
    with FakeOpenAI(strict=True) as server:
        exec_turn(server, here, "mine")
        theirs = exec_turn(server, other, "theirs")
    unknown = "0123456789abcdef0123456789abcdef"
    assert not theirs.startswith("0123")
    asked = [theirs[:4], theirs[:8], theirs, unknown[:4], unknown[:8], unknown]
    served = asyncio.run(serve(here, [
        *[("read_session", {"session": s}) for s in asked],
        *[("session_info", {"session": s}) for s in asked],
        ("diff_sessions", {"a": theirs[:8], "b": unknown[:8]}),
    ]))  # fmt: skip
    assert all(r.error for r in served.results)
    answers = {r.text.replace(s, "ID") for r, s in zip(served.results, asked * 2, strict=False)}
    assert len(answers) == 1 and "no session 'ID' among this project's sessions" in answers.pop()
    assert served.results[-1].text == served.results[4].text.replace(unknown[:8], theirs[:8])


REFUSED = [
    ("read_session", {"count": 0}, "count must be an integer from 1 to 50 (got 0)"),
    ("read_session", {"count": 51}, "count must be an integer from 1 to 50 (got 51)"),
    ("read_session", {"start": -5}, "start must be an integer of 0 or more (got -5)"),
    ("read_session", {"count": "3"}, "count must be an integer from 1 to 50 (got '3')"),
    ("read_session", {"page": 2}, "no argument 'page' (it takes session, start, count)"),
    ("list_sessions", {"limit": 0}, "limit must be an integer from 1 to 200 (got 0)"),
    ("list_sessions", {"limit": -1}, "limit must be an integer from 1 to 200 (got -1)"),
    ("search_sessions", {"query": "x", "limit": 0},
     "limit must be an integer from 1 to 200 (got 0)"),
    ("search_sessions", {}, "query is required"),
    ("list_sessions", {"include_archived": "yes"},
     "include_archived must be true or false (got 'yes')"),
]  # fmt: skip


def isolated(root: Path, patch: pytest.MonkeyPatch) -> None:
    """The environment conftest's `isolated_env` gives a test, under `root`: for a
    module's fixture, made before any test's."""
    for name in list(os.environ):
        if name.startswith(("GIT_", "GITSESSIONS_", "OPENAI_")):
            patch.delenv(name)
    patch.setenv("GITSESSIONS_HOME", str(root / "gshome"))
    patch.setenv("HOME", str(root / "userhome"))
    patch.setenv("XDG_DATA_HOME", str(root / "xdg-data"))
    patch.setenv("XDG_CONFIG_HOME", str(root / "xdg-config"))
    patch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    patch.setenv("GITSESSIONS_EXEC_SUMMARY", "wait")


@pytest.fixture(scope="module")
def refusals(tmp_path_factory: pytest.TempPathFactory) -> list[Result]:
    """Every call of REFUSED made to one server over a project of one session, in order
    (a refused call runs nothing, so one server and one session serve them all)."""
    root = tmp_path_factory.mktemp("refusals")
    with pytest.MonkeyPatch.context() as patch:
        isolated(root, patch)
        here = project(root, "here")
        with FakeOpenAI(strict=True) as server:
            mine = exec_turn(server, here, "a session")
        calls = [
            (name, {"session": mine, **arguments} if name == "read_session" else arguments)
            for name, arguments, _said in REFUSED
        ]
        return asyncio.run(serve(here, calls)).results


@pytest.mark.parametrize(("name", "arguments", "said"), REFUSED)
def test_arguments_out_of_range_are_refused_in_one_line(refusals, name, arguments, said):
    assert len(refusals) == len(REFUSED)  # one answer to each call
    result = refusals[REFUSED.index((name, arguments, said))]
    assert result.error and result.text == f"{name}: {said}" and result.data is None


def test_the_server_answers_as_the_mcp_spec_shapes_it(tmp_path):
    """A version, tools as the only capability, annotations and an output schema on
    every tool, and each result an object (structuredContent, matching the schema: the
    SDK's client checks it) with the same JSON as text."""
    here = project(tmp_path, "here")
    with FakeOpenAI(strict=True) as server:
        mine = exec_turn(server, here, "a session")
    served = asyncio.run(serve(here, [
        ("list_sessions", {}),
        ("search_sessions", {"query": "session"}),
        ("read_session", {"session": mine}),
        ("session_info", {"session": mine}),
        ("diff_sessions", {"a": mine, "b": mine}),
        ("rename", {"session": mine, "title": "renamed"}),
        ("pin", {"session": mine, "text": "a note"}),
        ("fork", {"session": mine}),
    ], "--allow-writes"))  # fmt: skip
    info = served.init
    assert info.server_info.name == "gitsessions"
    assert info.server_info.version == version("gitsessions")
    capabilities = info.capabilities
    assert capabilities.tools is not None
    assert capabilities.prompts is None and capabilities.resources is None
    writes = {"pin", "rename", "fork", "merge_session"}
    assert len(served.tools) == 11
    for name, tool in served.tools.items():
        hints = tool.annotations
        assert hints is not None and hints.title and tool.title, name
        assert hints.read_only_hint is (name not in writes), name
        assert hints.destructive_hint is (name in ("rename", "merge_session")), name
        assert hints.open_world_hint is False, name
        assert tool.output_schema is not None and tool.output_schema["type"] == "object"
        assert tool.input_schema["additionalProperties"] is False
    for result in served.results:
        assert not result.error, result.text
        assert isinstance(result.data, dict) and "result" not in result.data
        assert json.loads(result.text) == result.data
    listed, _found, page, _info, diffed, renamed, pinned, forked = served.results
    assert [s["id"] for s in listed.data["sessions"]] == [mine]
    assert page.data["messages"][1]["text"] == "a session" and page.data["next"] is None
    assert set(diffed.data) == {"ancestor", "a", "b"}
    assert renamed.data == {"session": mine, "title": "renamed"}
    assert pinned.data == {"session": mine, "pins": 1}
    assert forked.data["parent_id"] == mine


def listed(store: SessionStore, workspace: Path, allow_writes: bool) -> set[str]:
    """The tools `tools/list` gives, the server built in process (as `gitsessions mcp`
    builds it, with or without --allow-writes) and asked by the SDK's own client."""
    server = build(store, dict(os.environ), workspace, lambda archived, where: [], False,
                   allow_writes)  # fmt: skip

    async def names() -> set[str]:
        async with Client(server) as client:
            return {tool.name for tool in (await client.list_tools()).tools}

    return asyncio.run(names())


def test_help_names_every_tool_the_server_offers(tmp_path, cli, store):
    """Issue 41, item 10: `mcp --help` left out `blame`; it names what tools/list gives,
    the write tools under --allow-writes."""
    here = project(tmp_path, "here")
    reads = listed(store, here, allow_writes=False)
    writes = listed(store, here, allow_writes=True) - reads
    assert "blame" in reads and writes == {"pin", "rename", "fork", "merge_session"}
    shown = " ".join(cli("mcp", "--help").stdout.split())
    body, _, options = shown.partition("Options:")
    allow = options.partition("--allow-writes")[2].partition(" -h, --help")[0]
    said, offered = set(re.findall(r"\w+", body)), set(re.findall(r"\w+", allow))
    assert reads <= said and not writes & said, body
    assert writes <= offered and not reads & offered, allow


def test_calls_written_with_the_end_of_input_are_all_answered(tmp_path):
    """Issue 41, item 10: a client that writes its calls and closes stdin at once got no
    answer to the last of them (the SDK dropped the calls it had not started when its
    input ended); every call read is now answered before the server exits."""
    here = project(tmp_path, "here")
    with FakeOpenAI(strict=True) as server:
        mine = exec_turn(server, here, "a session to read")
    calls = [
        ("list_sessions", {}),
        ("search_sessions", {"query": "session"}),
        ("read_session", {"session": mine}),
        ("session_info", {"session": mine}),
    ] * 5
    opening = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "a script", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]  # fmt: skip
    requests = opening + [
        {"jsonrpc": "2.0", "id": n, "method": "tools/call",
         "params": {"name": name, "arguments": arguments}}
        for n, (name, arguments) in enumerate(calls, 1)
    ]  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "gitsessions", "mcp"], cwd=here, capture_output=True, text=True,
        input="".join(json.dumps(r) + "\n" for r in requests), timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    answers = {m["id"]: m for m in map(json.loads, done.stdout.splitlines())}
    assert sorted(answers) == list(range(len(calls) + 1))
    results = [answers[n].get("result") or {} for n in range(1, len(calls) + 1)]
    assert all(r.get("isError") is False for r in results), results
