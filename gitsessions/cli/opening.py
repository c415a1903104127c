"""Work `chat` starts once its prompt shows and waits for when the first prompt is sent.

Invariants:
- The thread starts only once `after` is set (the prompt about to show).
- It prints nothing: its `Notes` are printed by the main thread after `wait`, never over
  the line being typed; `wait` returns the result or raises the error; a Ctrl-C ends
  the wait and the work goes on.
- The thread and its threads block SIGINT (`main_thread_signals`): the kernel may give a
  Ctrl-C to any thread not blocking it, which would leave the prompt deaf to it.
"""

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Generic, Protocol, TypeVar

T = TypeVar("T")


class Printer(Protocol):
    """What notes are printed with: a rich Console, or `Notes` to print them later."""

    def print(self, *objects: Any, **kwargs: Any) -> None: ...


class Notes:
    """Lines kept to be printed later, each as a rich Console's `print` takes it."""

    def __init__(self) -> None:
        self.kept: list[tuple[tuple[Any, ...], dict[str, Any]]] = []

    def print(self, *objects: Any, **kwargs: Any) -> None:
        self.kept.append((objects, kwargs))

    def replay(self, console: Printer) -> None:
        """Print what was kept, in order, once."""
        kept, self.kept = self.kept, []
        for objects, kwargs in kept:
            console.print(*objects, **kwargs)


class Opening(Generic[T]):
    """`work(notes)` run in a background thread once `after` is set."""

    def __init__(self, work: Callable[[Notes], T], after: threading.Event, name: str) -> None:
        self.notes = Notes()
        self._after = after
        self._done = threading.Event()
        self._result: T | None = None
        self._error: BaseException | None = None

        def run() -> None:
            try:
                after.wait()
                self._result = work(self.notes)
            except BaseException as error:  # raised again in the main thread by wait()
                self._error = error
            finally:
                self._done.set()

        with main_thread_signals():
            threading.Thread(target=run, daemon=True, name=name).start()

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def wait(self) -> T:
        """The work's result (its error raised here); Ctrl-C ends the wait at once."""
        self._after.set()  # waited for: it must run now, whatever it was waiting for
        while not self._done.wait(0.05):
            pass
        if self._error is not None:
            raise self._error
        return self._result  # type: ignore[return-value]  # set, as no error was


@contextmanager
def main_thread_signals() -> Iterator[None]:
    """Threads started inside block SIGINT (a thread inherits its creator's signal mask),
    so a Ctrl-C always reaches the main thread; a Ctrl-C pressed meanwhile is delivered
    when the block ends."""
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
