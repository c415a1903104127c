"""`gitsessions hook NAME HOOK_FILE ARGS...`: what the installed git hook shims run, in a
module of its own so the command table builds it alone (no agent, no rich).

Invariants: a commit in a main checkout costs two git calls; the store is opened only
for a commit in a linked worktree without `GITSESSIONS_SESSION`. It never blocks a commit
for a reason of its own: the user's chained hook decides the exit code, and a problem of
gitsessions' is one line on stderr, the commit going on without the trailer.
"""

import sqlite3
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

from gitsessions.cli.plain import vtext
from gitsessions.cli.state import State
from gitsessions.services.code import git_hooks
from gitsessions.values.errors import BadUsage, GitsessionsError
from gitsessions.values.ids import is_session_id

SESSION_VARIABLE = "GITSESSIONS_SESSION"


def run_hook(
    name: str,
    hook_file: str,
    args: Sequence[str],
    env: Mapping[str, str],
    cwd: Path,
    home: Path,
) -> int:
    """Run the user's hook, then add the trailer; the exit code for git."""
    if name not in git_hooks.MANAGED:
        raise BadUsage(f"unknown git hook {name!r}; known: {', '.join(git_hooks.MANAGED)}")
    code = git_hooks.run_chained(hook_file, args, env, cwd)
    if code != 0 or not args:
        return code
    try:
        if name == "commit-msg" and git_hooks.has_trailer(Path(args[0])):
            return 0  # prepare-commit-msg decided, or the editor kept what it chose
        session = env.get(SESSION_VARIABLE)
        if not is_session_id(session):
            session = git_hooks.session_for(
                git_hooks.linked_worktree(cwd, env), None, lambda: _headers(env, home), home, env
            )
        if session is not None:
            git_hooks.add_trailer(Path(args[0]), session, cwd, env)
    except (GitsessionsError, OSError, sqlite3.Error, subprocess.SubprocessError) as error:
        from gitsessions.cli.state import err  # loaded only to say something

        message = f"gitsessions: no session trailer added: {error}"
        err.print(vtext(message, style="yellow"), highlight=False)
    return 0


def _headers(env: Mapping[str, str], home: Path) -> list[dict[str, Any]]:
    """Every session header, or none when the home has no store (never creates one)."""
    if not (home / "store.git").is_dir():
        return []
    # the header cache (sqlite): 11-15 ms, only where rows are read
    from gitsessions.store.catalog import Catalog
    from gitsessions.store.sessions import SessionStore

    store = SessionStore(home, background_maintenance=False)  # read only
    try:
        return Catalog(store).headers()
    finally:
        store.close()


def cmd_hook(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(metavar="NAME", help="prepare-commit-msg, commit-msg.")],
    hook_file: Annotated[str, typer.Argument(metavar="HOOK_FILE", help="The shim's path ($0).")],
    args: Annotated[
        list[str] | None, typer.Argument(metavar="ARGS...", help="What git passed the hook.")
    ] = None,
) -> None:
    """Run by the installed git hooks: runs your own hook first, then adds the
    Gitsessions-Session trailer when the commit is a session's."""
    state: State = ctx.obj
    raise typer.Exit(run_hook(name, hook_file, args or [], state.env, Path.cwd(), state.home))


def register(app: typer.Typer) -> None:
    app.command(
        "hook",
        context_settings={"ignore_unknown_options": True, "allow_extra_args": False},
    )(cmd_hook)
