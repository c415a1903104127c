"""The `gitsessions` command: typer app, global options, and the one place errors print.

Every `GitsessionsError` raised below the CLI is caught here, once, and printed as a
single line on stderr with its exit code; nothing else is caught, so a bug still shows
its traceback.
"""

import os
import sys
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from gitsessions.cli import lazy
from gitsessions.cli.failure import os_error as _os_error
from gitsessions.cli.failure import quiet_disk_errors as _quiet_disk_errors
from gitsessions.values.errors import GitsessionsError

# The consoles (rich), sqlite3 and the store are imported when a command runs, so
# `gitsessions --help` costs little more than importing typer.


class _Group(lazy.LazyGroup):
    def invoke(self, ctx: typer.Context) -> Any:
        try:
            return super().invoke(ctx)
        except GitsessionsError as error:
            _fail(str(error), error.exit_code)
        except OSError as error:  # a read-only home, a full disk, a file we may not read
            _fail(_os_error(error), 1)
        except Exception as error:  # a cache file on a read-only or full disk
            sqlite3 = sys.modules.get("sqlite3")
            if sqlite3 is None or not isinstance(error, sqlite3.Error):
                raise
            _fail(f"a cache file in the gitsessions home cannot be written ({error})", 1)


def _fail(message: str, code: int) -> NoReturn:
    from gitsessions.cli.state import err
    from gitsessions.cli.terminal import one_line

    err.print(f"error: {one_line(message)}", markup=False, highlight=False, soft_wrap=True)
    raise typer.Exit(code) from None


app = typer.Typer(
    cls=_Group,
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
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
            "$XDG_DATA_HOME/gitsessions, else ~/.local/share/gitsessions]; also "
            "accepted after the command."
        ),
    ] = None,
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            is_eager=True,
            callback=lazy.print_version,
            help="Print the version and exit.",
        ),
    ] = False,
) -> None:
    from gitsessions.cli.state import State

    ctx.obj = State.from_env(home, os.environ)
    ctx.call_on_close(ctx.obj.close)


# Commands are imported when invoked (cli/lazy.py): `list` never pays for openai.


def main() -> None:
    """Console-script entry point."""
    sys.unraisablehook = _quiet_disk_errors
    try:
        app(args=lazy.bare_resume(sys.argv[1:]), prog_name="gitsessions")
    except KeyboardInterrupt:
        from gitsessions.cli.state import err

        err.print("interrupted")
        sys.exit(130)
