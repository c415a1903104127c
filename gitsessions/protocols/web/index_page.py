"""The index: sessions as `list` shows them (the CLI's rows: this project's first,
archived hidden unless asked), a page of `PAGE` at a time, and search through the
search service (services/sessions/search.py), each hit linked to its message.

Invariant: rows and hits are shown through `markup.e`; the search form is a GET to
this page (no script).
"""

from typing import Any

from gitsessions.protocols.web.markup import e, link, marked, number, table
from gitsessions.protocols.web.session_page import anchor, pager
from gitsessions.protocols.web.source import Source
from gitsessions.services.sessions.search import SearchIndex, query_words
from gitsessions.values.ids import short
from gitsessions.values.plural import plural

PAGE = 100  # sessions a page
HITS = 50  # search hits shown


def _row(row: dict[str, Any]) -> list[str]:
    name = link(f"/s/{row['id']}", row.get("label") or row["id"])
    if row.get("here"):
        name = f'<span class="here" title="this project">●</span> {name}'
    return [
        name,
        f"<code>{e(short(row['id']))}</code>",
        e((row.get("active_at") or "-").replace("T", " ")),
        number(row.get("messages", 0)),
        number(row.get("compactions", 0)),
        e(row.get("origin") or ""),
        e(row.get("workspace") or "-"),
    ]


def search_html(source: Source, query: str, archived: bool) -> str:
    index = SearchIndex(source.store())
    hits = index.search(query, include_archived=archived, limit=HITS)
    if not hits:
        return '<p class="dim">no matches</p>'
    rows = []
    for hit in hits:
        holders = " ".join(link(f"/s/{sid}", short(sid)) for sid in hit.holders)
        if hit.index is None:
            where = e(hit.role)
        else:
            where = f'<a href="{anchor(hit.session, hit.index)}">{hit.index:,} {e(hit.role)}</a>'
        rows.append([holders, e(hit.title), where, marked(hit.snippet, hit.marks)])
    return table(["session", "title", "message", "snippet"], rows, "hits")


def render(source: Source, page: int, archived: bool, query: str) -> tuple[str, str]:
    checked = " checked" if archived else ""
    form = (
        '<form class="search" method="get" action="/">'
        f'<input type="search" name="q" value="{e(query)}" placeholder="search every session">'
        f'<label><input type="checkbox" name="archived" value="1"{checked}> archived too</label>'
        '<button type="submit">search</button></form>'
    )
    body = ["<h1>Sessions</h1>", form]
    if query_words(query):
        body += [f"<h2>Search: {e(query)}</h2>", search_html(source, query, archived)]
    rows = source.rows(archived)
    here = sum(1 for r in rows if r.get("here"))
    start = max(0, page) * PAGE
    shown = rows[start : start + PAGE]
    toggle = link(
        "/", "hide archived" if archived else "show archived", archived=None if archived else 1
    )
    body.append(
        f'<p class="dim">{plural(len(rows), "session")}, {here:,} of this project (●), '
        f"most recently active first · {toggle}</p>"
    )
    headings = ["session", "id", "active", "messages", "compactions", "origin", "workspace"]
    body.append(table(headings, (_row(r) for r in shown), "sessions"))
    body.append(
        pager("/", "page", page, 1, -(-len(rows) // PAGE), archived=1 if archived else None)
    )
    return "sessions · gitsessions", "".join(body)
