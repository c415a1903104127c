"""`gitsessions view [ID]`: the store as a local web view (protocols/web/), read-only,
on 127.0.0.1; or, with `--html FILE`, one session written as a page of its own.

Invariant: the server starts before the store is opened (the first page opens it), so
`view` prints its URL about as soon as `list` prints its rows; the URL is printed on
stdout (with its token: anyone holding it reads the store), everything else on stderr.
"""

import webbrowser
from pathlib import Path
from typing import Annotated, Any

import typer

from gitsessions.cli import state as consoles
from gitsessions.cli.args import cwd_or_none, session_or_latest, state_of
from gitsessions.cli.state import State
from gitsessions.protocols.web.source import Source
from gitsessions.values.errors import InvalidInput
from gitsessions.values.plural import plural


def source_of(state: State, here: Path | None) -> Source:
    """What the view reads: the store, `list`'s rows (`here`'s project first)."""

    project: list[Any] = []  # `here`'s identity, asked of git once, on the first page

    def rows(include_archived: bool) -> list[dict[str, Any]]:
        # the header cache (sqlite): per page, as `list` and `list --here` read it
        from gitsessions.agent.scope import project_in
        from gitsessions.cli import listing
        from gitsessions.services.code.workspace import project_of

        catalog = state.catalog()
        shown = listing.session_rows(catalog, include_archived)
        ours: set[str] = set()
        if here is not None:
            project[:] = project or project_of(here, state.env)
            within = project_in(catalog.values, here, *project)
            ours = {row["id"] for row in catalog.stream_rows(include_archived, within)}
        for row in shown:
            row["label"] = listing.label(row) + listing.marks(row)
            row["origin"] = listing.origin(row)
            row["here"] = row["id"] in ours
        return [r for r in shown if r["here"]] + [r for r in shown if not r["here"]]

    return Source(lambda: state.store, rows, state.env, here)


def cmd_view(
    ctx: typer.Context,
    session: Annotated[
        str | None,
        typer.Argument(
            metavar="ID",
            help="Session id or a unique prefix (4+): open its page (none: the index; with "
            "--html, none, `@` or `-`: this project's latest session).",
            show_default=False,
        ),
    ] = None,
    port: Annotated[
        int,
        typer.Option(
            min=0,
            max=65535,
            metavar="N",
            show_default=False,
            help="The port on 127.0.0.1 [default: a free one].",
        ),
    ] = 0,
    open_: Annotated[bool, typer.Option("--open", help="Open the page in the browser.")] = False,
    html: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE",
            help="Write the session (ID, else this project's latest) as one self-contained "
            "page to FILE instead, and serve nothing.",
        ),
    ] = None,
) -> None:
    """Browse the sessions in a web browser: served read-only on 127.0.0.1 until Ctrl-C,
    at a URL holding a random token (the one way in); with ID, that session's page."""
    state = state_of(ctx)
    source = source_of(state, cwd_or_none())
    if html is not None:
        # the pages (dulwich): only for the file
        from gitsessions.protocols.web.export import write_html

        session_id, messages = write_html(source, session_or_latest(state, session), html)
        consoles.err.print(
            f"wrote session {session_id[:8]} ({plural(messages, 'message')}) to {html}"
        )
        return
    # the server (http.server): only for the view
    from gitsessions.protocols.web.server import ViewServer

    path = "/"
    if session is not None:  # a wrong ID is said now, in one line, not in the browser
        path = f"/s/{state.store.resolve(session_or_latest(state, session))}"
    try:
        server = ViewServer(source, port)
    except OSError as error:
        raise InvalidInput(f"cannot serve on 127.0.0.1:{port}: {error.strerror}") from None
    url = server.url(path)
    consoles.out.print(url, soft_wrap=True, highlight=False)  # one line, to copy whole
    consoles.err.print("serving the sessions read-only; Ctrl-C stops it")
    if open_:
        webbrowser.open(url)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        state.close()


def register(app: typer.Typer) -> None:
    app.command("view")(cmd_view)
