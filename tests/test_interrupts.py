"""A Ctrl-C that Python drops (raised inside a weakref callback) is raised again."""

import gc
import subprocess
import sys
import time
import weakref
from pathlib import Path

from gitsessions.cli.interrupts import interrupts_kept

# as tests/conftest.py says it: the child imports this module, and conftest would bring
# pytest and the store into it (0.2 s of CPU)
REPO = Path(__file__).resolve().parent.parent


class Thing:
    pass


def drop_an_interrupt() -> None:
    """What a Ctrl-C does when its handler runs inside a garbage-collection callback."""

    def callback(_ref: object) -> None:
        raise KeyboardInterrupt

    thing = Thing()
    ref = weakref.ref(thing, callback)
    del thing
    gc.collect()
    assert ref() is None
    # the main thread goes on, into blocking calls (a request's reads): short ones, since
    # a signal that arrives just before a call blocks is handled only once it returns
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        time.sleep(0.1)


CHILD = """
import signal, sys
sys.path.insert(0, sys.argv[1])
signal.signal(signal.SIGINT, signal.default_int_handler)  # even if started with it ignored
from gitsessions.cli.interrupts import interrupts_kept
from tests.test_interrupts import drop_an_interrupt
try:
    with interrupts_kept():
        drop_an_interrupt()
except KeyboardInterrupt:
    sys.exit(7)
"""


def test_an_interrupt_dropped_by_python_is_raised_again() -> None:
    """In a process of its own: signal delivery to the main thread is shared by every
    test of this process (its threads, its handlers)."""
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(REPO)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 7, done.stderr


def test_other_unraisable_errors_still_reach_the_previous_hook() -> None:
    def callback(_ref: object) -> None:
        raise ValueError("from a callback")

    seen: list[BaseException] = []
    previous = sys.unraisablehook
    sys.unraisablehook = lambda unraisable: seen.append(unraisable.exc_value)
    try:
        with interrupts_kept():
            thing = Thing()
            ref = weakref.ref(thing, callback)
            del thing
            gc.collect()
    finally:
        sys.unraisablehook = previous
    assert ref() is None and [str(e) for e in seen] == ["from a callback"]
