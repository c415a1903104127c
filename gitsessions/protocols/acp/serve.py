"""The ACP server's life: stdin and stdout checked, the protocol on a thread of its own
until the client closes stdin, the agent's jobs on the main thread (worker.py).

Invariant: stdout carries the protocol and nothing else; stdin is read a line at a time,
each line capped at 16 MiB (lines.py: an over-long line is answered with a short error).
"""

import asyncio
import os
import stat
import sys
import threading

from gitsessions.protocols.acp.agent import GitsessionsAcp
from gitsessions.protocols.acp.lines import serve_stdio
from gitsessions.protocols.acp.worker import Worker
from gitsessions.values.errors import BadUsage, GitsessionsError


class ConnectionFailed(GitsessionsError):
    """The protocol's connection broke (not a request: those are answered with errors)."""


def check_stdio() -> None:
    """The protocol needs stdin and stdout it can wait on: pipes, sockets or a terminal
    (a regular file or /dev/null is refused with one line instead of a traceback). The
    streams checked are `sys.stdin` and `sys.stdout`, which the protocol is served on."""
    for name in ("stdin", "stdout"):  # by descriptor: nothing written here
        try:
            fd = getattr(sys, name).fileno()
            mode = os.fstat(fd).st_mode
            usable = stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(fd)
        except (AttributeError, OSError, ValueError):  # closed (None), or no descriptor
            usable = False
        if not usable:
            raise BadUsage(
                f"acp talks to an editor over pipes ({name} is not one); start it from "
                'the editor (Zed: "agent_servers" with command "gitsessions", args ["acp"])'
            )


def serve(server: GitsessionsAcp, worker: Worker) -> None:
    """The protocol on its thread until the client closes stdin; the jobs here. A turn
    running when the client leaves is cancelled (and saved) as a cancel would."""
    failed: list[Exception] = []

    def protocol() -> None:
        try:
            asyncio.run(serve_stdio(server))
        except Exception as error:  # said once, as an error line, when the jobs are done
            failed.append(error)
        finally:
            if worker.turn_of is not None:  # the editor left mid-turn: stop it, save it
                worker.cancel(worker.turn_of)
            worker.stop()

    thread = threading.Thread(target=protocol, daemon=True, name="acp")
    try:
        worker.run(ready=thread.start)
    finally:
        server.close()
    if failed:
        raise ConnectionFailed(f"the ACP connection failed: {failed[0]}")
