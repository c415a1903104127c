"""`diff`: what two session states did since their common ancestor, as plain data.

Invariants:
- The common ancestor is the first commit both first-parent histories reach, walked side
  by side (`common_ancestor`): a fork and its parent meet at the fork point (checked
  against `parent_id`/`fork_point`), two forks at the older one, a session and its
  earlier state at that state; histories that never meet compare with an empty session
  (a note says so). A merge commit is walked by its first parent (the session's own
  line); a side holding a merge of the other's head says so (`A merged B`).
- A side reads only headers, the transcript lines past the ancestor's count (the
  transcript is append-only), compaction records, plan, pins, usage and its own commits'
  trailers; nothing is written. The result is JSON-ready.
"""

from collections import Counter
from collections.abc import Iterator, Mapping
from typing import Any

from gitsessions.services.sessions.revisions import State, owner_of
from gitsessions.store.sessions import Head, SessionStore
from gitsessions.store.trailers import parse_trailers
from gitsessions.values.clock import iso_of_timestamp
from gitsessions.values.messages import text_of
from gitsessions.values.records import USAGE_TOTAL_KEYS, empty_usage

FIRST_LINE = 200  # characters of a message's first line kept
# commits that change the working context alone
CONTEXT_EVENTS = ("undo", "rewind", "compact-undo")
UNRELATED = "unrelated sessions: no common history, each side is compared with an empty session"

Commits = list[tuple[bytes, Any]]  # (commit id, dulwich commit), newest first


def diff(store: SessionStore, a: State, b: State) -> dict[str, Any]:
    """Find the common ancestor of two resolved states (`revisions.resolve`) and describe
    both sides."""
    found, a_commits, b_commits = common_ancestor(store, a.head, b.head)
    base = None
    if found is not None:
        base = store.head_at(owner_of(found[1]) or a.head.id, found[0])
    ancestor = _ancestor(a, b, base)
    for side, commits, other, name in (("A", a_commits, b, "B"), ("B", b_commits, a, "A")):
        for commit_id, commit in commits:
            if len(commit.parents) > 1 and commit.parents[1] == other.head.commit:
                ancestor["note"] += f"; {side} merged {name} (commit {commit_id.decode()[:10]})"
                break
    return {
        "ancestor": ancestor,
        "a": _side(store, a, base, a_commits),
        "b": _side(store, b, base, b_commits),
    }


def common_ancestor(
    store: SessionStore, a: Head, b: Head
) -> tuple[tuple[bytes, Any] | None, Commits, Commits]:
    """The first commit both histories reach, as (id, commit) (None: they never meet),
    and each side's commits since it, newest first."""
    walks: tuple[Iterator[tuple[bytes, Any]], ...] = (store.history(a), store.history(b))
    seen: tuple[dict[bytes, int], dict[bytes, int]] = ({}, {})
    lists: tuple[Commits, Commits] = ([], [])
    running = [True, True]
    while any(running):
        for me in (0, 1):
            if not running[me]:
                continue
            item = next(walks[me], None)
            if item is None:
                running[me] = False
                continue
            other = 1 - me
            if item[0] in seen[other]:
                mine, theirs = lists[me], lists[other][: seen[other][item[0]]]
                return item, *((mine, theirs) if me == 0 else (theirs, mine))
            seen[me][item[0]] = len(lists[me])
            lists[me].append(item)
    return None, lists[0], lists[1]


def _ancestor(a: State, b: State, base: Head | None) -> dict[str, Any]:
    if base is None:
        return {
            "kind": "none",
            "commit": None,
            "session": None,
            "title": None,
            "messages": 0,
            "note": UNRELATED,
        }
    commit = base.commit.decode()
    kind, note = "merge_base", "common history up to this commit"
    if _forked_at(b, a, commit):
        kind, note = "fork_point", "B is a fork of A"
    elif _forked_at(a, b, commit):
        kind, note = "fork_point", "A is a fork of B"
    elif a.head.commit == b.head.commit:
        note = "A and B are the same state"
    elif base.commit == a.head.commit:
        note = "A is an earlier state of B"
    elif base.commit == b.head.commit:
        note = "B is an earlier state of A"
    return {
        "kind": kind,
        "commit": commit,
        "session": base.id,
        "title": base.header.get("title", ""),
        "messages": base.counts.get("messages", 0),
        "note": note,
    }


