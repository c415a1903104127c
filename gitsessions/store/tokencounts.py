"""Token counts kept beside the store (`tokens.sqlite`): a message's count, found once by a
tokenizer, read back by every later process.

Invariants:
- A cache, never the truth: rows `(encoding, key, tokens)` keyed by the counter's hash of
  canonical JSON, no text kept; only counts a tokenizer made (`TokenCounter.fresh`).
- Never in the way: unreadable, locked past LOCK_WAIT, read-only or full, it gives and
  keeps nothing, and counting goes on without it.
- Bounded (MAX_ROWS, oldest dropped); sqlite imported only when a file exists or a
  tokenizer made counts (a turn far under its budget does neither).
"""

from collections.abc import Sequence
from pathlib import Path

from gitsessions.values.tokens import TokenCounter

FILE = "tokens.sqlite"
SCHEMA = [
    "CREATE TABLE IF NOT EXISTS counts (encoding TEXT NOT NULL, key BLOB NOT NULL, "
    "tokens INTEGER NOT NULL, UNIQUE (encoding, key))"
]
MAX_ROWS = 200_000
LOCK_WAIT = 1.0  # seconds a turn waits for another process's write (a few ms), at most
BATCH = 500  # keys per query (under sqlite's limit on bound parameters)


class TokenCounts:
    """The counts kept in `<home>/tokens.sqlite`, for one counter."""

    def __init__(self, home: Path, counter: TokenCounter) -> None:
        self.path = home / FILE
        self.counter = counter

    def recall(self, keys: Sequence[bytes]) -> int:
        """Give the counter the kept counts of `keys`; how many were found."""
        found = self.lookup(keys)
        self.counter.recall(found)
        return len(found)

    def lookup(self, keys: Sequence[bytes]) -> dict[bytes, int]:
        """The kept counts of those of `keys` that have one (for the counter's encoding)."""
        if not keys or not self.path.exists():
            return {}
        # sqlite: 11 ms, only when counts are kept
        import sqlite3

        from gitsessions.store.cache import open_cache

        found: dict[bytes, int] = {}
        encoding = self.counter.encoding_name
        try:
            with open_cache(self.path, SCHEMA, timeout=LOCK_WAIT) as db:
                for start in range(0, len(keys), BATCH):
                    batch = list(keys[start : start + BATCH])
                    marks = ",".join("?" * len(batch))
                    rows = db.execute(
                        f"SELECT key, tokens FROM counts WHERE encoding = ? AND key IN ({marks})",
                        [encoding, *batch],
                    )
                    found.update((bytes(key), int(tokens)) for key, tokens in rows)
        except (sqlite3.Error, OSError):
            return {}
        return found

    def keep(self) -> int:
        """Write the counts the counter's tokenizer made since the last call; how many."""
        fresh = self.counter.fresh()
        if not fresh:
            return 0
        # sqlite: 11 ms, only when counts are kept
        import sqlite3

        from gitsessions.store.cache import open_cache

        encoding = self.counter.encoding_name
        try:
            with open_cache(self.path, SCHEMA, timeout=LOCK_WAIT) as db, db:
                db.executemany(
                    "INSERT OR IGNORE INTO counts (encoding, key, tokens) VALUES (?, ?, ?)",
                    [(encoding, key, tokens) for key, tokens in fresh.items()],
                )
                db.execute(
                    "DELETE FROM counts WHERE rowid <= (SELECT max(rowid) FROM counts) - ?",
                    [MAX_ROWS],
                )
        except (sqlite3.Error, OSError):
            return 0
        return len(fresh)
