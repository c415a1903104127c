"""MCP servers given by `url` (streamable HTTP): a real server on the `mcp` SDK
(tests/fixtures/mcp_calc.py under uvicorn, on 127.0.0.1) answering as an event stream
and as JSON; an answer over the 1 MiB byte cap; an answer compressed though none was
asked (a gzip bomb). Each ends in one line and the agent goes on. `exec` runs in process
against the fake model server."""

import gzip
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.fake_openai import FakeOpenAI
from tests.hostile_servers import raw_answer
from tests.test_mcp_tools import SERVER, call, exec_, tool_messages


@contextmanager
def calc_over_http(*mode: str) -> Iterator[str]:
    """The calculator served over streamable HTTP; its endpoint's URL."""
    with subprocess.Popen(
        [sys.executable, str(SERVER), "http", *mode],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, text=True,
    ) as child:  # fmt: skip
        try:
            assert child.stdout is not None
            line = child.stdout.readline()
            assert line.startswith("listening "), line
            yield f"http://127.0.0.1:{line.split()[1]}/mcp"
        finally:
            child.terminate()
            child.wait(timeout=30)


@pytest.fixture(scope="module")
def calc_as_json() -> Iterator[str]:
    """One calculator answering as JSON for the tests of this module (it keeps no state)."""
    with calc_over_http("json") as url:
        yield url


def configure(home: Path, url: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        f'[mcp_servers.calc]\nurl = "{url}"\nstartup_timeout_sec = 60\ntool_timeout_sec = 60\n'
    )


@pytest.fixture(params=["event-stream", "json"])
def calc_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """The calculator answering as an event stream (its own), or as JSON (the module's)."""
    if request.param == "json":
        yield request.getfixturevalue("calc_as_json")
    else:
        with calc_over_http() as url:
            yield url


def test_a_real_http_server_answers_and_an_answer_over_the_cap_is_one_line(
    tmp_path, home, calc_url
):
    url = calc_url
    with FakeOpenAI(strict=True) as server:
        configure(home, url)
        server.reply(content=None, tool_calls=[call("mcp__calc__add", {"a": 2, "b": 3})])
        server.reply(content=None, tool_calls=[call("mcp__calc__big", {"mib": 3})])
        server.reply(content=None, tool_calls=[call("mcp__calc__add", {"a": 1, "b": 1})])
        server.reply(content="Done.")
        server.reply(content="Sums")
        done = exec_(server, tmp_path, "add, flood, add", "--auto-approve")
        assert done.returncode == 0, done.stderr
        names = [t["function"]["name"] for t in server.requests[0]["tools"]]
        assert {"mcp__calc__add", "mcp__calc__big"} <= set(names)
        first, flooded, after = tool_messages(server.requests[3])
    assert first == "5"
    assert flooded.startswith("error: ") and "\n" not in flooded and len(flooded) < 400
    assert "1,048,576" in flooded or "1048576" in flooded, flooded
    assert after == "2"  # the server still answers after the refused message


def test_a_call_slower_than_the_http_clients_default_timeout_is_answered(
    tmp_path, home, calc_as_json
):
    """httpx2 gives up on a read after 5 s by default; a tool may take its server's
    `tool_timeout_sec` (60 s by default) to answer."""
    with FakeOpenAI(strict=True) as server:
        configure(home, calc_as_json)
        server.reply(content=None, tool_calls=[call("mcp__calc__nap", {"seconds": 6})])
        server.reply(content="Rested.")
        server.reply(content="Nap")
        done = exec_(server, tmp_path, "take a nap", "--auto-approve")
        assert done.returncode == 0, done.stderr
        assert tool_messages(server.requests[1]) == ["slept 6"]


def test_a_compressed_answer_is_refused_before_it_is_unpacked(tmp_path, home):
    bomb = gzip.compress(b" " * (64 << 20))  # 64 MiB of JSON whitespace, ~64 KiB sent
    answer = (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n"
        + f"Content-Length: {len(bomb)}\r\nConnection: close\r\n\r\n".encode()
        + bomb
    )
    with raw_answer(answer) as base, FakeOpenAI(strict=True) as server:
        configure(home, f"{base}/mcp")
        server.reply(content="No tools.")
        server.reply(content="Nothing")
        done = exec_(server, tmp_path, "hello", "--auto-approve")
        assert done.returncode == 0, done.stderr
        assert not any(t["function"]["name"].startswith("mcp__") for t in
                       server.requests[0].get("tools", []))  # fmt: skip
    lines = [line for line in done.stderr.splitlines() if "mcp: server calc" in line]
    assert len(lines) == 1, done.stderr
    assert "compressed as 'gzip'" in lines[0], lines[0]
    log = (home / "mcp" / "calc.log").read_text()
    assert "refused" in log
