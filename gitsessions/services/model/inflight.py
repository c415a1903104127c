"""One blocking request run in a daemon worker thread while the calling thread waits on it.

Invariants:
- The calling thread only waits on a queue in short slices (and runs `on_item`): a
  Ctrl-C always lands there, never inside the HTTP library or SDK, so the first cancels.
- The wait ends at `expires` whatever the worker does: a trickling server cannot
  stretch it (GITSESSIONS_TIMEOUT is a deadline for the whole request).
- On an early end `abandon` is called once and the worker never joined; `Limits` makes it
  stop at its next read (reply_limits.py) and its answers are closed in a thread of
  their own.
- No HTTP library imported here: the waiting thread never waits on its import.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from typing import Any, TypeVar

T = TypeVar("T")
WAIT = 0.05  # seconds of one wait: how soon a signal handler runs at the latest


class DeadlinePassed(Exception):
    """The request did not finish by its deadline."""


class Abandoned(Exception):
    """Raised in the worker: the deadline passed or the waiting thread gave up."""


class ReplyTooLarge(Exception):
    """Raised in the worker: the answer went past a cap of services/model/reply_limits.py."""


class Limits:
    """One request's deadline (time.monotonic()) and its abandonment; the answers its
    worker read, to close when it is abandoned."""

    def __init__(self, seconds: float) -> None:
        self.expires = time.monotonic() + seconds
        self.abandoned = threading.Event()
        self.responses: list[Any] = []

    def check(self) -> None:
        """In the worker: raise `Abandoned` once the request is given up or late."""
        if self.abandoned.is_set() or time.monotonic() > self.expires:
            raise Abandoned("the request was given up")

    def abandon(self) -> None:
        self.abandoned.set()

        def close() -> None:
            for response in list(self.responses):
                with suppress(Exception):
                    response.close()

        threading.Thread(target=close, daemon=True, name="close-reply").start()


_ITEM, _DONE, _FAILED = range(3)
QUEUED = 16  # items the worker may be ahead of the waiting thread (memory stays bounded)


def run(
    work: Callable[[Callable[[Any], None]], T],
    *,
    limits: Limits,
    on_item: Callable[[Any], None],
) -> T:
    """`work(put)` in a daemon thread; each `put(item)` it makes reaches `on_item` here
    (a `put` waits while `QUEUED` items are not taken yet, and raises `Abandoned` once
    the request is given up). Returns what `work` returned, raises what it raised,
    `DeadlinePassed` at `limits.expires`; `limits.abandon()` when it ends early."""
    delivered: queue.Queue[tuple[int, Any]] = queue.Queue(QUEUED)

    def put(item: Any) -> None:
        while True:
            limits.check()
            try:
                delivered.put((_ITEM, item), timeout=WAIT)
                return
            except queue.Full:
                continue

    def worker() -> None:
        try:
            result: tuple[int, Any] = (_DONE, work(put))
        except BaseException as error:  # handed to the waiting thread, never lost here
            result = (_FAILED, error)
        while not limits.abandoned.is_set():  # else the waiting thread has left
            try:
                delivered.put(result, timeout=WAIT)
                return
            except queue.Full:
                continue

    threading.Thread(target=worker, daemon=True, name="model-request").start()
    finished = False
    try:
        while True:
            left = limits.expires - time.monotonic()
            if left <= 0:
                raise DeadlinePassed
            try:
                kind, value = delivered.get(timeout=min(WAIT, left))
            except queue.Empty:
                continue
            if kind == _ITEM:
                on_item(value)
                continue
            finished = True
            if kind == _FAILED:
                raise value
            result: T = value  # what `_DONE` carries is the request's answer
            return result
    finally:
        if not finished:
            limits.abandon()
