"""Timestamps: ISO 8601 in UTC with a `Z`, to the second, as stored everywhere."""

from datetime import UTC, datetime


def now_iso() -> str:
    """The current time as `YYYY-MM-DDTHH:MM:SSZ`."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_iso(text: str) -> datetime:
    """Parse a stored timestamp; raises ValueError when it is not one."""
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
