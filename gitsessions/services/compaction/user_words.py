"""The user's own words in a continuation note: the messages the user typed in the
summarised turns, verbatim (as stored, redacted), newest first, within `max_tokens`; an
earlier note's quotes follow, so a second compaction carries them. A summariser (a small
model) drops most of what was said; this does not.

Invariant: each quote is one line holding one JSON string, so quoted text can never
forge the heading or another quote, and `quoted` reads back exactly what `render` wrote;
the section is a note's last part (`quoted` takes the last heading).
"""

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from gitsessions.values.messages import Message, is_data_block, text_of

WORDS_HEADING = (
    "## The user's own earlier messages, verbatim (newest first; one JSON string each; "
    "what the user typed, quoted as data)"
)
LEFT_OUT = "- and {count:,} older messages of the user; read_session has them"
MIN_CUT_TOKENS = 40  # a cut message keeps at least this much, or is left out
CHARS_PER_TOKEN = 4  # where a cut starts before it is counted

Tokens = Callable[[str], int]


def said(older: Sequence[Message], is_note: Callable[[Mapping[str, Any]], bool]) -> list[str]:
    """The user's texts in `older`, newest first: its own user messages (no data block:
    a note, a merged fork's conclusion), then the quotes of the earlier notes in it
    (newest note first)."""
    own = [text_of(m) for m in older if m.get("role") == "user" and not is_data_block(m)]
    earlier = [quoted(text_of(m)) for m in older if is_note(m)]
    texts = [*reversed(own), *(q for note in reversed(earlier) for q in note)]
    return [t for t in texts if t.strip()]


def render(texts: Sequence[str], max_tokens: int, tokens: Tokens) -> str:
    """The section quoting `texts` (newest first) in at most about `max_tokens` as
    `tokens` counts them; '' when there is nothing to quote or no room."""
    if not texts or max_tokens <= 0:
        return ""
    room = max_tokens - tokens(WORDS_HEADING) - tokens(LEFT_OUT.format(count=len(texts)))
    lines: list[str] = []
    for text in texts:
        line = _quote(text)
        cost = tokens(line)
        if cost > room:
            if room >= MIN_CUT_TOKENS:
                lines.append(_cut_to(text, room, tokens))
            break
        lines.append(line)
        room -= cost
    if not lines:
        return ""
    left = len(texts) - len(lines)
    tail = [LEFT_OUT.format(count=left)] if left else []
    return "\n".join([WORDS_HEADING, *lines, *tail])


def quoted(note_text: str) -> list[str]:
    """The quotes of the section a note's text ends with, newest first ([] without one)."""
    marker = f"\n{WORDS_HEADING}\n"
    if marker not in note_text:
        return []
    section = note_text.rsplit(marker, 1)[1]
    texts: list[str] = []
    for line in section.splitlines():
        if not line.startswith('"'):
            continue
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, str):
            texts.append(value)
    return texts


def without_quotes(note_text: str) -> str:
    """A note's text without the section of quotes (what a summary of it folds)."""
    return note_text.rsplit(f"\n{WORDS_HEADING}\n", 1)[0]


def _quote(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _cut_to(text: str, room: int, tokens: Tokens) -> str:
    """`text` as a quote cut to a head and a tail that fit `room` tokens."""
    keep = max(2, min(room * CHARS_PER_TOKEN, len(text) * 3 // 4))
    while True:
        half = keep // 2
        cut = f"{text[:half]}\n[... {len(text) - 2 * half} chars left out ...]\n{text[-half:]}"
        line = _quote(cut)
        if tokens(line) <= room or keep <= 2:
            return line
        keep = keep * 3 // 4
