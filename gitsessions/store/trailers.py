"""Commit messages of the store: a subject, a blank line, then `Key: value` trailers.

Every commit names its session (`Session:`) and what happened (`Event:`). A trailer is
what the commit claims, not where it belongs: `doctor` restores a branch only to a head
`headlog` recorded for it, and checks that head's trailer names the same session.
"""

from collections.abc import Mapping
from typing import Any


def commit_message(subject: str, session_id: str, event: str, trailers: Mapping[str, Any]) -> bytes:
    lines = [f"Session: {session_id}", f"Event: {event}"]
    lines += [f"{key}: {value}" for key, value in trailers.items() if value is not None]
    text = subject.strip() + "\n\n" + "\n".join(lines) + "\n"
    return text.encode("utf-8", "replace")  # a lone surrogate from a model becomes "?"


def parse_trailers(message: bytes) -> tuple[str, dict[str, str]]:
    """The subject and the `Key: value` trailers of a commit message."""
    text = message.decode("utf-8", "replace")
    subject, _, rest = text.partition("\n")
    trailers: dict[str, str] = {}
    paragraphs = rest.strip().split("\n\n")
    for line in paragraphs[-1].splitlines() if paragraphs else []:
        key, sep, value = line.partition(": ")
        if sep and key and " " not in key:
            trailers[key] = value
    return subject, trailers
