"""The records a session is made of, as plain JSON-ready values.

`session.json` holds the header below (`updated_at`: the last change of any kind;
`active_at`: the last turn or compaction, what `list` and `--continue` go by); the other
files of a session's tree hold the working context, the transcript, the compaction
records, the plan, the pins and the usage.
Usage is one dict: totals at the top level and the same numbers per model in `by_model`.
"""

from collections.abc import Iterable, Mapping
from typing import Any

HEADER_FORMAT = "gitsessions.header/2"
USAGE_TOTAL_KEYS = ("prompt_tokens", "completion_tokens", "requests", "cost_usd")
# header fields true of one session on one machine only: never inherited by a fork,
# never carried by an export, import or pull (a `worktree` gitsessions made here)
LOCAL_ONLY_FIELDS = ("worktree",)


def without_local_marks(header: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of `header` without the fields in `LOCAL_ONLY_FIELDS`."""
    return {k: v for k, v in header.items() if k not in LOCAL_ONLY_FIELDS}


def empty_workspace(path: str | None = None) -> dict[str, Any]:
    """A workspace record with nothing known but (maybe) its path."""
    return {"path": path, "repo_root": None, "branch": None, "head": None}


def empty_usage() -> dict[str, Any]:
    """Usage with every counter at zero."""
    return {
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "requests": 0,
        "cost_usd": 0.0,
        "by_model": {},
    }


def add_usage(
    usage: Mapping[str, Any],
    model: str,
    prompt_tokens: int,
    completion_tokens: int,
    cost_usd: float,
    requests: int = 1,
) -> dict[str, Any]:
    """A new usage dict with one more response counted, in total and for `model`."""

    def bump(counters: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "prompt_tokens": int(counters.get("prompt_tokens", 0)) + prompt_tokens,
            "completion_tokens": int(counters.get("completion_tokens", 0)) + completion_tokens,
            "requests": int(counters.get("requests", 0)) + requests,
            "cost_usd": round(float(counters.get("cost_usd", 0.0)) + cost_usd, 8),
        }

    by_model = dict(usage.get("by_model") or {})
    by_model[model] = bump(by_model.get(model, {}))
    return {**bump(usage), "by_model": by_model}


def usage_since(now: Mapping[str, Any], then: Mapping[str, Any]) -> dict[str, Any]:
    """What was spent between two usage dicts of one line of history (`now` - `then`)."""

    def minus(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key in USAGE_TOTAL_KEYS:
            if key == "cost_usd":
                out[key] = max(0.0, round(float(a.get(key, 0.0)) - float(b.get(key, 0.0)), 8))
            else:
                out[key] = max(0, int(a.get(key, 0)) - int(b.get(key, 0)))
        return out

    earlier = then.get("by_model") or {}
    by_model = {
        model: spent
        for model, counters in (now.get("by_model") or {}).items()
        if any((spent := minus(counters, earlier.get(model, {}))).values())
    }
    return {**minus(now, then), "by_model": by_model}


def never_answered(header: Mapping[str, Any]) -> bool:
    """Whether no request of a session ever reached a model: a start that failed (the
    server down, the request cancelled before any reply). A fork (its usage starts at
    zero) and a header without usage (unknown: a format-1 header cached by a build that
    read it without its usage.json) are never counted as one."""
    usage = header.get("usage")
    if header.get("parent_id") or not isinstance(usage, Mapping):
        return False
    requests = usage.get("requests", 0)
    return isinstance(requests, int) and requests == 0


def new_header(
    session_id: str,
    created_at: str,
    *,
    title: str = "",
    workspace: Mapping[str, Any] | None = None,
    model: str | None = None,
    settings: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The header of a brand-new session (`settings`: the model, base URL and context
    budget it runs with, recorded when an agent creates it)."""
    return {
        **({"settings": dict(settings)} if settings else {}),
        "id": session_id,
        "title": title,
        "summary": "",
        "parent_id": None,
        "fork_point": None,
        "archived": False,
        "created_at": created_at,
        "updated_at": created_at,
        "active_at": created_at,
        "workspace": dict(workspace) if workspace else empty_workspace(),
        "model": model,
    }


def context_budget(settings: Any) -> int | None:
    """The context budget a session's recorded `settings` say it last ran with: the
    smaller of its `max_context_tokens` and the context its server said it holds
    (`server_context_tokens`), each only as a positive whole number; None with neither."""
    if not isinstance(settings, Mapping):
        return None
    said = [
        value
        for value in (settings.get("max_context_tokens"), settings.get("server_context_tokens"))
        if isinstance(value, int) and not isinstance(value, bool) and value > 0
    ]
    return min(said) if said else None


def made_by(header: Mapping[str, Any]) -> str | None:
    """`user@host` of who made a session, when its header says (`workspace.user`, `.host`)."""
    workspace = header.get("workspace")
    if not isinstance(workspace, Mapping):
        return None
    user, host = workspace.get("user"), workspace.get("host")
    if not isinstance(user, str) or not isinstance(host, str) or not user or not host:
        return None
    return f"{user}@{host}"


def label(row: Mapping[str, Any]) -> str:
    """What names a session: its title, else its summary, else its first prompt (quoted)."""
    if row.get("title"):
        return str(row["title"])
    if row.get("summary"):
        return str(row["summary"])
    prompt = row.get("first_prompt") or ""
    return f'"{prompt}"' if prompt else "(no prompt yet)"


def merged_forks(headers: Iterable[Mapping[str, Any]], heads: Mapping[str, str]) -> dict[str, str]:
    """{fork id: the session it was merged into} from the headers' `merged` records
    (sessions/merging.py writes them), for a fork whose head (`heads`: id -> commit) is
    still the one merged; a fork that went on since is not marked."""
    found: dict[str, str] = {}
    for header in headers:
        entries = header.get("merged")
        for entry in entries if isinstance(entries, list) else []:
            if not isinstance(entry, Mapping):
                continue
            fork = entry.get("id")
            if isinstance(fork, str) and heads.get(fork) == entry.get("commit"):
                found[fork] = str(header.get("id") or "")
    return found
