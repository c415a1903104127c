"""A session's history for `log`: every commit, or one record per turn.

Invariants:
- `commits`: the first-parent history, newest first (a fork's parent's too), one record
  a commit from its trailers (a compaction's number as `show --compaction N` takes it);
  a merge commit's record (`merged_session`, `merged_head`) is followed by the joined
  line's commits (`merged_by`, `line_head`): both lines of turns are in the log.
- `turns`: a turn's commits grouped at its first commit, every other commit its own
  record (a compaction mid-turn too, times still newest first); no commit dropped.
- A turn's tools are read from the transcript lines its commits added (a joined line's
  from the head the merge joined).
- A page of `commits` (`start`, `limit`) grouped by `turns` may cut a turn at its edge:
  each page shows the commits of it that page holds.
"""

import itertools
from typing import Any

from gitsessions.store.reader import Head, SessionReader
from gitsessions.store.trailers import parse_trailers
from gitsessions.values.clock import iso_of_timestamp
from gitsessions.values.ids import short
from gitsessions.values.plural import plural


def commits(
    store: SessionReader, head: Head, start: int = 0, limit: int | None = None
) -> list[dict[str, Any]]:
    """One record per commit, newest first; with `start` and `limit`, only commits
    `start` to `start + limit` of the history (a page: the walk stops there). A merge's
    record is followed by the commits of the line it joined (the fork's own, newest
    first, each with `merged_by`)."""
    end = None if limit is None else start + limit
    line = list(itertools.islice(store.history(head), start, end))
    main = {commit_id for commit_id, _commit in line}
    entries = []
    for commit_id, commit in line:
        entry = _entry(store, head, commit_id, commit, parse_trailers(commit.message))
        entries.append(entry)
        if len(commit.parents) > 1:
            merged = entry["merged_session"]
            entries += _joined(store, head, commit_id, commit.parents[1], main, merged)
    return entries


def _joined(
    store: SessionReader, head: Head, merge: bytes, tip: bytes, main: set[bytes], merged: str
) -> list[dict[str, Any]]:
    """The records of the line a merge joined, the session `merged`'s (the fork's): from
    its second parent back along first parents until the session's own line or a commit
    of another session (the fork point: a page's `main` may not reach that far)."""
    joined = []
    commit_id: bytes | None = tip
    while commit_id is not None and commit_id not in main:
        commit = store.read_commit(commit_id)
        parsed = parse_trailers(commit.message)
        if parsed[1].get("Session", "") != merged:
            break
        entry = _entry(store, head, commit_id, commit, parsed)
        entry["merged_by"] = merge.decode()
        entry["line_head"] = tip.decode()
        joined.append(entry)
        commit_id = commit.parents[0] if commit.parents else None
    return joined


def _entry(
    store: SessionReader,
    head: Head,
    commit_id: bytes,
    commit: Any,
    parsed: tuple[str, dict[str, str]],
) -> dict[str, Any]:
    """One commit's record (`parsed`: its message's subject and trailers)."""
    subject, trailers = parsed
    entry: dict[str, Any] = {
        "commit": commit_id.decode(),
        "time": iso_of_timestamp(commit.commit_time),
        "event": trailers.get("Event", ""),
        "session": trailers.get("Session", ""),
        "subject": subject,
    }
    for key in ("Turn", "Step"):
        if trailers.get(key, "").isdigit():
            entry[key.lower()] = int(trailers[key])
    if "Tokens-Before" in trailers:
        entry["tokens_before"] = int(trailers["Tokens-Before"])
        entry["tokens_after"] = int(trailers.get("Tokens-After", "0"))
    if trailers.get("Compaction", "").isdigit():  # an undo names the one it took back
        entry["compaction"] = int(trailers["Compaction"])
    elif entry["event"] == "compact" and commit.parents:  # its number: `show --compaction`
        entry["compaction"] = store.head_at(head.id, commit_id).counts.get("compactions", 0)
    if len(commit.parents) > 1:
        entry["merged_session"] = trailers.get("Merged-Session", "")
        entry["merged_head"] = commit.parents[1].decode()
    return entry


