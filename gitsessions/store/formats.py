"""Which stored formats this build reads, how format 2 names itself, and the refusal of
newer ones.

Invariants:
- The header names its format (`gitsessions.header/N`), every other JSON file of a
  format-2 tree its own, the store its own (`gitsessions.formatVersion` in its config).
- A number above `FORMAT` is refused in one line (`NewerFormat`) before anything more
  is read or written: an older build never rewrites a newer one's data.
- An unknown shape, or a file whose format names another file, is damage
  (`StoreCorrupt`), not a newer version.
- An older format is read through `upgrades`; the session's next commit writes it whole
  as `FORMAT`.
"""

import re
from typing import Any

from gitsessions.store.errors import StoreCorrupt, StoreError
from gitsessions.values.records import HEADER_FORMAT

FORMAT = int(HEADER_FORMAT.rsplit("/", 1)[1])  # what this build writes, the newest it reads
_NAMED = re.compile(r"gitsessions\.([a-z-]+)/([0-9]{1,6})")


class NewerFormat(StoreError):
    """Written by a newer gitsessions: refused, never rewritten."""


def newer(what: str, version: int) -> NewerFormat:
    return NewerFormat(
        f"{what} was written by a newer gitsessions (format {version}); upgrade to read it"
    )


def check_header(header: dict[str, Any], session_id: str) -> int:
    """The header's format version (1 or 2)."""
    match = _NAMED.fullmatch(str(header.get("format", "")))
    if match is None or match.group(1) != "header" or int(match.group(2)) < 1:
        raise StoreCorrupt(
            f"session {session_id[:8]}: session.json names no known format "
            f"({str(header.get('format'))[:40]!r}); run `gitsessions doctor`"
        )
    version = int(match.group(2))
    if version > FORMAT:
        raise newer(f"session {session_id[:8]}", version)
    return version


def wrap(kind: str, value: Any) -> dict[str, Any]:
    """A format-2 JSON file: its value under its own name, beside its format."""
    return {"format": f"gitsessions.{kind}/{FORMAT}", kind: value}


def unwrap(kind: str, doc: Any, where: str) -> Any:
    """The value of a format-2 JSON file, its format checked."""
    fmt = doc.get("format") if isinstance(doc, dict) else None
    match = _NAMED.fullmatch(str(fmt))
    if match is not None and match.group(1) == kind and int(match.group(2)) > FORMAT:
        raise newer(where, int(match.group(2)))
    if match is None or match.group(1) != kind or int(match.group(2)) != 2 or kind not in doc:
        raise StoreCorrupt(f"{where}: not a gitsessions.{kind} file of format 2")
    return doc[kind]


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
