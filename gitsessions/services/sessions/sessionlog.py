"""A session's history for `log`: every commit, or one record per turn.

Invariants:
- `commits` is the first-parent history, newest first (a fork shows its parent's too),
  one record per commit with what its trailers say; a compaction's record has its
  number (`compaction`, as `show --compaction N` takes it), an undo's the number it
  took back.
- `turns` groups those same commits: every `Event: turn` commit with the same `Session`
  and `Turn` goes into one record, placed at the turn's first commit, so a compaction in
  the middle of a turn is its own record and times still go newest first. Every other
  commit (create, compact, rename, fork, import, pin...) is a record of its own, as in
  `commits`. No commit is dropped: the commits of each turn are under `commits`.
- A page of `commits` (`start`, `limit`) grouped by `turns` may cut a turn at its edge:
  each page shows the commits of it that page holds.
- The tools a turn used are read from the transcript messages its commits added (the
  transcript is never rewritten, so a fork's history reads from the fork's head).
"""

import itertools
from typing import Any

from gitsessions.store.reader import Head, SessionReader
from gitsessions.store.trailers import parse_trailers
from gitsessions.values.clock import iso_of_timestamp
from gitsessions.values.plural import plural


def commits(
    store: SessionReader, head: Head, start: int = 0, limit: int | None = None
) -> list[dict[str, Any]]:
    """One record per commit, newest first; with `start` and `limit`, only commits
    `start` to `start + limit` of the history (a page: the walk stops there)."""
    entries = []
    end = None if limit is None else start + limit
    for commit_id, commit in itertools.islice(store.history(head), start, end):
        subject, trailers = parse_trailers(commit.message)
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
        entries.append(entry)
    return entries


def detail(entry: dict[str, Any]) -> str:
    """What `log` says after a record's subject: the tokens of a compaction (and its
    number); the steps and tools of a turn."""
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
            records.append(group)
        group["commits"].insert(0, entry)  # newest first, like everything else
    counts: dict[bytes, int] = {}
    spans: list[tuple[int, int, dict[str, Any]]] = []
    for group in groups.values():
        newest, oldest = group["commits"][0], group["commits"][-1]
        group["commit"] = newest["commit"]
        group["steps"] = len({c["step"] for c in group["commits"] if c.get("step", 0) > 0})
        group["tools"] = {}
        start = _messages_before(store, head, oldest["commit"].encode(), counts)
        end = _messages_at(store, head, newest["commit"].encode(), counts)
        if end > start:
            spans.append((start, end, group["tools"]))
    _count_tools(store, head, spans)
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
