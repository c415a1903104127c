"""The `gitsessions` command: typer app, global options, and the one place errors print.

Every `GitsessionsError` raised below the CLI is caught here, once, and printed as a
single line on stderr with its exit code; nothing else is caught, so a bug still shows
its traceback. Click's usage errors (it runs outside its standalone mode) print as click
prints them, but as `error:`.
"""

import io
import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from gitsessions.cli import lazy
from gitsessions.cli.failure import quiet_disk_errors as _quiet_disk_errors
from gitsessions.cli.failure import quiet_stdout, reported, say_error, stdout_gone

# The consoles (rich), sqlite3 and the store are imported when a command runs, so
# `gitsessions --help` costs little more than importing typer.


class _Group(lazy.LazyGroup):
    # typer passes its own Context; the base types it as the click Context typer vendors
    # and does not export, so the narrower annotation is the one a reader can follow
    def invoke(self, ctx: typer.Context) -> Any:  # type: ignore[override]
        try:
            return super().invoke(ctx)
        except Exception as error:  # ours, the system's (read-only home, full disk), sqlite's
            if stdout_gone(error):  # `| head`: the reader has what it wanted, as `show` does
                quiet_stdout()
                raise typer.Exit(0) from None
            found = reported(error)
            if found is None:
                raise
            say_error(found[0])
            raise typer.Exit(found[1]) from None


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
    # cli.state and the settings it reads: 11 ms --help does not need
    from gitsessions.cli.state import State

    ctx.obj = State.from_env(home, os.environ)
    ctx.call_on_close(ctx.obj.close)


# Commands are imported when invoked (cli/lazy.py): `list` never pays for openai.


def main() -> None:
    """Console-script entry point. The app runs outside click's standalone mode so that
    its usage errors ("No such option", "Missing argument") reach us: they print as
    click prints them (usage, the `-h` hint) but with the `error:` every other error
    has, where click writes `Error:`."""
    sys.unraisablehook = _quiet_disk_errors
    try:
        code = app(
            args=lazy.bare_resume(sys.argv[1:]), prog_name="gitsessions", standalone_mode=False
        )
    except (KeyboardInterrupt, typer.Abort):  # click makes an EOF at a prompt an Abort
        # cli.state and the settings it reads: 11 ms --help does not need
        from gitsessions.cli.state import err

        err.print("interrupted")
        sys.exit(130)
    except Exception as error:
        if not _shown_by_click(error):
            raise
        sys.exit(_click_error(error))
    sys.exit(code if isinstance(code, int) else 0)


def _shown_by_click(error: Exception) -> bool:
    """Whether `error` is one of click's own (a usage error, a bad file): what click's
    standalone mode would `show()` (the click exception interface typer's errors such
    as `typer.BadParameter` have)."""
    return callable(getattr(error, "show", None)) and isinstance(
        getattr(error, "exit_code", None), int
    )


def _click_error(error: Any) -> int:
    """Print a click error as click would, `Error:` written `error:`; its exit code."""
    # cli.state and the settings it reads: 11 ms --help does not need
    from gitsessions.cli.state import err

    shown = io.StringIO()
    error.show(file=shown)
    lines = shown.getvalue().splitlines()
    if lines and lines[-1].startswith("Error: "):
        lines[-1] = "error: " + lines[-1].removeprefix("Error: ")
    err.print("\n".join(lines), markup=False, highlight=False)
    return int(error.exit_code)
