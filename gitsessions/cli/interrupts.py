"""Ctrl-C is never lost: a KeyboardInterrupt Python drops is raised again.

Python cannot raise an exception out of a weakref callback or a `__del__` method: a
Ctrl-C whose signal handler happens to run inside one (the garbage collector runs them
at any moment, for instance while a request is being sent) is printed as "Exception
ignored in ..." and dropped, and the request it was meant to cancel goes on. While
`interrupts_kept()` is active, such a dropped KeyboardInterrupt is delivered again: a
helper thread sends SIGINT to the main thread a moment later (once the callback is
over; a signal interrupts a blocking read, where the main thread may be waiting by
then), as if the user had pressed Ctrl-C once more.
"""

import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

AGAIN_AFTER = 0.05  # seconds: the callback that dropped the interrupt is over by then


@contextmanager
def interrupts_kept() -> Iterator[None]:
    previous = sys.unraisablehook
    main = threading.main_thread()

    def again() -> None:
        if main.is_alive() and main.ident is not None:
            signal.pthread_kill(main.ident, signal.SIGINT)

    def hook(unraisable: Any) -> None:
        if isinstance(unraisable.exc_value, KeyboardInterrupt):
            timer = threading.Timer(AGAIN_AFTER, again)
            timer.daemon = True
            timer.start()
            return
        previous(unraisable)

    sys.unraisablehook = hook
    try:
        yield
    finally:
        sys.unraisablehook = previous
