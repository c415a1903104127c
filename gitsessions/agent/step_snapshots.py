"""The code snapshots a turn's commits name (`Code-Snapshot`), for one agent.

Invariants:
- The snapshot of what the prompt found is taken in a thread while the model answers
  (`start`); anything that may change the files (a tool run) or names a snapshot (a
  commit) waits for it first (`settle`), so no snapshot ever sees a tool's writes half
  done, and at most one is being taken.
- A step that ran tools takes a new snapshot; any other names the newest one taken.
"""

import threading
from collections.abc import Callable


class StepSnapshots:
    """`take(message)` takes a snapshot of the project and returns its commit (or None)."""

    def __init__(self, take: Callable[[str], str | None]) -> None:
        self.take = take
        self.last: str | None = None  # the newest snapshot taken
        self._pending: tuple[threading.Thread, dict[str, str | None]] | None = None

    def start(self, label: str) -> None:
        """Take a snapshot in a thread (its git runs while the model answers)."""
        self.settle()
        result: dict[str, str | None] = {}
        take = self.take

        def run() -> None:
            result["commit"] = take(f"gitsessions snapshot: {label}")

        thread = threading.Thread(target=run, name="code-snapshot")
        thread.start()
        self._pending = (thread, result)

    def settle(self) -> None:
        """Wait for the snapshot taken in the background, if any: it becomes the last."""
        if self._pending is None:
            return
        thread, result = self._pending
        self._pending = None
        thread.join()
        self.last = result.get("commit")

    def named(self, label: str, fresh: bool) -> str | None:
        """The snapshot a commit names: a new one when `fresh` or none was taken yet."""
        self.settle()
        if fresh or self.last is None:
            self.last = self.take(f"gitsessions snapshot: {label}")
        return self.last
