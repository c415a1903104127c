"""The MCP server's tool calls, run off its event loop: one daemon thread runs them one at
a time, in order, while the loop goes on reading the client (`ping`, stdin's end, cancels).

Invariants:
- No call holds the server: a caller waits at most `seconds`, then gets `NoAnswer`; a
  call given up before it started never runs, one running is left to end (its answer
  dropped) and the queue waits for it.
- One call at a time: the store's objects are never used by two threads at once.
- At most `QUEUED` calls wait, past that `Busy`; a daemon thread never keeps the process
  alive once stdin is closed.
"""

import contextlib
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gitsessions.values.errors import GitsessionsError

QUEUED = 64  # calls waiting behind the one running, at most (a client's burst fits)
DEADLINE = 60.0  # seconds a tool call may take before its caller is answered an error


class NoAnswer(GitsessionsError):
    """A tool call did not answer within the server's deadline."""


class Busy(GitsessionsError):
    """Too many tool calls wait behind one that has not ended."""


@dataclass
class _Job:
    name: str
    work: Callable[[], Any]
    token: Any  # anyio's EventLoopToken of the loop waiting for the answer
    done: Any  # an anyio.Event, set from the thread through the token
    started: bool = False
    given_up: bool = False
    outcome: tuple[bool, Any] | None = None  # (raised?, the answer or the exception)


class Calls:
    """Tool calls run in a thread of their own, each waited for at most `seconds`."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._jobs: queue.Queue[_Job] = queue.Queue(maxsize=QUEUED)
        self._thread: threading.Thread | None = None
        self._running: _Job | None = None
        self._lock = threading.Lock()  # a job is given up or started, never both

    async def run(self, name: str, work: Callable[[], Any]) -> Any:
        """`work()`'s answer (or what it raised), waited for without blocking the loop;
        `NoAnswer` past the deadline, `Busy` when too many calls already wait."""
        # anyio: only when the server runs
        import anyio
        import anyio.lowlevel

        job = _Job(name, work, anyio.lowlevel.current_token(), anyio.Event())
        if self._thread is None:
            self._thread = threading.Thread(target=self._serve, name="mcp-calls", daemon=True)
            self._thread.start()
        try:
            self._jobs.put_nowait(job)
        except queue.Full:
            raise Busy(
                f"{name}: refused: {QUEUED} calls already wait behind "
                f"{self._blocker()} that has not ended"
            ) from None
        try:
            with anyio.move_on_after(self.seconds):
                await job.done.wait()
        finally:
            with self._lock:
                job.given_up = job.outcome is None  # past the deadline, or cancelled
        if job.outcome is None:
            raise NoAnswer(self._late(job))
        raised, value = job.outcome
        if raised:
            raise value
        return value

    def _late(self, job: _Job) -> str:
        seconds = f"{self.seconds:g} s"
        if job.started:
            return (
                f"{job.name}: no answer within {seconds}; given up (it goes on in the "
                "server until it ends, and a write may still take effect)"
            )
        return (
            f"{job.name}: not started within {seconds}: it waited behind "
            f"{self._blocker()}, still running; given up, it will not run"
        )

    def _blocker(self) -> str:
        running = self._running
        return f"a {running.name} call" if running is not None else "an earlier call"

    def _serve(self) -> None:
        # anyio: the thread's way back to the loop
        import anyio.from_thread

        while True:
            job = self._jobs.get()
            with self._lock:
                if job.given_up:
                    continue
                job.started = True
                self._running = job
            try:
                job.outcome = (False, job.work())
            except BaseException as error:  # handed to the caller, who raises it
                job.outcome = (True, error)
            finally:
                self._running = None
            with contextlib.suppress(RuntimeError):  # the loop has ended: no one waits
                anyio.from_thread.run_sync(job.done.set, token=job.token)
