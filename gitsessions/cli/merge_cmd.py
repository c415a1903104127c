"""`gitsessions merge FORK [--into ID] [--chat] [--code] [--force]`, and what it prints
(shared with `\\merge` in the chat)."""

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from gitsessions.cli.args import JsonFlag, state_of
from gitsessions.cli.plain import one_line, vtext
from gitsessions.cli.render import print_json
from gitsessions.cli.rewind_cmd import say_saved, session_workspace
from gitsessions.cli.state import err, plain_out
from gitsessions.services.code.fork_merge import ForkMerge, merge
from gitsessions.services.code.merge_code import finish_hint
from gitsessions.values.ids import short

if TYPE_CHECKING:  # the chat's agent: `merge` itself never builds one
    from gitsessions.agent.loop import Agent


def report(console: Console, done: ForkMerge) -> None:
    """What the merge did: the code's files and conflicts (and how to finish them),
    the merge commit, the command that restores what `--force` saved first."""

    def say(text: str, style: str = "") -> None:
        console.print(vtext(one_line(text), style=style), highlight=False)

    for note in done.notes:
        say(note, "yellow")
    code = done.code
    if code is not None:
        if code.saved:
            say_saved(console, code.root, code.saved)
        say(f"code: {code.said()}")
        conflicted = set(code.conflicts)
        for status, path in code.files:
            say(f"  {'C' if path in conflicted else status} {path}")
        for line in finish_hint(code):
            say(line, "yellow")
    fork = done.fork
    title = fork.header.get("title") or "untitled"
    if done.written is not None:
        if done.written.committed:
            say(
                f"chat: fork {short(fork.id)} ({title}) merged into {short(done.into)}: "
                f"commit {done.written.head.commit.decode()[:12]} joins both lines; its "
                "conclusion is in the working context"
            )
        else:
            say(f"chat: fork {short(fork.id)} is already merged into {short(done.into)}")


def cmd_merge(
    ctx: typer.Context,
    fork: Annotated[
        str, typer.Argument(metavar="FORK", help="The fork: its id or a unique prefix (4+).")
    ],
    into: Annotated[
        str | None,
        typer.Option(
            "--into", metavar="ID", help="The session to merge into [default: the fork's parent]."
        ),
    ] = None,
    chat: Annotated[bool, typer.Option("--chat", help="Merge the conversation only.")] = False,
    code: Annotated[bool, typer.Option("--code", help="Merge the code only.")] = False,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Merge the code even when the workspace has changes no snapshot holds "
            "(they are snapshotted first).",
        ),
    ] = False,
    workspace: Annotated[
        Path | None,
        typer.Option(
            "--workspace",
            help="Where the code merged into is [default: that session's worktree or "
            "recorded workspace].",
        ),
    ] = None,
    json_: JsonFlag = False,
) -> None:
    """Join a fork back into its parent (or --into another session). The code: the
    fork's changes since its fork point (its worktree as it is, else its newest
    snapshot) merged into the workspace by git's three-way merge; conflicts are left as
    git leaves them (markers in the files, the stages in the index) and listed; refused
    when the workspace has changes no snapshot holds, unless --force, which snapshots
    them first. The conversation: one merge commit whose parents are both heads, a
    [merge] record in the transcript, and the fork's conclusion (its last reply, its
    prompts when it had several; bounded) in the working context as data naming the
    fork. The fork itself stays as it is; `list` marks it merged. Default: both. Exit
    status 1 when conflicts are left."""
    state = state_of(ctx)
    store = state.store
    both = not chat and not code
    done = merge(
        store,
        state.env,
        store.resolve(fork),
        into,
        workspace=lambda head: session_workspace(head, workspace, state.home, state.env),
        chat=chat or both,
        code=code or both,
        force=force,
    )
    if json_:
        print_json(plain_out, done.as_json())
    report(err, done)
    if done.code is not None and done.code.conflicts:
        raise typer.Exit(1)  # as `git merge` says a conflict


def merge_here(agent: "Agent", text: str, workspace: Path, console: Console) -> None:
    """`\\merge FORK [--force] [--chat|--code]` in the chat: the fork merged into the
    chat's session (whose lease the chat holds), the chat going on from the merge."""
    words = text.split()
    flags = {w for w in words if w.startswith("--")}
    names = [w for w in words if not w.startswith("--")]
    if len(names) != 1 or flags - {"--force", "--chat", "--code"}:
        console.print(
            "usage: \\merge FORK [--force] [--chat|--code] (FORK: the fork's id or a prefix; "
            "--force snapshots changes no snapshot holds first)",
            markup=False,
            highlight=False,
        )
        return
    agent.save()  # pending steps first: the merge builds on them
    session = agent.session
    store = session.store
    both = not flags & {"--chat", "--code"}
    done = merge(
        store,
        dict(os.environ),
        store.resolve(names[0]),
        session.id,
        workspace=workspace,
        chat=both or "--chat" in flags,
        code=both or "--code" in flags,
        force="--force" in flags,
        lease_held=True,
    )
    if done.written is not None and done.written.committed:
        session.adopt(done.written.head)
    report(console, done)


def register(app: typer.Typer) -> None:
    app.command("merge")(cmd_merge)
