"""Bounding tool output: no result the model sees is longer than the output limit.

Text over the limit keeps its head and its tail (the start of a log says what ran, the
end says how it finished) and says exactly how many characters were cut in between,
with a hint on how to ask for less. Text within the limit is returned unchanged.
"""

import re

DEFAULT_OUTPUT_LIMIT = 16_000
MIN_OUTPUT_LIMIT = 500
CUT_HINT = "use read_file with offset/limit or narrow the command"


def cut_note(count: int) -> str:
    """The marker that replaces `count` cut characters."""
    return f"\n[... {count:,} characters cut; {CUT_HINT} ...]\n"


CUT_NOTE = re.compile(r"^\[\.\.\. ([0-9,]+) characters cut; .* \.\.\.\]$", re.MULTILINE)


def cut_in(text: str) -> int:
    """How many characters `truncate` cut from the middle of `text` (0: none), read from
    its note."""
    found = CUT_NOTE.search(text)
    return int(found.group(1).replace(",", "")) if found else 0


def truncate(text: str, limit: int = DEFAULT_OUTPUT_LIMIT, *, already_cut: int = 0) -> str:
    """`text` within `limit` characters, its middle replaced by a note when too long.

    `already_cut` counts characters a producer dropped from the middle of `text` before
    it got here (the shell keeps only the head and tail of huge output); they are added
    to the count in the note, and a note is always written when it is non-zero.
    """
    if limit < MIN_OUTPUT_LIMIT:
        raise ValueError(f"output limit must be at least {MIN_OUTPUT_LIMIT}, got {limit}")
    if len(text) <= limit and already_cut == 0:
        return text
    keep = min(len(text), limit - len(cut_note(len(text) + already_cut)))
    head_size = keep - keep // 2
    head, tail = text[:head_size], text[len(text) - keep // 2 :]
    cut = len(text) - len(head) - len(tail) + already_cut
    return head + cut_note(cut) + tail
