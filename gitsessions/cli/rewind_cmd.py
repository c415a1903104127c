"""`gitsessions rewind ID --to turn:N [--chat] [--code] [--force]`, and what it prints
(shared with `\\rewind N` in the chat)."""

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from gitsessions.cli.args import IdArg
from gitsessions.cli.plain import one_line, vtext
from gitsessions.cli.state import State, err
from gitsessions.services.code.fork_merge import place
from gitsessions.services.code.restore import restore_command
from gitsessions.services.code.rewind import Rewound, rewind
from gitsessions.services.sessions import points
from gitsessions.store.sessions import Head
from gitsessions.values.ids import short
from gitsessions.values.plural import plural


def session_workspace(head: Head, flag: Path | None, home: Path, env: Mapping[str, str]) -> Path:
    """Where a session's code is: --workspace, else its worktree (when this home made
    it: `worktree_mark.check`), else its recorded workspace when it is still there
    (not when its worktree mark is refused: the record came with it), else the current
    directory."""
    if flag is not None:
        return flag.expanduser().absolute()
    return place(home, head, env, Path.cwd())


def say_saved(console: Console, root: Path, snapshot: str) -> None:
    """What `--force` saved first (the workspace at `root` as `snapshot`), and the
    command that brings it back, on one line however wide: it is copied whole."""
    console.print(f"saved the workspace's changes first as snapshot {snapshot[:12]}; to get "
                  "them back:", markup=False, highlight=False)  # fmt: skip
    console.print(restore_command(root, snapshot), markup=False, highlight=False, soft_wrap=True)


def report(console: Console, done: Rewound) -> None:
    """What changed (`done.dry_run`: what would change): the files, the working
    context's messages, and the command that restores what `--force` saved first."""

    def say(text: str) -> None:
        console.print(text, markup=False, highlight=False)

    for note in done.notes:
        console.print(vtext(note, style="yellow"), highlight=False)
    if done.unchanged:
        say(f"already at turn {done.turn}: nothing to change")
        return
    would = done.dry_run
    if done.saved and done.root is not None:
        say_saved(console, done.root, done.saved)
    elif would and done.unheld:
        say("the workspace's changes no snapshot holds would be saved as a snapshot first")
    if done.code:
        files = done.files
        total = sum(len(v) for v in files.values())
        changed = "would change" if would else "changed"
        say(
            f"code: back to turn {done.turn} (snapshot {(done.snapshot or '')[:12]}), "
            f"{plural(total, 'file')} {changed}"
        )
        for label, mark in (("restored", "M"), ("added", "A"), ("removed", "D")):
            for path in files.get(label, []):
                say(f"  {mark} {one_line(path)}")
    if done.chat:
        goes = "would go" if would else "goes"
        say(
            f"chat: back to turn {done.turn}: the working context {goes} from "
            f"{done.context_before:,} to {plural(done.context_after, 'message')}; the "
            "transcript keeps every message"
        )


def cmd_rewind(
    ctx: typer.Context,
    session: IdArg,
    to: Annotated[str, typer.Option("--to", metavar="turn:N", help="The turn to go back to.")],
    chat: Annotated[
        bool, typer.Option("--chat", help="Rewind the working context and plan only.")
    ] = False,
    code: Annotated[bool, typer.Option("--code", help="Rewind the workspace files only.")] = False,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Rewind the code even when the workspace has changes no snapshot holds "
            "(they are snapshotted first).",
        ),
    ] = False,
    workspace: Annotated[
        Path | None,
        typer.Option(
            "--workspace",
            help="Where the code is [default: the session's worktree or recorded workspace].",
        ),
    ] = None,
) -> None:
    """Go back to turn N, never destructively: the chat (a new commit whose working
    context and plan are turn N's; the transcript keeps everything and records the
    rewind) and the code (the workspace's files as turn N's snapshot; refused when the
    workspace has changes no snapshot holds, unless --force, which snapshots them first
    and prints the `gitsessions snapshot restore` command that brings them back; a file
    whose content HEAD or any commit holds is not refused: a note names its `git show`).
    Default: both. Already at turn N: nothing is committed."""
    state: State = ctx.obj
    store = state.store
    session_id = store.resolve(session)
    turn = points.parse_turn(to)
    head = store.head(session_id)
    both = not chat and not code
    done = rewind(
        store,
        state.env,
        session_id,
        turn,
        workspace=session_workspace(head, workspace, state.home, state.env),
        chat=chat or both,
        code=None if both else code,
        force=force,
    )
    report(err, done)
    if not done.unchanged:
        err.print(f"session {short(session_id)} rewound to turn {turn}", markup=False)


def register(app: typer.Typer) -> None:
    app.command("rewind")(cmd_rewind)
