"""MCP tools in the agent (issue 23, item 2): `[mcp_servers.NAME]` in config.toml, in
Codex's shape, starts a real MCP server (tests/fixtures/mcp_calc.py, on the `mcp` SDK)
over stdio; its tools are offered as `mcp__<server>__<tool>`, need approval like any
mutating tool, and a server that fails to start or dies is one line while the agent
goes on. `exec` runs in process against the fake model server."""

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import run_gitsessions
from tests.fake_openai import FakeOpenAI

SERVER = Path(__file__).parent / "fixtures" / "mcp_calc.py"


def configure(home: Path, extra: str = "") -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        f"[mcp_servers.calc]\ncommand = {json.dumps(sys.executable)}\n"
        f'args = [{json.dumps(str(SERVER))}]\ndisabled_tools = ["shout"]\n'
        "startup_timeout_sec = 60\n" + extra
    )  # a start-up timeout a loaded machine cannot run out


def exec_(server: FakeOpenAI, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`exec` in this process (the process is not the subject: the hub closes every
    server and its loop, so nothing is left open for the next test)."""
    return run_gitsessions(
        "exec", *args, "--base-url", server.base_url, "--model", "m", "--json", cwd=cwd
    )


def call(name: str, arguments: dict) -> dict:  # type: ignore[type-arg]
    return {"name": name, "arguments": arguments}


def tool_messages(request: dict) -> list[str]:  # type: ignore[type-arg]
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


def test_an_mcp_tool_is_offered_approved_and_answers(tmp_path, home):
    configure(home)
    with FakeOpenAI(strict=True) as server:
        server.reply(content=None, tool_calls=[call("mcp__calc__add", {"a": 2, "b": 3})])
        server.reply(content="Five.")
        server.reply(content="Sums")
        done = exec_(server, tmp_path, "add 2 and 3", "--auto-approve")
        assert done.returncode == 0, done.stderr
        names = [t["function"]["name"] for t in server.requests[0]["tools"]]
        assert "mcp__calc__add" in names and "mcp__calc__quit" in names
        assert "mcp__calc__shout" not in names  # disabled_tools
        offered = next(t for t in server.requests[0]["tools"]
                       if t["function"]["name"] == "mcp__calc__add")  # fmt: skip
        assert offered["function"]["parameters"]["properties"]["a"]["type"] == "integer"
        assert tool_messages(server.requests[1]) == ["5"]

        # without --auto-approve, exec runs none of them, and says why
        server.reply(content=None, tool_calls=[call("mcp__calc__add", {"a": 1, "b": 1})])
        server.reply(content="Could not.")
        done = exec_(server, tmp_path, "add again", "--resume", json.loads(done.stdout)["session"])
        assert done.returncode in (0, 3), done.stderr
        assert tool_messages(server.requests[-1])[-1].startswith("error: not run:")


def test_a_server_that_does_not_start_or_dies_is_one_line(tmp_path, home):
    """A server that does not start is one line and offers nothing; one that ends in the
    middle of a session (a crash) starts again at the next call to its tools, at most
    MAX_RESTARTS times, then its calls say it is gone."""
    configure(home, '\n[mcp_servers.broken]\ncommand = "/nonexistent/mcp-server"\n')
    quit_, add = call("mcp__calc__quit", {}), call("mcp__calc__add", {"a": 1, "b": 2})
    with FakeOpenAI(strict=True) as server:
        server.reply(content=None, tool_calls=[quit_, add])
        server.reply(content=None, tool_calls=[quit_, quit_, quit_, add])
        server.reply(content="The calculator is gone.")
        server.reply(content="Gone")
        done = exec_(server, tmp_path, "quit then add", "--auto-approve")
        assert done.returncode == 0, done.stderr
        lines = [line for line in done.stderr.splitlines() if "mcp: server broken" in line]
        assert len(lines) == 1 and "did not start" in lines[0], done.stderr
        names = [t["function"]["name"] for t in server.requests[0]["tools"]]
        assert not any(n.startswith("mcp__broken__") for n in names)
        first = tool_messages(server.requests[1])
        later = tool_messages(server.requests[2])[len(first) :]
    assert first[0].startswith("error: MCP server calc is gone") and "starts again" in first[0]
    assert first[1] == "3"  # started again (1 of MAX_RESTARTS)
    assert all(r.startswith("error: MCP server calc is gone") for r in later), later
    assert "starts again" in later[1] and "starts again" not in later[2]  # the 3rd restart
    assert "starts again" not in later[3]  # no restart left: the call is not answered


def test_a_bad_mcp_table_is_one_config_error(tmp_path, home):
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text('[mcp_servers.x]\ncommand = "a"\nurl = "http://b"\n')
    with FakeOpenAI(strict=True) as server:
        done = exec_(server, tmp_path, "hi")
    assert done.returncode == 2
    assert "give either command (stdio) or url (streamable HTTP)" in done.stderr
    assert [line for line in done.stderr.splitlines() if line.startswith("error:")] == [
        line for line in done.stderr.splitlines() if "mcp_servers" in line
    ]
