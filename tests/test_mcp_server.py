"""`gitsessions mcp` (issue 23, item 3): a real MCP client of the `mcp` SDK starts the
server as a subprocess over stdio and calls its tools: list, search, read (paged), info
and diff, scoped to the project it was started in; writes only with --allow-writes."""

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

from mcp import ClientSession, StdioServerParameters, stdio_client

from tests.fake_openai import FakeOpenAI


def exec_turn(server: FakeOpenAI, cwd: Path, prompt: str, *flags: str) -> str:
    server.reply(content=f"answer to {prompt}")
    server.reply(content=f"summary of {prompt}")
    done = subprocess.run(
        [sys.executable, "-m", "gitsessions", "exec", prompt, "--base-url", server.base_url,
         "--model", "m", "--json", *flags],
        capture_output=True, text=True, cwd=cwd, env=dict(os.environ), timeout=120,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["session"]


async def call(cwd: Path, calls: list[tuple[str, dict]], *flags: str) -> list:  # type: ignore[type-arg]
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "gitsessions", "mcp", *flags], cwd=str(cwd),
        env={k: v for k, v in os.environ.items() if k.startswith(("GITSESSIONS_", "HOME", "PATH"))},
    )  # fmt: skip
    results = []
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = await session.list_tools()
        results.append(sorted(t.name for t in tools.tools))
        for name, arguments in calls:
            result = await session.call_tool(name, arguments)
            text = "".join(getattr(c, "text", "") for c in result.content)
            results.append((result.is_error, text))
    return results


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
    assert tools == ["diff_sessions", "list_sessions", "read_session", "search_sessions",
                     "session_info"]  # fmt: skip
    assert [r["id"] for r in json.loads(listed[1])] == [mine]
    assert {h["session"] for h in json.loads(found[1])} == {mine}  # not the other project's
    first = json.loads(page[1])
    assert [m["index"] for m in first["messages"]] == [0, 1, 2] and first["next"] == 3
    assert first["messages"][1]["text"] == "how does the pagination cursor work"
    second = json.loads(rest[1])
    assert second["next"] is None and second["messages"][-1]["index"] == second["total"] - 1
    assert second["messages"][0]["index"] == 3
    assert json.loads(info[1])["id"] == mine and "system_prompt" not in json.loads(info[1])
    assert outside[0] and "among this project's sessions" in outside[1]
    assert not diffed[0] and "messages" in diffed[1]
    assert denied[0]  # no write tools without --allow-writes

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
    assert json.loads(forked[1])["parent_id"] == mine
    assert empty[0] and "empty query" in empty[1]
    shown = subprocess.run([sys.executable, "-m", "gitsessions", "info", mine, "--json"],
                           capture_output=True, text=True, timeout=60)  # fmt: skip
    assert json.loads(shown.stdout)["title"] == "API work"
