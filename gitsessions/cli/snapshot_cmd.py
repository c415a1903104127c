"""`gitsessions snapshot restore SNAPSHOT [--workspace DIR] [--force]`: a code snapshot
back in the working tree; the command `rewind --force` and `worktree remove --force`
print for the changes they saved first."""

from pathlib import Path
from typing import Annotated

import typer

from gitsessions.cli.args import state_of
from gitsessions.cli.plain import one_line
from gitsessions.cli.state import err
from gitsessions.services.code.restore import restore, restore_command
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


def register(app: typer.Typer) -> None:
    app.add_typer(snapshot_app, name="snapshot")
