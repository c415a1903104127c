"""The lines `info` and `\\info` both show of a session, written once so they agree:
the same names, the same counts, thousands separators in both."""

from collections.abc import Mapping
from typing import Any

from gitsessions.values.plural import plural


def messages_text(transcript: int, context: int) -> str:
    """`40 in the transcript, 29 in the working context`."""
    return f"{transcript:,} in the transcript, {context:,} in the working context"


def usage_text(usage: Mapping[str, Any]) -> str:
    """`12,345 prompt + 678 completion tokens, 3 requests, $0.0123`."""
    return (
        f"{usage.get('prompt_tokens', 0):,} prompt + "
        f"{usage.get('completion_tokens', 0):,} completion tokens, "
        f"{plural(usage.get('requests', 0), 'request')}, ${usage.get('cost_usd', 0.0):.4f}"
    )