def detail(entry: dict[str, Any]) -> str:
    """What `log` says after a record's subject: the tokens of a compaction (and its
    number); the steps and tools of a turn; the line a merge joined, and which merge
    joined a commit of it."""
    if entry.get("merged_head"):
        return f"joins {short(entry.get('merged_session') or '')} at {entry['merged_head'][:10]}"
    if "merged_by" in entry:
        merged = f"merged by {entry['merged_by'][:10]}"
        rest = detail({k: v for k, v in entry.items() if k != "merged_by"})
        return (rest + "; " + merged).lstrip("; ")
    if "tokens_before" in entry:
        tokens = f"{entry['tokens_before']} -> {entry['tokens_after']}"
        number = entry.get("compaction")
        if number is None:
            return tokens
        undone = " undone" if entry["event"] == "compact-undo" else ""
        return f"compaction {number}{undone}: {tokens}"
    if "tools" not in entry:
        return ""
    tools = ", ".join(
        name if count == 1 else f"{name} x{count}" for name, count in entry["tools"].items()
    )
    return plural(entry["steps"], "step") + (f": {tools}" if tools else "")


def turns(store: SessionReader, head: Head, entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`entries` (from `commits`) grouped: one record per turn, newest first."""
    records: list[dict[str, Any]] = []
    groups: dict[tuple[str, int], dict[str, Any]] = {}
    for entry in reversed(entries):  # oldest first: a turn sits at its first commit
        if entry["event"] != "turn" or "turn" not in entry:
            records.append(entry)
            continue
        key = (entry["session"], entry["turn"])
        group = groups.get(key)
        if group is None:
            group = groups[key] = {
                "event": "turn",
                "turn": entry["turn"],
                "session": entry["session"],
                "time": entry["time"],
                "subject": entry["subject"],
                "commits": [],
            }
            for key_ in ("merged_by", "line_head"):
                if key_ in entry:
                    group[key_] = entry[key_]
            records.append(group)
        group["commits"].insert(0, entry)  # newest first, like everything else
    counts: dict[bytes, int] = {}
    # a joined line's turns are read from its own transcript (its head when merged)
    spans: dict[str | None, list[tuple[int, int, dict[str, Any]]]] = {}
    for group in groups.values():
        newest, oldest = group["commits"][0], group["commits"][-1]
        group["commit"] = newest["commit"]
        group["steps"] = len({c["step"] for c in group["commits"] if c.get("step", 0) > 0})
        group["tools"] = {}
        start = _messages_before(store, head, oldest["commit"].encode(), counts)
        end = _messages_at(store, head, newest["commit"].encode(), counts)
        if end > start:
            spans.setdefault(group.get("line_head"), []).append((start, end, group["tools"]))
    for line_head, line_spans in spans.items():
        reading = head if line_head is None else store.head_at(head.id, line_head.encode())
        _count_tools(store, reading, line_spans)
    records.reverse()
    return records


def _count_tools(
    store: SessionReader, head: Head, spans: list[tuple[int, int, dict[str, int]]]
) -> None:
    """Add `{tool name: calls}` of the assistant messages in each span `[start, end)` to
    its dict; the transcript is read once, a chunk at a time."""
    if not spans:
        return
    spans.sort(key=lambda span: span[0])
    at = 0
    for index, record in store.iter_records(head, spans[0][0], max(s[1] for s in spans)):
        while at < len(spans) and spans[at][1] <= index:
            at += 1
        if at == len(spans):
            break
        start, _end, used = spans[at]
        message = record["message"]
        if index < start or message.get("role") != "assistant":
            continue
        for call in message.get("tool_calls") or []:
            name = str((call.get("function") or {}).get("name") or "?")
            used[name] = used.get(name, 0) + 1


def _messages_at(
    store: SessionReader, head: Head, commit_id: bytes, counts: dict[bytes, int]
) -> int:
    """How many transcript messages there were at `commit_id` (remembered in `counts`)."""
    if commit_id not in counts:
        counts[commit_id] = store.head_at(head.id, commit_id).counts.get("messages", 0)
    return counts[commit_id]


def _messages_before(
    store: SessionReader, head: Head, commit_id: bytes, counts: dict[bytes, int]
) -> int:
    """How many transcript messages there were before `commit_id` (at its parent)."""
    parents = store.read_commit(commit_id).parents
    return _messages_at(store, head, parents[0], counts) if parents else 0
