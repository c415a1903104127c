"""Counted nouns as people write them: "1 step", "2 steps", "1,234 messages".

Invariant: every count shown to a user or a model goes through `plural` (a test scans the
source for f-strings that put a number before such a noun), so no message ever says "1 steps".
"""


def plural(count: int, word: str, many: str | None = None) -> str:
    """`count` and `word`, or `many` (default `word + "s"`) unless the count is one."""
    noun = word if count == 1 else (many or f"{word}s")
    return f"{count:,} {noun}"
