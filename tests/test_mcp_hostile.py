"""Hostile MCP servers of `[mcp_servers]` (issue 32): tool names that do not match the
API's pattern in full or that two tools share, JSON-RPC the SDK cannot validate, a call
past its timeout, one-line results that never end or are 200 MB, and more tools than
the context budget holds. Each ends in one line and the agent goes on. The servers are
real processes (tests/hostile_servers.py, run as `mcp KIND`) driven by `exec`, run in
process, against the fake model server."""

import json
import sys
from pathlib import Path

from tests.fake_openai import FakeOpenAI
from tests.test_mcp_tools import call, exec_

HOSTILE = Path(__file__).parent / "hostile_servers.py"
CALC = Path(__file__).parent / "fixtures" / "mcp_calc.py"


def table(name: str, kind: str, arg: str = "", extra: str = "") -> str:
    args = [str(HOSTILE), "mcp", kind, arg]
    return (
        f"[mcp_servers.{name}]\ncommand = {json.dumps(sys.executable)}\n"
        f"args = {json.dumps(args)}\nstartup_timeout_sec = 60\n{extra}\n"
    )  # a start-up timeout a loaded machine cannot run out


def configure(home: Path, *tables: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text("\n".join(tables))


def offered(request: dict) -> list[str]:  # type: ignore[type-arg]
    return [t["function"]["name"] for t in request.get("tools", [])]


def tool_messages(request: dict) -> list[str]:  # type: ignore[type-arg]
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


def test_names_match_the_api_pattern_in_full_and_a_shared_name_is_offered_for_neither(
    tmp_path, home
):
    configure(
        home,
        table("h", "names", json.dumps(["x\n", "ok"])),
        table("a_", "names", json.dumps(["_b"])),  # mcp__a_ + __ + _b
        table("a", "names", json.dumps(["__b"])),  # mcp__a + __ + __b: the same name
        table("d", "names", json.dumps(["q", "q"])),  # one server, one name twice
    )
    with FakeOpenAI(strict=True) as server:
        server.reply(content="ok")
        server.reply(content="Title")
        done = exec_(server, tmp_path, "hi")
        assert done.returncode == 0, done.stderr
        names = offered(server.requests[0])
    assert "mcp__h__ok" in names
    assert not [n for n in names if n.startswith("mcp__") and n not in ("mcp__h__ok",)], names
    shared = [line for line in done.stderr.splitlines() if "mcp__a____b" in line]
    assert len(shared) == 1 and "servers a_ and a" in shared[0], done.stderr
    twice = [line for line in done.stderr.splitlines() if "mcp__d__q" in line]
    assert twice == ["mcp: server d lists mcp__d__q twice; it is not offered"], done.stderr
    bad = [line for line in done.stderr.splitlines() if "mcp: server h" in line]
    assert len(bad) == 1 and "tool names the model cannot call" in bad[0], done.stderr


def test_a_server_name_with_a_double_underscore_is_one_config_error(tmp_path, home):
    configure(home, table("docs__search", "names", json.dumps(["query"])))
    with FakeOpenAI(strict=True) as server:
        done = exec_(server, tmp_path, "hi")
    assert done.returncode == 2
    errors = [line for line in done.stderr.splitlines() if line.startswith("error")]
    assert len(errors) == 1 and "docs__search" in errors[0] and "without __" in errors[0]


def test_json_rpc_the_sdk_cannot_validate_goes_to_the_servers_log(tmp_path, home):
    configure(home, table("h", "invalid"))
    with FakeOpenAI(strict=True) as server:
        server.reply(content=None, tool_calls=[call("mcp__h__flood", {})])
        server.reply(content="Done.")
        server.reply(content="Title")
        done = exec_(server, tmp_path, "call it", "--auto-approve")
        assert done.returncode == 0, done.stderr
        assert tool_messages(server.requests[1]) == ["fine"]
    assert "Traceback" not in done.stderr and "validation" not in done.stderr, done.stderr
    assert "pydantic" not in done.stderr
    log = (home / "mcp" / "h.log").read_text()
    assert "not a JSON-RPC message" in log and "Failed to validate notification" in log


def test_a_call_past_its_timeout_is_cancelled_and_the_server_restarted(tmp_path, home):
    pids = tmp_path / "pids"
    env = f"{{ HOSTILE_PID_FILE = {json.dumps(str(pids))} }}"
    configure(home, table("h", "sleep", extra=f"tool_timeout_sec = 2\nenv = {env}"))
    with FakeOpenAI(strict=True) as server:
        server.reply(content=None, tool_calls=[call("mcp__h__flood", {"seconds": 120})])
        server.reply(content=None, tool_calls=[call("mcp__h__flood", {"seconds": 0})])
        server.reply(content="Done.")
        server.reply(content="Title")
        done = exec_(server, tmp_path, "sleep twice", "--auto-approve")
        assert done.returncode == 0, done.stderr
        first, second = tool_messages(server.requests[2])
    assert first.startswith("error: h's flood did not answer within 2 s") and "\n" not in first
    assert "cancelled" in first and "connection was closed" in first
    assert second == "slept 0"  # a new process answered
    assert len(pids.read_text().split()) == 2


def test_an_endless_and_a_200_mb_line_are_cut_in_one_line_each(tmp_path, home):
    configure(
        home,
        table("e", "endless", extra="tool_timeout_sec = 20"),
        table("g", "huge", "200", extra="tool_timeout_sec = 20"),
    )
    with FakeOpenAI(strict=True) as server:
        server.reply(content=None, tool_calls=[call("mcp__e__flood", {})])
        server.reply(content=None, tool_calls=[call("mcp__g__flood", {})])
        server.reply(content="Done.")
        server.reply(content="Title")
        done = exec_(server, tmp_path, "flood me", "--auto-approve")
        assert done.returncode == 0, done.stderr
        results = tool_messages(server.requests[2])
    assert len(results) == 2
    for name, result in zip(("e", "g"), results, strict=True):
        assert result.startswith(f"error: {name}'s flood sent a message over 1,048,576 bytes")
        assert "\n" not in result and "cut while read" in result


def test_a_server_over_the_context_budget_is_left_out_and_the_agent_starts(tmp_path, home):
    configure(
        home,
        table("big", "tools", "3000"),
        table("wide", "schema", "3000"),
        table("many", "tools", "6000"),  # one listing of 6,000: the first 5,000 read
        f"[mcp_servers.calc]\ncommand = {json.dumps(sys.executable)}\n"
        f"args = [{json.dumps(str(CALC))}]\nstartup_timeout_sec = 60\n",
    )
    with FakeOpenAI(strict=True) as server:
        server.reply(content="ok")
        server.reply(content="Title")
        done = exec_(server, tmp_path, "hi", "--max-context-tokens", "24000")
        assert done.returncode == 0, done.stderr
        names = offered(server.requests[0])
    assert "mcp__calc__add" in names
    assert not [n for n in names if n.startswith(("mcp__big__", "mcp__wide__", "mcp__many__"))]
    big = [line for line in done.stderr.splitlines() if "mcp: server big" in line]
    assert len(big) == 1 and "tokens" in big[0] and "not offered" in big[0], done.stderr
    wide = [line for line in done.stderr.splitlines() if "mcp: server wide" in line]
    assert len(wide) == 1 and "over 32 KiB ('wide')" in wide[0], done.stderr
    many = [line for line in done.stderr.splitlines() if "mcp: server many" in line]
    assert "only the first 5,000 of its tools are read" in many[0], done.stderr
    assert "many's tools need about" in many[1] and not any("mcp__many__" in n for n in names)
