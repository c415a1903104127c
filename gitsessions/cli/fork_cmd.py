"""`fork`: a new session at another's head or an earlier turn (`--worktree`: with a git
worktree of the project, cli/worktree_cmd.py)."""

from typing import Annotated

import typer

from gitsessions.cli import state as consoles
from gitsessions.cli.args import IdArg, JsonFlag, state_of
from gitsessions.cli.render import print_json
from gitsessions.cli.state import plain_out
from gitsessions.cli.worktree_cmd import fork_worktree
from gitsessions.services.sessions import manage


def cmd_fork(
    ctx: typer.Context,
    session: IdArg,
    title: Annotated[str | None, typer.Option(help="Title of the fork.")] = None,
    json_: JsonFlag = False,
    worktree: Annotated[
        bool,
        typer.Option(
            "--worktree",
            help="Also make a git worktree of the project on branch gitsessions/<short id>, "
            "at the fork point's code snapshot.",
        ),
    ] = False,
    at: Annotated[
        str | None,
        typer.Option(
            "--at",
            metavar="REV",
            help="Fork at turn:N or a commit of the session instead of its head.",
        ),
    ] = None,
) -> None:
    """Fork a session: a new branch at its head (or --at an earlier turn); nothing is
    copied, nothing switched."""
    if worktree:
        fork_worktree(state_of(ctx), session, at, title, json_)
        return
    store = state_of(ctx).store
    head = manage.fork(store, store.resolve(session), title, hooks=state_of(ctx).hooks, at=at)
    if json_:
        print_json(
            plain_out,
            {
                "id": head.id,
                "parent_id": head.header["parent_id"],
                "fork_point": head.header["fork_point"],
                "branch": head.branch,
            },
        )
    else:
        consoles.out.print(head.id)


def register(app: typer.Typer) -> None:
    app.command("fork")(cmd_fork)
