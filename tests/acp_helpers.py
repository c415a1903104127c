"""`gitsessions acp` served in this process to the `agent-client-protocol` package's own
client: for the ACP tests whose subject is the protocol, not the process (its stdio
framing, start-up, exit and signals keep tests of their own that start it).

The command runs as the console script runs it (`cli.app.main`, its argv, on the main
thread, where a cancel reaches a turn as SIGINT), its `sys.stdin` and `sys.stdout` the
ends of two socket pairs whose other ends the client has, in a thread of its own with
its own event loop; `sys.stderr` a file (the notes editors log)."""

import asyncio
import contextlib
import gc
import os
import socket
import sys
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path

from tests.conftest import REPO

WAIT = 60  # seconds any one step may take before the test fails (never reached when well)

# the client's part: the connection's streams (what it reads, what it writes) -> done
Client = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


def serve_in_process(args: list[str], client: Client, stderr: Path, cwd: Path = REPO) -> int:
    """Run `gitsessions acp ARGS` here until `client` is done with it (its writer closed:
    the agent's input ends); the command's exit code. The client's exception, if any, is
    raised here after the command has stopped."""
    from gitsessions.cli.app import main
    from gitsessions.values.tokens import default_counter

    assert threading.current_thread() is threading.main_thread(), "SIGINT reaches this one"
    default_counter.cache_clear()  # the process-wide counter: calibrated by each turn
    agent_in, client_out = socket.socketpair()
    agent_out, client_in = socket.socketpair()
    failed: list[BaseException] = []

    async def talk() -> None:
        reader, reading = await asyncio.open_connection(sock=client_in, limit=64 << 20)
        _, writer = await asyncio.open_connection(sock=client_out)
        try:
            await client(reader, writer)
        finally:
            writer.close()  # the agent's input ends: it stops on its own
            reading.close()  # and what it writes after goes nowhere, as into a closed pipe

    def run_client() -> None:
        try:
            asyncio.run(talk())
        except BaseException as error:  # raised in the test, once the command stopped
            failed.append(error)
        finally:
            client_out.close()  # (closed already, unless the client failed first)
            client_in.close()

    saved = sys.stdin, sys.stdout, sys.stderr, sys.argv, os.getcwd(), sys.unraisablehook
    code: object = 0
    with stderr.open("a", encoding="utf-8") as log:
        sys.stdin = open(agent_in.detach(), encoding="utf-8")  # noqa: SIM115 - closed below
        sys.stdout = open(agent_out.detach(), "w", encoding="utf-8")  # noqa: SIM115
        sys.stderr = log
        sys.argv = ["gitsessions", "acp", *args]
        os.chdir(cwd)
        thread = threading.Thread(target=run_client, name="acp-client", daemon=True)
        thread.start()
        try:
            main()
        except SystemExit as stop:
            code = stop.code
        finally:
            for stream in (sys.stdin, sys.stdout):
                with contextlib.suppress(OSError):
                    stream.close()  # the client reads the end of the agent's output
            sys.stdin, sys.stdout, sys.stderr, sys.argv, cwd_was, sys.unraisablehook = saved
            os.chdir(cwd_was)
            gc.unfreeze()  # `cli.lazy.started` freezes what a process keeps for its life
            thread.join(WAIT)
    assert not thread.is_alive(), "the client did not finish"
    if failed:
        raise failed[0]
    return code if isinstance(code, int) else (0 if code is None else 1)


def acp_args(base_url: str, *more: str) -> list[str]:
    """`acp` against the fake model server."""
    return ["--base-url", base_url, "--model", "fake-model", *more]
