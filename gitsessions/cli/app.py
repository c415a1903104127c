"""The `gitsessions` command: typer app, global options, and the one place errors print.

Every `GitsessionsError` raised below the CLI is caught here, once, and printed as a
single line on stderr with its exit code; nothing else is caught, so a bug still shows
its traceback.
"""

import errno
import os
import sqlite3
import sys
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from gitsessions.cli import lazy
from gitsessions.cli.state import State, err
from gitsessions.cli.terminal import one_line
from gitsessions.values.errors import GitsessionsError

DISK_ERRORS = (errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


class _Group(lazy.LazyGroup):
    def invoke(self, ctx: typer.Context) -> Any:
        try:
            return super().invoke(ctx)
        except GitsessionsError as error:
            _fail(str(error), error.exit_code)
        except OSError as error:  # a read-only home, a full disk, a file we may not read
            _fail(_os_error(error), 1)
        except sqlite3.Error as error:  # a cache file on a read-only or full disk
            _fail(f"a cache file in the gitsessions home cannot be written ({error})", 1)


def _fail(message: str, code: int) -> NoReturn:
    err.print(f"error: {one_line(message)}", markup=False, highlight=False, soft_wrap=True)
    raise typer.Exit(code) from None


def _os_error(error: OSError) -> str:
    what = error.strerror or type(error).__name__
    where = f": {error.filename}" if error.filename else ""
    hint = ""
    if error.errno in DISK_ERRORS:
        hint = (
            " (nothing was changed; free space or fix permissions, then "
            "`gitsessions doctor` checks the store)"
        )
    return f"{what}{where}{hint}"


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
    ctx.obj = State.from_env(home, os.environ)
    ctx.call_on_close(ctx.obj.close)


# Commands are imported when invoked (cli/lazy.py): `list` never pays for openai.


def _quiet_disk_errors(unraisable: "sys.UnraisableHookArgs") -> None:
    """dulwich's lock files retry their cleanup in `__del__` after a full or read-only
    disk already failed the command (reported once, as one line): say nothing more."""
    if isinstance(unraisable.exc_value, OSError) and unraisable.exc_value.errno in DISK_ERRORS:
        return
    sys.__unraisablehook__(unraisable)


def main() -> None:
    """Console-script entry point."""
    sys.unraisablehook = _quiet_disk_errors
    try:
        app(prog_name="gitsessions")
    except KeyboardInterrupt:
        err.print("interrupted")
        sys.exit(130)
