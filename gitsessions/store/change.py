"""What one commit of a session changes, and what the commit writes from it besides the
tree: the header (session.json) and the transcript records of the appended messages.

Invariant: a `Change` leaves every file it holds `None` for as it was; the header and
the records are built from the change, the base head and the clock alone: nothing here
reads or writes the store (`SessionStore.commit` does).
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gitsessions.store.layout import Record
from gitsessions.store.reader import Head
from gitsessions.values.clock import now_iso_ms
from gitsessions.values.records import HEADER_FORMAT, empty_usage

ACTIVE_EVENTS = ("create", "turn", "compact", "fork", "import")  # what `active_at` follows
# what a record may add to its message
RECORD_KEYS = ("time", "turn", "step", "model", "usage", "finish_reason", "source")


@dataclass
class Change:
    """What one commit changes. `None` leaves a file as it is. A commit with redaction on
    replaces what it redacted in here."""

    header: dict[str, Any] | None = None
    context: list[dict[str, Any]] | None = None
    append: list[dict[str, Any]] = field(default_factory=list)
    # per appended message, what its transcript record adds: a reply's "model" and
    # "usage"; with `as_recorded` (an import) each record's own "time", "turn", "step"
    # and nothing is stamped
    append_meta: list[dict[str, Any]] = field(default_factory=list)
    as_recorded: bool = False
    compactions: list[dict[str, Any]] | None = None
    plan: list[Any] | None = None
    pins: list[str] | None = None
    usage: dict[str, Any] | None = None
    # files added to the tree's `files/` (`files/<sha256>.<ext>` -> bytes: `store.files`)
    files: dict[str, bytes] = field(default_factory=dict)


def next_header(
    session_id: str, base: Head | None, change: Change, event: str, counts: dict[str, int]
) -> dict[str, Any]:
    """The commit's session.json: the change's header (or the base's) with its format,
    id, counts, usage and `active_at` (what `ACTIVE_EVENTS` move) set."""
    if change.header is not None:
        header = dict(change.header)
    else:
        assert base is not None, "a session's first commit brings its header"
        header = dict(base.header)
    header.pop("counts", None)
    header["format"] = HEADER_FORMAT
    header["id"] = session_id
    header["counts"] = counts
    if change.usage is not None:
        header["usage"] = change.usage
    elif base is not None:
        header["usage"] = base.header.get("usage") or empty_usage()
    if event in ACTIVE_EVENTS and event != "import":
        header["active_at"] = header.get("updated_at")
    elif event == "import" and change.header is not None and change.header.get("active_at"):
        pass  # an import says when its source was last active
    elif base is not None:
        header["active_at"] = base.header.get("active_at", header.get("updated_at"))
    header.setdefault("active_at", header.get("updated_at"))
    return header


def transcript_records(change: Change, trailers: Mapping[str, Any]) -> list[Record]:
    """The transcript records of the appended messages: written now (UTC, ms), in
    the turn and step the trailers name, with what the writer added (model, usage)."""
    stamp: dict[str, Any] = {"time": now_iso_ms()}
    for name in ("Turn", "Step"):
        value = str(trailers.get(name, ""))
        if value.isdigit():
            stamp[name.lower()] = int(value)
    if change.as_recorded:
        stamp = {}
    records: list[Record] = []
    for i, message in enumerate(change.append):
        meta = change.append_meta[i] if i < len(change.append_meta) else {}
        extra = {k: v for k, v in meta.items() if k in RECORD_KEYS and v is not None}
        records.append({"message": message, **stamp, **extra})
    return records
