"""Scoring a compacted context for bench/compaction_quality.py: which planted facts a
continuing agent still reads, and from which part of the context.

Invariant: scoring is a pure function of the compacted messages, the summary as the
compaction recorded it, the size of the summarizer's input and the facts; no model and no
network. A fact is a set of terms fixed in the session that plants it: it is kept by a
part of the context when every term occurs in that part's text (case-insensitive; a term
that starts with a letter or digit does not count inside a longer word or number, nor
one that ends with a digit before another digit, so "0.21" is not found in "0.215" nor
"E501" in "PE501"; a term may end inside a word: "squash" finds "squashed"). A term may
be a tuple of alternatives, any one of which counts.

The parts, scored apart (a fact may be kept by several):
- `kept`: messages kept verbatim after the continuation note (the last turn);
- `ledger`: the note's ledger, copied from the transcript by gitsessions;
- `user`: the user's own words carried in the note, found by a level-2 or -3 heading
  naming the user (e.g. "## The user's words ...") outside the summary, or a message of
  their own that starts with one; 0 without one;
- `summary`: what the summarizer wrote. The echo guard: a summary over ECHO_SHARE of its
  input (in tokens) scores nothing, so a summarizer that copies its input wins nothing.
A fact is kept when any part keeps it.
"""

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gitsessions.services.compaction.continuation import (
    SUMMARY_HEADING,
    is_note,
    neutralise,
    note_data,
)
from gitsessions.services.compaction.ledger import LEDGER_HEADING
from gitsessions.values.messages import text_of

ECHO_SHARE = 0.4
PARTS = ("kept", "ledger", "user", "summary")
_USER_HEADING = re.compile(r"^#{2,3} [^\n]*\buser\b[^\n]*$", re.IGNORECASE | re.MULTILINE)
_KNOWN = re.compile(
    "^(" + "|".join(re.escape(h) for h in (SUMMARY_HEADING, LEDGER_HEADING)) + ")$", re.MULTILINE
)

Term = str | tuple[str, ...]
# alternatives the sessions share: leaving a thing alone, adding no dependency
LEAVE = ("touch", "frozen", "leave", "unchanged", "not edit", "not modify", "not change")
NO_NEW_DEPS = ("no new dependenc", "no new dep", "no additional dependenc",
               "no extra dependenc", "without new dependenc", "without adding dependenc",
               "not add any dependenc", "no dependencies")  # fmt: skip


@dataclass(frozen=True)
class Fact:
    """A planted fact: its name, its kind (file, test, constraint, decision, value,
    failure, todo) and the terms that must all be found for it to count."""

    name: str
    kind: str
    terms: tuple[Term, ...]


def _pattern(term: str) -> re.Pattern[str]:
    head = r"(?<![\w.])" if term[:1].isdigit() else r"(?<!\w)" if term[:1].isalnum() else ""
    tail = r"(?!\d)" if term[-1:].isdigit() else ""
    return re.compile(head + re.escape(term) + tail, re.IGNORECASE)


def holds(fact: Fact, text: str) -> bool:
    """Whether every term of `fact` (one of its alternatives) occurs in `text`."""
    return all(
        any(_pattern(option).search(text) for option in (t if isinstance(t, tuple) else (t,)))
        for t in fact.terms
    )


def _text(message: Mapping[str, Any]) -> str:
    parts = [text_of(message)]
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        parts += [str(function.get("name", "")), str(function.get("arguments", ""))]
    return "\n".join(parts)


def _cut_user_words(text: str) -> tuple[str, str]:
    """`text` split into (the rest, the user's words): the user's words run from a
    heading naming the user to the next heading of the note (summary, ledger) or the
    end."""
    found = _USER_HEADING.search(text)
    if found is None:
        return text, ""
    after = _KNOWN.search(text, found.end())
    end = after.start() if after else len(text)
    return text[: found.start()] + text[end:], text[found.start() : end]


@dataclass(frozen=True)
class Parts:
    """The compacted context's texts, part by part (see the module doc)."""

    kept: str
    ledger: str
    user: str
    summary: str

    def text(self, part: str) -> str:
        return str(getattr(self, part))


def split_context(messages: Sequence[Mapping[str, Any]], summary: str) -> Parts:
    """The parts of a compacted context; `summary` is what the summarizer wrote (as the
    compaction recorded it). The system prompt belongs to no part."""
    kept: list[str] = []
    ledger: list[str] = []
    user: list[str] = []
    found_summary = ""
    written = neutralise(summary.strip())
    for message in messages[1:]:
        if not is_note(message):
            text = _text(message)
            # a message of its own carrying the user's words starts with their heading
            rest, words = _cut_user_words(text) if text.startswith("#") else (text, "")
            kept.append(rest)
            user.append(words)
            continue
        data = note_data(message)
        if written and written in data:
            at = data.index(written)
            found_summary = written
            data = data[:at] + data[at + len(written) :]
        elif SUMMARY_HEADING in data:  # the summary as the note holds it, to its ledger
            start = data.index(SUMMARY_HEADING) + len(SUMMARY_HEADING)
            end = data.find(LEDGER_HEADING, start)
            found_summary = data[start : end if end >= 0 else len(data)]
            data = data[:start] + (data[end:] if end >= 0 else "")
        data, words = _cut_user_words(data)
        user.append(words)
        if LEDGER_HEADING in data:
            ledger.append(data[data.index(LEDGER_HEADING) :])
    return Parts("\n".join(kept), "\n".join(ledger), "\n".join(user), found_summary)


@dataclass(frozen=True)
class Score:
    """What the compacted context keeps: the facts each part keeps, the facts kept at
    all, and whether the echo guard zeroed the summary."""

    by_part: dict[str, tuple[str, ...]]
    kept: tuple[str, ...]
    missing: tuple[str, ...]
    echo: bool
    summary_share: float

    def counts(self) -> dict[str, int]:
        return {part: len(names) for part, names in self.by_part.items()}


def score(
    facts: Sequence[Fact],
    parts: Parts,
    *,
    summary_tokens: int,
    input_tokens: int,
) -> Score:
    """Score `facts` against `parts`; the summary (`summary_tokens` long, written from
    `input_tokens` of input) scores nothing over ECHO_SHARE of its input."""
    share = summary_tokens / input_tokens if input_tokens > 0 else (1.0 if summary_tokens else 0)
    echo = share > ECHO_SHARE
    by_part: dict[str, tuple[str, ...]] = {}
    for part in PARTS:
        text = "" if part == "summary" and echo else parts.text(part)
        by_part[part] = tuple(f.name for f in facts if text and holds(f, text))
    kept = tuple(f.name for f in facts if any(f.name in names for names in by_part.values()))
    missing = tuple(f.name for f in facts if f.name not in kept)
    return Score(by_part, kept, missing, echo, round(share, 4))
