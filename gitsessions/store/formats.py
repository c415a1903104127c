"""Which stored formats this build reads, and the refusal of newer ones.

Invariants:
- A session header names its format (`gitsessions.header/N`); the store names its own in
  `store.git/config` (`gitsessions.formatVersion`). A build meets a number above
  `FORMAT` only to refuse it with one line (`NewerFormat`), before anything is read
  further or written: data of a newer gitsessions is never rewritten by an older one.
- A header without a format, or with a format this build does not know the shape of,
  is damage (`StoreCorrupt`), not a newer version.
"""

import re
from typing import Any

from gitsessions.store.errors import StoreCorrupt, StoreError
from gitsessions.values.records import HEADER_FORMAT

FORMAT = int(HEADER_FORMAT.rsplit("/", 1)[1])  # what this build writes, the newest it reads
_HEADER = re.compile(r"gitsessions\.header/([0-9]{1,6})")


class NewerFormat(StoreError):
    """Written by a newer gitsessions: refused, never rewritten."""


def newer(what: str, version: int) -> NewerFormat:
    return NewerFormat(
        f"{what} was written by a newer gitsessions (format {version}); upgrade to read it"
    )


def check_header(header: dict[str, Any], session_id: str) -> None:
    match = _HEADER.fullmatch(str(header.get("format", "")))
    if match is None:
        raise StoreCorrupt(
            f"session {session_id[:8]}: session.json names no known format "
            f"({str(header.get('format'))[:40]!r}); run `gitsessions doctor`"
        )
    version = int(match.group(1))
    if version > FORMAT:
        raise newer(f"session {session_id[:8]}", version)


def check_store(version_text: str | None) -> None:
    """`gitsessions.formatVersion` of the store's config (None when not set yet)."""
    if version_text is None:
        return
    if not version_text.isdigit():
        raise StoreCorrupt(
            f"store.git/config: gitsessions.formatVersion is {version_text[:20]!r}, "
            "not a number; run `gitsessions doctor`"
        )
    if int(version_text) > FORMAT:
        raise newer("this store", int(version_text))
