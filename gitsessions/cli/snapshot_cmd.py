"""`gitsessions snapshot restore SNAPSHOT [--workspace DIR] [--force]`: a code snapshot
back in the working tree, the command `rewind --force` and `worktree remove --force`
print for the changes they saved first; and `snapshot prune`, which bounds the code
snapshots kept in a project."""

from pathlib import Path
from typing import Annotated

import typer

from gitsessions.cli.args import JsonFlag, state_of
from gitsessions.cli.plain import one_line
from gitsessions.cli.render import print_json
from gitsessions.cli.state import State, err, out
from gitsessions.services.code import retention
from gitsessions.services.code.restore import restore, restore_command
from gitsessions.services.code.retention import Pruned
from gitsessions.services.code.snapshots import find_project
from gitsessions.values.errors import InvalidInput
from gitsessions.values.ids import short
from gitsessions.values.plural import plural

snapshot_app = typer.Typer(
    no_args_is_help=True,
    help="Code snapshots: the exact code of each turn, commits in the project's repository.",
)


@snapshot_app.command("restore")
def cmd_restore(
    ctx: typer.Context,
    snapshot: Annotated[
        str,
        typer.Argument(
            metavar="SNAPSHOT",
            help="The snapshot's commit id (or a unique prefix), as `rewind --force` printed it.",
        ),
    ],
    workspace: Annotated[
        Path | None,
        typer.Option(
            "--workspace", help="Any folder of the project's working tree [default: here]."
        ),
    ] = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Restore even when the working tree has changes no snapshot holds "
            "(they are snapshotted first).",
        ),
    ] = False,
) -> None:
    """Make the working tree's files those of a code snapshot: files it holds written,
    files it lacks removed, ignored files untouched; HEAD, the index and the stash are
    left alone. Refused when the working tree has changes no snapshot holds, unless
    --force."""
    state = state_of(ctx)
    where = (workspace or Path.cwd()).expanduser().absolute()
    done = restore(state.env, where, snapshot, force)

    def say(text: str) -> None:
        err.print(text, markup=False, highlight=False)

    if done.unchanged:
        say(f"the working tree already holds snapshot {done.snapshot[:12]}: nothing to change")
        return
    if done.saved:
        saved = done.saved[:12]
        say(f"saved the working tree's changes first as snapshot {saved}; to get them back:")
        # on one line however wide: it is copied whole
        err.print(restore_command(done.root, done.saved), markup=False, highlight=False,
                  soft_wrap=True)  # fmt: skip
    total = sum(len(v) for v in done.files.values())
    say(
        f"restored snapshot {done.snapshot[:12]} in {one_line(done.root)}: "
        f"{plural(total, 'file')} changed"
    )
    for label, mark in (("restored", "M"), ("added", "A"), ("removed", "D")):
        for path in done.files.get(label, []):
            say(f"  {mark} {one_line(path)}")
    for note in done.notes:
        say(one_line(note))


@snapshot_app.command("prune")
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
    _report_prune(pruned, dry_run)


def _report_prune(pruned: Pruned, dry_run: bool) -> None:
    """One line per session with snapshots dropped on stdout, the summary on stderr."""
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
    app.add_typer(snapshot_app, name="snapshot")
