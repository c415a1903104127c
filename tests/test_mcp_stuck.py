"""`gitsessions mcp` never held by one tool call (issue 42, item 8): `blame` of a FIFO is
one error line at once, a call that cannot end (a writer waiting on the store's lock,
held as a `gc` holds it) is answered an error at the deadline while `ping` is answered
meanwhile, and closing stdin ends the server even with that call still stuck. The
server is a real process spoken to over its pipes, JSON-RPC a line at a time; every
wait has a bound, so a regression fails instead of hanging."""

import fcntl
import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.shared.message import SessionMessage

from gitsessions.protocols.mcp_server.calls import QUEUED
from gitsessions.protocols.mcp_server.draining import answered_first
from tests.conftest import run_gitsessions
from tests.fake_openai import FakeOpenAI
from tests.test_mcp_server import exec_turn, project

BOUND = 60.0  # seconds any one answer may take on a loaded machine before the test fails


class Wire:
    """A `gitsessions mcp` process and the JSON-RPC lines it writes, read in a thread."""

    def __init__(self, cwd: Path, *flags: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "gitsessions", "mcp", *flags], cwd=cwd,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=dict(os.environ),
        )  # fmt: skip
        self.lines: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.aside: dict[Any, dict[str, Any]] = {}
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.request(0, "initialize", {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"},
        })  # fmt: skip
        assert "result" in self.answer(0)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(json.loads(line))
        self.lines.put(None)

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def request(self, number: int, method: str, params: dict[str, Any] | None = None) -> None:
        self.send({"jsonrpc": "2.0", "id": number, "method": method,
                   **({"params": params} if params is not None else {})})  # fmt: skip

    def call(self, number: int, tool: str, arguments: dict[str, Any]) -> None:
        self.request(number, "tools/call", {"name": tool, "arguments": arguments})

    def answer(self, number: int) -> dict[str, Any]:
        """The answer to request `number` (others' answers in between are kept aside)."""
        while number not in self.aside:
            try:
                message = self.lines.get(timeout=BOUND)
            except queue.Empty:
                raise AssertionError(f"no answer to request {number} within {BOUND} s") from None
            assert message is not None, f"the server ended before answering {number}"
            self.aside[message.get("id")] = message
        return self.aside.pop(number)

    def close(self) -> int:
        """Close stdin; the exit code, or a failure if the process stays."""
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            return self.process.wait(timeout=BOUND)
        except subprocess.TimeoutExpired:
            raise AssertionError("the server did not end when its stdin closed") from None
        finally:
            self.release()

    def release(self) -> None:
        """The process ended (killed if it had not), its output read to the end, its
        pipes closed."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.reader.join(BOUND)
        for pipe in (self.process.stdin, self.process.stdout, self.process.stderr):
            if pipe is not None:
                pipe.close()


def error_text(answer: dict[str, Any]) -> str:
    result = answer["result"]
    assert result["isError"] is True, result
    return "".join(c["text"] for c in result["content"])


@pytest.fixture
def here(tmp_path: Path) -> tuple[Path, str]:
    root = project(tmp_path, "here")
    with FakeOpenAI(strict=True) as server:
        return root, exec_turn(server, root, "a session")


def test_blame_of_a_fifo_is_one_error_line_and_the_server_goes_on(here):
    root, sid = here
    os.mkfifo(root / "pipe")
    wire = Wire(root)
    try:
        wire.call(1, "blame", {"file": "pipe", "line": 1})
        said = error_text(wire.answer(1))
        assert "pipe is a FIFO" in said and "\n" not in said, said
        wire.call(2, "session_info", {"session": sid})
        assert wire.answer(2)["result"]["structuredContent"]["id"] == sid
    finally:
        assert wire.close() == 0


def test_a_stuck_call_is_answered_at_its_deadline_ping_meanwhile_and_eof_ends_it(here, home):
    root, sid = here
    wire = Wire(root, "--allow-writes", "--timeout", "2")
    lock = os.open(home / "store.git" / "gitsessions.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)  # as `gc` holds it: every writer waits
        wire.call(1, "pin", {"session": sid, "text": "never written"})
        wire.request(2, "ping")
        assert wire.answer(2)["result"] == {}  # answered while the pin waits
        said = error_text(wire.answer(1))
        assert said.startswith("pin: no answer within 2 s; given up"), said
        wire.call(3, "read_session", {"session": sid})  # queued behind the stuck pin
        said = error_text(wire.answer(3))
        assert said.startswith("read_session: not started within 2 s"), said
        assert "behind a pin call" in said and "it will not run" in said
        wire.request(4, "ping")
        assert wire.answer(4)["result"] == {}
        assert wire.close() == 0  # the pin still waits on the lock: stdin's end ends it
    finally:
        os.close(lock)
        wire.release()
    shown = run_gitsessions("pins", sid)
    assert "never written" not in shown.stdout  # given up with the process, never run


def request(number: int) -> SessionMessage:
    return SessionMessage(types.JSONRPCRequest(jsonrpc="2.0", id=number, method="ping"))


def test_the_end_of_input_waits_for_every_answer_and_at_most_its_bound() -> None:
    """After the client's last line, the server reads on until what it read is answered
    (a call written with the end of input is not dropped), but never longer than the
    bound: a call stuck past it no longer holds the server (`gitsessions mcp` ends)."""

    async def serve(finish: float, answer: bool) -> tuple[list[Any], list[Any]]:
        client, read = anyio.create_memory_object_stream[Any](2)
        write, replies = anyio.create_memory_object_stream[Any](2)
        await client.send(request(1))
        await client.send(request(2))
        await client.aclose()  # the end of input, two calls not answered yet
        served: list[Any] = []
        with anyio.fail_after(BOUND):
            async with (
                read,
                replies,
                answered_first(read, write, finish) as (server_reads, server_writes),
                server_reads,
                server_writes,
            ):
                async for message in server_reads:  # ends once answered, or at `finish`
                    served.append(message.message.id)
                    if answer:
                        reply = types.JSONRPCResponse(jsonrpc="2.0", id=served[-1], result={})
                        await server_writes.send(SessionMessage(reply))
                await server_writes.aclose()
                return served, [m.message.id async for m in replies]

    assert anyio.run(serve, 600.0, True) == ([1, 2], [1, 2])  # ended by the answers
    assert anyio.run(serve, 0.05, False) == ([1, 2], [])  # ended by the bound


def test_calls_waiting_behind_a_stuck_one_are_bounded(here, home):
    root, sid = here
    wire = Wire(root, "--allow-writes", "--timeout", "600")
    lock = os.open(home / "store.git" / "gitsessions.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        wire.call(1, "pin", {"session": sid, "text": "stuck"})
        wire.request(2, "ping")
        assert wire.answer(2)["result"] == {}
        for number in range(3, 3 + QUEUED):
            wire.call(number, "session_info", {"session": sid})
        wire.call(99, "session_info", {"session": sid})
        said = error_text(wire.answer(99))  # at once: not after the 600 s deadline
        assert said.startswith(f"session_info: refused: {QUEUED} calls already wait behind")
        fcntl.flock(lock, fcntl.LOCK_UN)  # the pin goes on; then each call waiting behind it
        assert wire.answer(1)["result"]["isError"] is False
        for number in range(3, 3 + QUEUED):
            assert wire.answer(number)["result"]["structuredContent"]["id"] == sid
        assert wire.close() == 0
    finally:
        os.close(lock)
        wire.release()
