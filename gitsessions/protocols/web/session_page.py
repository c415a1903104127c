"""A session's page: its facts, its forks drawn as a tree (parent, fork point, merges,
children), the context timeline, one page of its transcript and one page of its turns
as `log` shows them (services/sessions/sessionlog.py).

Invariant: one page reads at most `PAGE` transcript records for the transcript,
`SAMPLES` chunks for the timeline (every record of a session of at most `EXACT`
messages) and `LOG_PAGE` commits of the history (a page of them starts at its commit),
whatever the session's length: a 100k-message session's pages cost what a short one's do.
"""

import re
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from gitsessions.protocols.web import timeline
from gitsessions.protocols.web.markup import e, href, link, number, table
from gitsessions.protocols.web.source import Source
from gitsessions.protocols.web.transcript import messages_html
from gitsessions.services.sessions import sessionlog
from gitsessions.services.sessions.revisions import owner_of
from gitsessions.values.ids import short
from gitsessions.values.plural import plural
from gitsessions.values.records import label

if TYPE_CHECKING:
    from gitsessions.store.sessions import Head, SessionStore

PAGE = 100  # transcript messages a page
LOG_PAGE = 50  # commits of the history a page of turns groups
EXACT = 2_000  # a session of at most this many messages: its timeline reads every record
SAMPLES = 120  # else the timeline reads this many places of the transcript, evenly spaced
LOOK = 8  # records read at each place for a reply that says its context
ANCESTORS = 16  # a longer chain of parents is cut
TREE_NODES = 200  # forks drawn under a session


def facts(head: "Head") -> str:
    """The session's facts as a definition list."""
    h = head.header
    counts = head.counts
    workspace: Mapping[str, Any] = h["workspace"] if isinstance(h.get("workspace"), Mapping) else {}
    settings: Mapping[str, Any] = h["settings"] if isinstance(h.get("settings"), Mapping) else {}
    pairs = [
        ("id", e(head.id)),
        ("messages", f"{number(counts.get('messages', 0))} in the transcript, "
         f"{number(counts.get('context_messages', 0))} in the context"),
        ("compactions", number(counts.get("compactions", 0))),
        ("model", e(settings.get("model") or h.get("model") or "-")),
        ("workspace", e(workspace.get("path") or "-")),
        ("created", e(h.get("created_at") or "-")),
        ("active", e(h.get("active_at") or h.get("updated_at") or "-")),
    ]  # fmt: skip
    if h.get("archived"):
        pairs.append(("archived", "yes"))
    body = "".join(f"<dt>{e(k)}</dt><dd>{v}</dd>" for k, v in pairs)
    return f'<dl class="facts">{body}</dl>'


def _name(row: Mapping[str, Any], links: bool) -> str:
    text = f"{short(row['id'])} {row.get('label') or label(row)}"
    name = link(f"/s/{row['id']}", text) if links else e(text)
    merged = row.get("merged_into")  # a fork joined back (`merge`): the tree shows where
    if isinstance(merged, str) and merged:
        name += f' <span class="dim">merged into {e(short(merged))}</span>'
    return name


def tree(head: "Head", rows: list[dict[str, Any]], links: bool) -> str:
    """The session in its family: its parents up the chain (each holding the next), the
    point it was forked at, and the forks made from it (and theirs) under it."""
    by_id = {r["id"]: r for r in rows}
    children: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        if isinstance(row.get("parent_id"), str):
            children.setdefault(row["parent_id"], []).append(row)
    seen = {head.id}
    drawn = [0]

    def below(sid: str) -> str:
        items = []
        for child in children.get(sid, []):
            if drawn[0] >= TREE_NODES or child["id"] in seen:
                break
            seen.add(child["id"])
            drawn[0] += 1
            items.append(f"<li>{_name(child, links)}{below(child['id'])}</li>")
        return f"<ul>{''.join(items)}</ul>" if items else ""

    point = str(head.header.get("fork_point") or "")[:10]
    forked = f' <span class="dim">forked at commit {e(point)}</span>' if point else ""
    name = f"{short(head.id)} {label(head.header)}"
    inner = f'<li class="me"><b>{e(name)}</b>{forked}{below(head.id)}</li>'
    parent = head.header.get("parent_id")
    for _ in range(ANCESTORS):
        if not isinstance(parent, str):
            break
        found = by_id.get(parent)
        shown = _name(found, links) if found else e(f"{short(parent)} (deleted)")
        inner = f"<li>{shown}<ul>{inner}</ul></li>"
        if found is None or parent in seen:
            break
        seen.add(parent)
        parent = found.get("parent_id")
    if drawn[0] == 0 and not isinstance(head.header.get("parent_id"), str):
        return '<p class="dim">no parent and no forks</p>'
    return f'<ul class="tree">{inner}</ul>'


