"""`gitsessions search`: full-text search over every session."""

from typing import Annotated

import typer
from rich.table import Table

from gitsessions.cli.render import print_json
from gitsessions.cli.state import State, err, out
from gitsessions.cli.terminal import one_line, piped, write_records
from gitsessions.services.search import SearchIndex
from gitsessions.values.ids import short


def cmd_search(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="Text to find (case-insensitive substring).")],
    include_archived: Annotated[
        bool, typer.Option("--include-archived", help="Search archived sessions too.")
    ] = False,
    limit: Annotated[int, typer.Option(min=1, help="At most this many hits.")] = 50,
    json_: Annotated[bool, typer.Option("--json", help="Print JSON on stdout.")] = False,
) -> None:
    """Search titles, summaries and every transcript message of all sessions."""
    state: State = ctx.obj
    index = SearchIndex(state.store)
    hits = index.search(query, include_archived=include_archived, limit=limit)
    for sid in index.skipped:
        err.print(f"warning: session {short(sid)} cannot be read; run `gitsessions doctor`")
    if json_:
        print_json(out, [h.as_dict() for h in hits])
        return
    if not hits:
        err.print("no matches")
        return
    if piped(out):  # session, message index ("-": a title or summary), role, title, snippet
        write_records(
            out,
            (
                [h.session, "-" if h.index is None else h.index, h.role, h.title, h.snippet]
                for h in hits
            ),
        )
        return
    table = Table(box=None, pad_edge=False)
    for column in ("session", "title", "message", "snippet"):
        table.add_column(column, overflow="fold" if column == "snippet" else None)
    for h in hits:
        where = h.role if h.index is None else f"{h.index} {h.role}"
        table.add_row(short(h.session), one_line(h.title), one_line(where), one_line(h.snippet))
    out.print(table, markup=False, highlight=False)


def register(app: typer.Typer) -> None:
    app.command("search")(cmd_search)
