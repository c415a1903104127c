"""The `gitsessions` command: typer app, global options, and the one place errors print.

Every `GitsessionsError` raised below the CLI is caught here, once, and printed as a
single line on stderr with its exit code; nothing else is caught, so a bug still shows
its traceback.
"""

import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from gitsessions.cli import chat, compact_cmd, exchange, exec_cmd, manage, search
from gitsessions.cli.state import State, err
from gitsessions.cli.terminal import one_line
from gitsessions.values.errors import GitsessionsError


class _Group(TyperGroup):
    def invoke(self, ctx: typer.Context) -> Any:
        try:
            return super().invoke(ctx)
        except GitsessionsError as error:
            err.print(f"error: {one_line(error)}", markup=False, highlight=False, soft_wrap=True)
            raise typer.Exit(error.exit_code) from None


app = typer.Typer(
    cls=_Group,
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    help="A coding agent whose sessions live in git. Sessions are stored as branches of "
    "a git repository in $GITSESSIONS_HOME/store.git.",
)


@app.callback()
def _main(
    ctx: typer.Context,
    home: Annotated[
        Path | None,
        typer.Option(
            help="Where sessions live [default: $GITSESSIONS_HOME, else "
            "$XDG_DATA_HOME/gitsessions, else ~/.local/share/gitsessions]"
        ),
    ] = None,
) -> None:
    ctx.obj = State.from_env(home, os.environ)
    ctx.call_on_close(ctx.obj.close)


chat.register(app)
exec_cmd.register(app)
manage.register(app)
exchange.register(app)
search.register(app)
compact_cmd.register(app)


def main() -> None:
    """Console-script entry point."""
    try:
        app()
    except KeyboardInterrupt:
        err.print("interrupted")
        sys.exit(130)
