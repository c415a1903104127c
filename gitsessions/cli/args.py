"""What the commands' signatures share: the session id argument (and the one reading
commands may leave out: this project's latest session, as `git log` defaults to HEAD),
the `--json` flag, and the resolved `State` a command reads from its context (typer
only; nothing heavy), and the current directory when it still exists."""

from collections.abc import Generator
from pathlib import Path
from typing import Annotated

import typer

from gitsessions.cli.damage import warn_damaged
from gitsessions.cli.state import State
from gitsessions.store.errors import SessionNotFound

IdArg = Annotated[str, typer.Argument(metavar="ID", help="Session id or a unique prefix (4+).")]
LATEST = ("@", "-")  # what names this project's latest session, like an omitted ID
OptionalIdArg = Annotated[
    str | None,
    typer.Argument(
        metavar="ID",
        help="Session id or a unique prefix (4+); `@`, `-` or none: this project's latest "
        "session (the first of `list --here`).",
        show_default=False,
    ),
]
JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON on stdout.")]


def state_of(ctx: typer.Context) -> "State":
    """The `State` the app's callback put on the context."""
    state: State = ctx.obj  # typer's `obj` is untyped; the app's callback sets it
    return state


def session_or_latest(state: "State", session: str | None) -> str:
    """`session` as given, or (None, `@`, `-`) the id of this project's most recently
    active session: the first row of `list --here` in the current directory."""
    if session is not None and session not in LATEST:
        return session

    # the header cache (sqlite): 12-14 ms show and pull do not need
    from gitsessions.cli import listing

    catalog = state.catalog()
    here = Path.cwd()
    rows, _count = listing.open_rows(catalog, include_archived=False, workspace=here)
    first = next(rows, None)  # the first row alone is built
    if isinstance(rows, Generator):
        rows.close()  # the cache's cursor closed now, not when the generator is freed
    warn_damaged(catalog.damaged)
    if first is None:
        raise SessionNotFound(
            f"no session of this project ({here}) yet: give a session ID "
            "(`gitsessions list` shows every session)"
        )
    return str(first["id"])


def cwd_or_none() -> Path | None:
    """The current directory, or None when it was removed under us."""
    try:
        return Path.cwd()
    except OSError:
        return None
