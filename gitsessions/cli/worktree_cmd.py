"""`gitsessions worktree list|remove|restore`, and `fork --worktree` (called by `fork`).

Every path, branch and title is printed through `one_line` (visible-safe)."""

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from gitsessions.cli.args import IdArg, JsonFlag
from gitsessions.cli.plain import one_line, piped, write_records
from gitsessions.cli.render import print_json
from gitsessions.cli.state import State, err, out
from gitsessions.services.code import worktree_adopt, worktrees
from gitsessions.values.ids import short

worktree_app = typer.Typer(
    no_args_is_help=True,
    help="The git worktrees of sessions forked with `fork --worktree`.",
)


def fork_worktree(
    state: State, session: str, at: str | None, title: str | None, json_: bool
) -> None:
    """`fork ID --worktree`: the chat fork plus a worktree of the parent's project."""
    store = state.store
    forked = worktrees.fork(
        store, state.env, store.resolve(session), at=at, title=title, hooks=state.hooks
    )
    head, mark = forked.head, forked.worktree
    if json_:
        print_json(
            out,
            {
                "id": head.id,
                "parent_id": head.header["parent_id"],
                "fork_point": head.header["fork_point"],
                "worktree": {k: mark[k] for k in ("path", "branch", "base")},
            },
        )
        return
    out.print(head.id)
    err.print(
        f"worktree {one_line(mark['path'])} on branch {one_line(mark['branch'])} "
        f"(code of snapshot {mark['base'][:12]}); `gitsessions chat --resume {short(head.id)}` "
        "works in it from anywhere",
        markup=False,
        highlight=False,
    )


@worktree_app.command("list")
def cmd_list(ctx: typer.Context, json_: JsonFlag = False) -> None:
    """Sessions with a worktree this home made: session, path, branch, and clean, dirty or
    missing."""
    state: State = ctx.obj
    rows = worktrees.listing(state.store, state.env)
    if json_:
        print_json(out, rows)
        return
    if not rows:
        err.print("no session has a worktree (`gitsessions fork ID --worktree` makes one)")
        return
    if piped(out):  # session, state, branch, path
        write_records(out, ([r["session"], r["state"], r["branch"], r["path"]] for r in rows))
        return
    table = Table(box=None, pad_edge=False)
    for column in ("session", "state", "branch", "path"):
        table.add_column(column, no_wrap=column != "path", overflow="fold")
    for r in rows:
        table.add_row(short(r["session"]), r["state"], one_line(r["branch"]), one_line(r["path"]))
    out.print(table, markup=False, highlight=False)


@worktree_app.command("remove")
def cmd_remove(
    ctx: typer.Context,
    session: IdArg,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Remove it even with uncommitted or untracked changes (snapshotted first).",
        ),
    ] = False,
) -> None:
    """Remove a session's worktree and unregister it from git; its branch stays, the
    session keeps working (in the directory it is resumed from) and records the removal."""
    state: State = ctx.obj
    store = state.store
    said, _, command = worktrees.remove(store, state.env, store.resolve(session), force).partition(
        "\n"
    )
    err.print(one_line(said), markup=False, highlight=False)
    if command:  # on one line however wide: it is copied whole
        err.print(one_line(command), markup=False, highlight=False, soft_wrap=True)


@worktree_app.command("restore")
def cmd_restore(ctx: typer.Context, session: IdArg) -> None:
    """Add a removed (or deleted) worktree again, at its branch. A worktree fork pulled
    from another machine gets its worktree made here, under this home, from the clone of
    its project you run this in, at its latest turn's code (its snapshots come with
    `pull --code`)."""
    state: State = ctx.obj
    store = state.store
    err.print(
        one_line(worktree_adopt.restore(store, state.env, store.resolve(session), Path.cwd())),
        markup=False,
        highlight=False,
    )


def register(app: typer.Typer) -> None:
    app.add_typer(worktree_app, name="worktree")
