"""Timestamps: ISO 8601 in UTC with a `Z`, to the second (transcript records: to the
millisecond)."""

import re
from datetime import UTC, datetime


def iso(moment: datetime) -> str:
    """`moment` as `YYYY-MM-DDTHH:MM:SSZ` (a naive datetime is taken to be UTC)."""
    aware = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return aware.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def now_iso() -> str:
    """The current time as `YYYY-MM-DDTHH:MM:SSZ`."""
    return iso(datetime.now(UTC))


def now_iso_ms() -> str:
    """The current time as `YYYY-MM-DDTHH:MM:SS.mmmZ` (transcript records)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def iso_of_timestamp(seconds: int) -> str:
    """A Unix timestamp (a commit's time) as a stored timestamp."""
    return iso(datetime.fromtimestamp(seconds, UTC))


_STORED = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", re.ASCII)


def parse_iso(text: str) -> datetime:
    """Parse a stored timestamp; raises ValueError when it is not one. The form every
    stored one has is read directly (strptime imports and compiles its own regexes:
    a few milliseconds of every commit's first); anything else as strptime reads it."""
    if isinstance(text, str) and _STORED.fullmatch(text):
        return datetime.fromisoformat(text[:-1]).replace(tzinfo=UTC)
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