def _forked_at(child: State, parent: State, commit: str) -> bool:
    header = child.head.header
    return header.get("fork_point") == commit and header.get("parent_id") in (
        parent.session,
        parent.head.id,
    )


def _side(store: SessionStore, state: State, base: Head | None, commits: Commits) -> dict[str, Any]:
    head = state.head
    return {
        "revision": state.revision,
        "session": state.session,
        "state_session": head.id,
        "commit": head.commit.decode(),
        "title": head.header.get("title", ""),
        "changes": changes(store, base, head, commits),
    }


def changes(store: SessionStore, base: Head | None, head: Head, commits: Commits) -> dict[str, Any]:
    """What `head` changed since `base` (None: an empty session); `commits` are the
    commits between them, newest first."""
    trailers = [(cid, c, parse_trailers(c.message)) for cid, c in commits]
    turns = sorted(
        {
            int(t["Turn"])
            for _i, _c, (_s, t) in trailers
            if t.get("Event") == "turn" and t.get("Turn", "").isdigit()
        }
    )
    events: dict[str, int] = {}
    for _i, _c, (_s, found) in reversed(trailers):  # oldest first
        event = found.get("Event") or "?"
        events[event] = events.get(event, 0) + 1
    out: dict[str, Any] = {"commits": len(commits), "events": events, "turns": turns}
    for field in ("title", "summary", "archived"):
        before = _header(base, field)
        after = _header(head, field)
        out[field] = None if before == after else {"from": before, "to": after}
    out["messages"] = _messages(store, base, head)
    out["context"] = _context(store, base, head, trailers)
    out["plan"] = _plan(_read(store, base, "plan"), _read(store, head, "plan"))
    out["pins"] = _pins(_read(store, base, "pins"), _read(store, head, "pins"))
    out["usage"] = _usage_along(store, base, head, trailers)
    return out


def _usage_along(
    store: SessionStore,
    base: Head | None,
    head: Head,
    trailers: list[tuple[bytes, Any, tuple[str, dict[str, str]]]],
) -> dict[str, Any]:
    """The usage spent between `base` and `head`. A fork's usage starts at zero at its
    fork commit (the parent's is not counted twice), so a path that crosses a fork adds
    what the parent spent up to the fork point and what the fork spent since."""
    total = empty_usage()
    start = _read(store, base, "usage")
    for commit_id, commit, (_subject, found) in reversed(trailers):  # oldest first
        if found.get("Event") != "fork" or not commit.parents:
            continue
        point = store.head_at(head.id, commit.parents[0])
        total = _add(total, _usage(start, _read(store, point, "usage")))
        start = _read(store, store.head_at(head.id, commit_id), "usage")
    return _add(total, _usage(start, _read(store, head, "usage")))


