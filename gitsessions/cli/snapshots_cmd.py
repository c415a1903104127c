"""`gitsessions snapshots prune`: bound the code snapshots kept in a project."""

from pathlib import Path
from typing import Annotated

import typer

from gitsessions.cli.args import JsonFlag
from gitsessions.cli.render import print_json
from gitsessions.cli.state import State, err, out
from gitsessions.values.errors import InvalidInput
from gitsessions.values.ids import short
from gitsessions.values.plural import plural

snapshots_app = typer.Typer(
    no_args_is_help=True,
    help="The code snapshots sessions keep in a project (refs/gitsessions/snapshots/).",
)


@snapshots_app.command("prune")
def cmd_prune(
    ctx: typer.Context,
    keep: Annotated[
        int | None,
        typer.Option(
            "--keep",
            min=0,
            metavar="N",
            help="Keep of each session only the snapshots its last N turns can rewind to "
            "(default: every turn it can rewind to).",
        ),
    ] = None,
    older_than: Annotated[
        str | None,
        typer.Option(
            "--older-than",
            metavar="AGE",
            help="Also drop snapshots taken more than AGE ago (30d, 12h, 2w), even those "
            "a turn names.",
        ),
    ] = None,
    orphans: Annotated[
        bool,
        typer.Option(
            "--orphans",
            help="Also prune the refs of sessions this home never had (another home's, "
            "or pulled with --code and deleted since).",
        ),
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Say what would go; change nothing.")
    ] = False,
    project: Annotated[
        Path | None,
        typer.Option("--project", help="The project (default: the current directory)."),
    ] = None,
    json_: JsonFlag = False,
) -> None:
    """Drop code snapshots no session can rewind to, or beyond --keep / --older-than.

    By default it keeps every snapshot a session's turn names, and what `rewind --force`
    and `worktree remove --force` saved; it drops those of sessions deleted here. The
    objects freed go at the project's next `git gc` (after gc.pruneExpire, two weeks by
    default; `git gc --prune=now` frees them now)."""
    from gitsessions.services.code import retention
    from gitsessions.services.code.snapshots import find_project

    state: State = ctx.obj
    where = (project or Path.cwd()).expanduser().absolute()
    found = find_project(where, state.env)
    if found is None:
        raise InvalidInput(f"{where} is not in a git working tree: no snapshots to prune")
    age = retention.parse_age(older_than) if older_than is not None else None
    pruned = retention.prune(
        state.store,
        found,
        state.env,
        keep_turns=keep,
        older_than=age,
        orphans=orphans,
        dry_run=dry_run,
    )
    if json_:
        print_json(out, pruned.as_dict())
        return
    verb = "would drop" if dry_run else "dropped"
    for sid, dropped in pruned.dropped.items():
        gone = " (its ref deleted)" if sid in pruned.refs_deleted else ""
        out.print(f"{verb}\t{sid}\t{len(dropped)}{gone}", markup=False, highlight=False)
    summary = (
        f"{verb} {plural(pruned.dropped_count, 'snapshot')} of "
        f"{plural(len(pruned.dropped), 'session')}, kept {pruned.kept}"
    )
    if pruned.skipped:
        summary += (
            f"; left {plural(len(pruned.skipped), 'ref')} of sessions this home never had "
            "(--orphans prunes them)"
        )
    if pruned.moved:
        summary += f"; {', '.join(short(s) for s in pruned.moved)} moved meanwhile: left as is"
    if pruned.dropped_count and not dry_run:
        summary += "; the project's next `git gc` frees their space"
    err.print(summary, markup=False, highlight=False)


def register(app: typer.Typer) -> None:
    app.add_typer(snapshots_app, name="snapshots")
