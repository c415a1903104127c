"""The main thread's work for `gitsessions acp`: every agent job (build a session, run a
turn, replay a history) runs here, one at a time, as chat runs them; the protocol runs
in a thread of its own (protocols/acp/agent.py) and hands jobs over.

Invariant: a `session/cancel` reaches a running turn exactly as Ctrl-C reaches chat's:
as SIGINT to the main thread, so a held request, a running command or a pending approval
is interrupted where it waits and the agent saves what it has. The SIGINT handler
raises only for a cancel asked for the turn running now (`cancel_for == turn_of`), and
once a turn (its save after the interruption runs uninterrupted); any other SIGINT (a
stray one, a Ctrl-C typed at the terminal) is ignored: the server stops when its input
closes.
"""

import signal
import threading
from collections.abc import Callable
from concurrent.futures import Future
from queue import SimpleQueue
from types import FrameType
from typing import Any

Job = tuple[Callable[[], Any], "Future[Any]"]


class Worker:
    def __init__(self) -> None:
        self._jobs: SimpleQueue[Job | None] = SimpleQueue()
        self._main = threading.main_thread().ident
        self.turn_of: str | None = None  # the session whose turn runs now (main thread)
        self.cancel_for: str | None = None  # the session a cancel was asked for
        self.interrupted = False  # the running turn was interrupted once already

    def submit(self, fn: Callable[[], Any]) -> "Future[Any]":
        """Run `fn` on the main thread, after the jobs before it."""
        future: Future[Any] = Future()
        self._jobs.put((fn, future))
        return future

    def stop(self) -> None:
        self._jobs.put(None)

    def cancel(self, session_id: str) -> None:
        """Ask the turn of `session_id` to stop: at once when it runs now, else when it
        starts (the caller knows a prompt of it is in flight)."""
        self.cancel_for = session_id
        if self.turn_of == session_id and self._main is not None:
            signal.pthread_kill(self._main, signal.SIGINT)

    def run_turn(self, session_id: str, turn: Callable[[], Any]) -> bool:
        """Run `turn` as the session's interruptible turn; False when it was cancelled
        (before it started, or by a KeyboardInterrupt out of it)."""
        if self.cancel_for == session_id:
            self.cancel_for = None
            return False
        self.interrupted = False
        self.turn_of = session_id
        try:
            if self.cancel_for == session_id:  # asked between the check and now
                raise KeyboardInterrupt
            turn()
            return True
        except KeyboardInterrupt:
            self.turn_of = None
            return False
        finally:
            self.turn_of = None
            if self.cancel_for == session_id:
                self.cancel_for = None

    def interrupt_turn(self) -> None:
        """On the main thread, inside a turn: interrupt it now (the client withdrew a
        permission request because it cancels the turn), unless that is under way; a
        SIGINT of the same cancel arriving later is then ignored, so the turn's save
        after the interruption is never itself interrupted."""
        if self.turn_of is not None and not self.interrupted:
            self.interrupted = True
            raise KeyboardInterrupt

    def _on_sigint(self, signum: int, frame: FrameType | None) -> None:
        if self.turn_of is not None and self.cancel_for == self.turn_of and not self.interrupted:
            self.interrupted = True
            raise KeyboardInterrupt

    def run(self, ready: Callable[[], None] = lambda: None) -> None:
        """Run the jobs until `stop`; `ready()` once SIGINT is handled here (the
        protocol starts then, so no SIGINT meets the default handler)."""
        previous = signal.signal(signal.SIGINT, self._on_sigint)
        try:
            ready()
            while True:
                job = self._jobs.get()
                if job is None:
                    return
                fn, future = job
                if not future.set_running_or_notify_cancel():
                    continue
                try:
                    future.set_result(fn())
                except BaseException as error:  # handed to the protocol thread
                    future.set_exception(error)
        finally:
            signal.signal(signal.SIGINT, previous)