def _add(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    return {
        key: round(a.get(key, 0) + b.get(key, 0), 8) if key == "cost_usd" else
        a.get(key, 0) + b.get(key, 0)
        for key in USAGE_TOTAL_KEYS
    }  # fmt: skip


def is_empty(change: Mapping[str, Any]) -> bool:
    """True when a side has no commit since the ancestor."""
    return bool(change["commits"] == 0)


def changed_nothing(change: Mapping[str, Any]) -> bool:
    """True when a side's commits (a fork's own, say) changed no field the diff shows."""
    context = change["context"]
    return (
        all(change[field] is None for field in ("title", "summary", "archived"))
        and not change["messages"]["appended"]
        and context["messages"] is None
        and not context["compactions"]
        and not context["events"]
        and not any(change["plan"].values())
        and not any(change["pins"].values())
        and not any(change["usage"].values())
    )


def _header(head: Head | None, field: str) -> Any:
    if head is None:
        return False if field == "archived" else ""
    value = head.header.get(field)
    return bool(value) if field == "archived" else (value or "")


def _read(store: SessionStore, head: Head | None, what: str) -> Any:
    if head is None:
        return empty_usage() if what == "usage" else []
    return store.read(head, what)


def _messages(store: SessionStore, base: Head | None, head: Head) -> dict[str, Any]:
    start = base.counts.get("messages", 0) if base is not None else 0
    end = head.counts.get("messages", 0)
    appended = []
    for index, record in enumerate(store.records(head, start, end) if end > start else [], start):
        message = record.get("message") or {}
        appended.append(
            {
                "index": index,
                "role": str(message.get("role", "?")),
                "time": record.get("time"),
                "turn": record.get("turn"),
                "first_line": first_line(message),
                **({"incomplete": True} if message.get("incomplete") else {}),
            }
        )
    return {"from": start, "to": end, "appended": appended}


def first_line(message: dict[str, Any]) -> str:
    """A message in one line: its text's first non-blank line, else the tools it calls."""
    lines = [line.strip() for line in text_of(message).splitlines() if line.strip()]
    if lines:
        line = lines[0]
    else:
        calls = [*(message.get("tool_calls") or []), *(message.get("unsent_tool_calls") or [])]
        names = [str((c.get("function") or {}).get("name") or "?") for c in calls]
        line = f"calls {', '.join(names)}" if names else ""
    return line if len(line) <= FIRST_LINE else line[: FIRST_LINE - 3] + "..."


def _context(
    store: SessionStore,
    base: Head | None,
    head: Head,
    trailers: list[tuple[bytes, Any, tuple[str, dict[str, str]]]],
) -> dict[str, Any]:
    before = base.counts.get("context_messages", 0) if base is not None else 0
    after = head.counts.get("context_messages", 0)
    known = base.counts.get("compactions", 0) if base is not None else 0
    compactions = []
    for record in _read(store, head, "compactions")[known:]:
        compactions.append(
            {
                "time": record.get("time"),
                "trigger": record.get("trigger"),
                "stages": list(record.get("stages") or []),
                "before_tokens": record.get("before_tokens"),
                "after_tokens": record.get("after_tokens"),
                "cleared": len(record.get("cleared") or []),
            }
        )
    events = []
    for commit_id, commit, (subject, found) in reversed(trailers):  # oldest first
        if found.get("Event") not in CONTEXT_EVENTS:
            continue
        events.append(
            {
                "event": found["Event"],
                "commit": commit_id.decode(),
                "time": iso_of_timestamp(commit.commit_time),
                "subject": subject,
                "trailers": {k: v for k, v in found.items() if k not in ("Session", "Event")},
            }
        )
    return {
        "messages": None if before == after else {"from": before, "to": after},
        "compactions": compactions,
        "cleared": sum(c["cleared"] for c in compactions),
        "events": events,
    }


def _plan(before: list[Any], after: list[Any]) -> dict[str, list[Any]]:
    """Items by their step text: added (with their status), done (there before, completed
    since), removed."""
    was = {str(i.get("step", "")): str(i.get("status", "")) for i in before if isinstance(i, dict)}
    now = {str(i.get("step", "")): str(i.get("status", "")) for i in after if isinstance(i, dict)}
    return {
        "added": [{"step": s, "status": st} for s, st in now.items() if s not in was],
        "done": [s for s, st in now.items() if st == "completed" and was.get(s, st) != st],
        "removed": [s for s in was if s not in now],
    }


def _pins(before: list[Any], after: list[Any]) -> dict[str, list[str]]:
    was, now = Counter(map(str, before)), Counter(map(str, after))
    return {"added": list((now - was).elements()), "removed": list((was - now).elements())}


def _usage(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    delta: dict[str, Any] = {}
    for key in USAGE_TOTAL_KEYS:
        if key == "cost_usd":
            delta[key] = round(float(after.get(key, 0.0)) - float(before.get(key, 0.0)), 8)
        else:
            delta[key] = int(after.get(key, 0)) - int(before.get(key, 0))
    return delta