def replies(store: "SessionStore", head: "Head") -> Iterator[tuple[int, Mapping[str, Any]]]:
    """The records the timeline is drawn from: all of a short session's; of a long one,
    at `SAMPLES` evenly spaced places the first reply that says its context (one chunk
    read a place, whatever the length)."""
    total = head.counts.get("messages", 0)
    if total <= EXACT:
        yield from store.iter_records(head)
        return
    for k in range(SAMPLES):
        place = total * k // SAMPLES
        for index, record in store.iter_records(head, place, min(total, place + LOOK)):
            if isinstance(record.get("usage"), Mapping):
                yield index, record
                break


def timeline_html(store: "SessionStore", head: "Head", links: bool) -> str:
    """The whole session's timeline (sampled when long: said under it)."""
    drawn, turns = timeline.chart(store, head, replies(store, head), links)
    if not drawn:
        return '<p class="dim">no token counts recorded (replies carry none)</p>'
    note = ""
    if head.counts.get("messages", 0) > EXACT:
        note = f'<p class="dim">{plural(turns, "turn")} sampled evenly; every compaction</p>'
    return f'<div class="chart">{drawn}</div>{note}'


def pager(path: str, key: str, at: int, step: int, total: int | None, **keep: object) -> str:
    """Links to the first, previous and next pages (`total` None: unknown; next while full)."""
    parts = []
    if at > 0:
        parts.append(link(path, "first", **keep, **{key: 0}))
        parts.append(link(path, "previous", **keep, **{key: max(0, at - step)}))
    if total is None or at + step < total:
        parts.append(link(path, "next", **keep, **{key: at + step}))
    if total is not None and at + step < total:
        parts.append(link(path, "last", **keep, **{key: (total - 1) // step * step}))
    return f'<p class="pager">{" · ".join(parts)}</p>' if parts else ""


def log_rows(head: "Head", entries: list[dict[str, Any]], links: bool) -> list[list[str]]:
    rows = []
    for entry in entries:
        subject = e(entry["subject"])
        if links and entry["event"] == "turn" and "turn" in entry:
            subject = link(f"/s/{entry['session']}/turn/{entry['turn']}", entry["subject"])
        if entry["session"] != head.id:
            subject += f' <span class="dim">({e(short(entry["session"]))})</span>'
        detail = e(sessionlog.detail(entry))
        if links and entry["event"] == "compact" and "compaction" in entry:
            target = f"/s/{entry['session']}/compaction/{entry['compaction']}"
            detail = link(target, sessionlog.detail(entry))
        time = e(entry["time"].replace("T", " "))
        rows.append([f"<code>{e(entry['commit'][:10])}</code>", time, e(entry["event"]),
                     subject, detail])  # fmt: skip
    return rows


def log_html(store: "SessionStore", head: "Head", since: str, at: int) -> str:
    """`LOG_PAGE` commits of the turns, as `log` shows them (newest first), from commit
    `since` of the history (40 hex; "": its head): the page starts where it is, so an
    old page costs what the first does."""
    start = head
    if re.fullmatch(r"[0-9a-f]{40}", since):
        commit = store.read_commit(since.encode())
        start = store.head_at(owner_of(commit) or head.id, since.encode())
    entries = sessionlog.commits(store, start, 0, LOG_PAGE + 1)
    own = [n for n, entry in enumerate(entries) if "merged_by" not in entry]  # its own line
    cut = own[LOG_PAGE] if len(own) > LOG_PAGE else len(entries)  # a joined line stays whole
    shown = entries[:cut]
    grouped = sessionlog.turns(store, start, shown)
    body = table(["commit", "time", "event", "subject", "detail"], log_rows(head, grouped, True))
    path = f"/s/{head.id}"
    more = [link(path, "newest", at=at or None)] if start is not head else []
    if cut < len(entries):
        more.append(link(path, "older", at=at or None, log=entries[cut]["commit"]))
    return body + (f'<p class="pager">{" · ".join(more)}</p>' if more else "")


def render(source: Source, text: str, at: int, log: str) -> tuple[str, str]:
    """(title, body) of the session page: transcript from message `at`, turns from
    commit `log` ("": the newest)."""
    store = source.store()
    head = store.head(store.resolve(text))
    total = head.counts.get("messages", 0)
    at = max(0, min(at, max(total - 1, 0))) // PAGE * PAGE
    path = f"/s/{head.id}"
    title = label(head.header)
    body = [
        f"<h1>{e(title)}</h1>",
        facts(head),
        "<h2>Forks</h2>",
        tree(head, source.rows(True), True),
        "<h2>Context</h2>",
        timeline_html(store, head, True),
        f'<h2 id="transcript">Transcript <span class="dim">messages {at:,} to '
        f"{min(total, at + PAGE) - 1:,} of {total:,}</span></h2>",
        pager(path, "at", at, PAGE, total, log=log or None),
        messages_html(store.iter_records(head, at, at + PAGE), f"gitsessions show {head.id}"),
        pager(path, "at", at, PAGE, total, log=log or None),
        '<h2 id="turns">Turns</h2>',
        log_html(store, head, log, at),
    ]
    return f"{title} · gitsessions", "".join(body)


def anchor(session: str, index: int) -> str:
    """Where message `index` of a session is shown: its transcript page, at it."""
    return href(f"/s/{session}", at=index // PAGE * PAGE) + f"#m{index}"
