"""Work `chat` starts once its prompt shows and waits for when the first prompt is sent.

Invariants:
- The work runs in a thread of its own that starts only once `after` is set (the
  prompt is about to show), so it never competes with the prompt for the interpreter.
- It prints nothing: what it has to say goes to its `Notes`, which the main thread
  prints when it has waited (`wait`), never over the line the user is typing.
- `wait` returns the work's result or raises its error, in the main thread; a Ctrl-C
  ends the wait at once (KeyboardInterrupt) and the work goes on, to be waited for again.
- The thread, and every thread it starts, blocks SIGINT (`main_thread_signals`): POSIX
  lets the kernel give a process's Ctrl-C to any thread that does not block it (Linux
  prefers the main thread, not every system does), and one taken by a background
  thread would leave the main thread waiting in the line editor, the prompt deaf to it.
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
