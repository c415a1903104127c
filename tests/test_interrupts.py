"""A Ctrl-C that Python drops (raised inside a weakref callback) is raised again."""

import gc
import sys
import time
import weakref

import pytest

from gitsessions.cli.interrupts import interrupts_kept


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
    time.sleep(30)  # the main thread goes on, into a blocking call (a request's read)


def test_an_interrupt_dropped_by_python_is_raised_again() -> None:
    with interrupts_kept(), pytest.raises(KeyboardInterrupt):
        drop_an_interrupt()


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
