"""Timestamps: ISO 8601 in UTC with a `Z`, to the second (transcript records: to the
millisecond)."""

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


def parse_iso(text: str) -> datetime:
    """Parse a stored timestamp; raises ValueError when it is not one."""
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
