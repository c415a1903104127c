"""What `list` shows of a session (`list_row`): a plain dict made from its header alone.

Invariant: a function of the header (and its first prompt) only, so `store.catalog` can
make it once, when it caches the header, and a listing parse that small row instead of
the whole header (`Catalog.stream_rows`); `parent_deleted` and `merged_into`, which
depend on other sessions, are added when listed (`cli/listing.open_rows`). A change to
what it returns bumps `FORMAT`, part of the cache's schema: caches of rows made before
are then made again.
"""

from collections.abc import Mapping
from typing import Any

from gitsessions.values.records import made_by, never_answered

FORMAT = 1  # of `list_row`'s rows: a change to them bumps it, and the cached rows go


def list_row(header: Mapping[str, Any]) -> dict[str, Any]:
    """What `list --json` prints of a session (`first_prompt`: see `store.catalog`)."""
    counts = header.get("counts") or {}
    return {
        "id": header["id"],
        "title": header.get("title", ""),
        "summary": header.get("summary", ""),
        "first_prompt": header.get("first_prompt", ""),
        "parent_id": parent if isinstance(parent := header.get("parent_id"), str) else None,
        "archived": bool(header.get("archived")),
        "no_reply": never_answered(header),
        "messages": counts.get("messages", 0),
        "compactions": counts.get("compactions", 0),
        "created_at": header.get("created_at"),
        "updated_at": header.get("updated_at"),
        "active_at": header.get("active_at") or header.get("updated_at"),
        "workspace": (header.get("workspace") or {}).get("path"),
        "made_by": made_by(header),
        "imported_from": _imported_from(header),
        **({"broken": header["broken"]} if "broken" in header else {}),
    }


def _imported_from(header: Mapping[str, Any]) -> str | None:
    """The agent an imported session came from (`claude-code`, `codex`), else None."""
    imported = header.get("imported")
    source = imported.get("from") if isinstance(imported, Mapping) else None
    return source if isinstance(source, str) else None
