"""`gitsessions search`: full-text search over every session."""

from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from gitsessions.cli.damage import warn_damaged
from gitsessions.cli.plain import one_line, piped, write_records
from gitsessions.cli.render import print_json
from gitsessions.cli.state import State, err, out
from gitsessions.services.sessions.search import Marks, SearchIndex, query_words
from gitsessions.values.errors import BadUsage
from gitsessions.values.ids import short

MARK = "bold reverse"


def highlighted(snippet: str, marks: Marks) -> Text:
    """The snippet on one line, the query's words in reverse video; each piece escaped
    before it is styled, so the marks stay on the words whatever the text holds."""
    text, at = Text(), 0
    for start, end in marks:
        text.append(one_line(snippet[at:start]))
        text.append(one_line(snippet[start:end]), style=MARK)
        at = end
    text.append(one_line(snippet[at:]))
    return text


def held_by(holders: tuple[str, ...]) -> str:
    """The sessions holding a hit: the newest, then the others (`abcd1234 +ef015678`)."""
    return " ".join([short(holders[0]), *("+" + short(o) for o in holders[1:])])


def cmd_search(
    ctx: typer.Context,
    query: Annotated[
        str,
        typer.Argument(
            help="Words to find, in any order, all in one message (case-insensitive, "
            "anywhere in a word)."
        ),
    ],
    include_archived: Annotated[
        bool, typer.Option("--include-archived", help="Search archived sessions too.")
    ] = False,
    limit: Annotated[int, typer.Option(min=1, help="At most this many hits.")] = 50,
    json_: Annotated[bool, typer.Option("--json", help="Print JSON on stdout.")] = False,
) -> None:
    """Search titles, summaries and transcripts of all sessions.

    Every word must occur in one message, title, summary or compaction summary, in any
    order; a word matches anywhere in a word (`authent` finds `authentication`). The
    system prompt is not searched. Hits show a snippet with the words highlighted; a
    message forks share is one hit naming every session that holds it.
    """
    state: State = ctx.obj
    if not query_words(query):
        raise BadUsage("the search query is empty; give one or more words")
    index = SearchIndex(state.store)
    hits = index.search(query, include_archived=include_archived, limit=limit)
    warn_damaged(index.damaged)
    for sid in index.skipped:
        err.print(f"warning: session {short(sid)} cannot be read; run `gitsessions doctor`")
    if json_:
        print_json(out, [h.as_dict() for h in hits])
        return
    if not hits:
        err.print("no matches")
        return
    if piped(out):  # session, message index ("-": a title or summary), role, title, snippet,
        # every session holding the message (forks share it), comma-separated
        write_records(
            out,
            (
                [
                    h.session,
                    "-" if h.index is None else h.index,
                    h.role,
                    h.title,
                    h.snippet,
                    ",".join(h.holders),
                ]
                for h in hits
            ),
        )
        return
    table = Table(box=None, pad_edge=False)
    for column in ("session", "title", "message", "snippet"):
        table.add_column(column, overflow="fold")
    for h in hits:
        where = h.role if h.index is None else f"{h.index} {h.role}"
        snippet = highlighted(h.snippet, h.marks)
        table.add_row(held_by(h.holders), one_line(h.title), one_line(where), snippet)
    out.print(table, markup=False, highlight=False)


def register(app: typer.Typer) -> None:
    app.command("search")(cmd_search)
