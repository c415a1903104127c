"""Session ids and the checks on untrusted names.

A session id is `uuid4().hex`: exactly 32 lowercase hex characters. Users may type a
unique prefix of 4 or more. Nothing else is ever accepted, so an id can be used in a ref
name or a file name without any risk of path traversal.
"""

import re
import uuid

from gitsessions.values.errors import BadUsage, InvalidInput

ID_LENGTH = 32
MIN_PREFIX = 4
_FULL = re.compile(r"[0-9a-f]{32}")
_PREFIX = re.compile(r"[0-9a-f]{4,32}")
MAX_TITLE = 200


def new_id() -> str:
    """A fresh session id."""
    return uuid.uuid4().hex


def is_session_id(text: object) -> bool:
    """True when `text` is a full, well-formed session id."""
    return isinstance(text, str) and _FULL.fullmatch(text) is not None


def check_prefix(text: str) -> str:
    """Return `text` lowercased when it can name a session, else raise `BadUsage`."""
    lowered = text.strip().lower()
    if not _PREFIX.fullmatch(lowered):
        shown = text if len(text) <= 40 else text[:40] + "..."
        raise BadUsage(
            f"invalid session id {shown!r}: expected {MIN_PREFIX} to {ID_LENGTH} hex characters"
        )
    return lowered


def short(session_id: str | None) -> str:
    """The 8-character form shown in tables."""
    return session_id[:8] if session_id else ""


def check_title(title: str) -> str:
    """A user title: one line, no control characters, valid UTF-8, not empty."""
    stripped = check_text(title, "title").strip()
    if not stripped:
        raise InvalidInput("title must not be empty")
    if "\n" in stripped or "\r" in stripped:
        raise InvalidInput("title must be a single line")
    if any(ord(c) < 32 or 0x7F <= ord(c) < 0xA0 for c in stripped):
        raise InvalidInput("title must not contain control characters")
    if len(stripped) > MAX_TITLE:
        raise InvalidInput(f"title is longer than {MAX_TITLE} characters")
    return stripped


def check_text(text: str, what: str) -> str:
    """Free text from the command line (a prompt, a pin, a query): must be valid UTF-8."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(f"{what} is not valid UTF-8") from None
    return text
