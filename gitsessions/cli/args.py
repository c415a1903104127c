"""What the commands' signatures share: the session id argument, the `--json` flag, and
the resolved `State` a command reads from its context (typer only; nothing heavy)."""

from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from gitsessions.cli.state import State

IdArg = Annotated[str, typer.Argument(metavar="ID", help="Session id or a unique prefix (4+).")]
JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON on stdout.")]


def state_of(ctx: typer.Context) -> "State":
    """The `State` the app's callback put on the context."""
    return ctx.obj  # type: ignore[no-any-return]
