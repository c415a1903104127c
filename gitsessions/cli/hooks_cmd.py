"""`gitsessions hooks install|uninstall|list` and `show --commit`'s lookup (`hook NAME`,
what the installed git hook shims run, is `cli/githook.py`)."""

import shlex
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

import gitsessions
from gitsessions.cli.plain import one_line, piped, vtext, write_records
from gitsessions.cli.render import print_json
from gitsessions.cli.state import State, err, out
from gitsessions.services.code import git_hooks
from gitsessions.services.hooks import hooks
from gitsessions.services.imports import agent_hooks
from gitsessions.values.errors import BadUsage, InvalidInput
from gitsessions.values.ids import short

hooks_app = typer.Typer(
    no_args_is_help=True,
    help="Git hooks that name a commit's session (Gitsessions-Session trailer), and the "
    "lifecycle hooks in $GITSESSIONS_HOME/hooks.",
)

Workspace = Annotated[
    Path | None,
    typer.Option(
        help="A folder of the git repository whose hooks to change [default: current directory]."
    ),
]


def _workspace(flag: Path | None) -> Path:
    return (flag or Path.cwd()).expanduser().absolute()


def launcher() -> git_hooks.Launcher:
    """This process's Python and gitsessions package: what the installed hooks run (the
    venv's own `python`, never the file it links to, so its packages come along)."""
    return git_hooks.Launcher(
        Path(sys.executable).absolute(), Path(gitsessions.__file__).parent.absolute()
    )


ClaudeFlag = Annotated[
    bool,
    typer.Option(
        "--claude-code",
        help="Claude Code's hooks (Stop, PreCompact, SessionEnd in"
        " $CLAUDE_CONFIG_DIR/settings.json, default ~/.claude/settings.json) that import"
        " each session into this home as it runs, instead of the git hooks.",
    ),
]
CodexFlag = Annotated[
    bool,
    typer.Option(
        "--codex",
        help="Codex's notify ($CODEX_HOME/config.toml, default ~/.codex/config.toml), run"
        " after each turn, that imports the session into this home, instead of the git hooks.",
    ),
]


@hooks_app.command("install")
def cmd_install(
    ctx: typer.Context,
    workspace: Workspace = None,
    claude_code: ClaudeFlag = False,
    codex: CodexFlag = False,
) -> None:
    """Install the prepare-commit-msg and commit-msg hooks in a repository. A hook you
    already have is kept and still runs first; `hooks uninstall` puts it back. The hooks
    run this gitsessions (its Python is written into them), not whatever is on PATH.

    With --claude-code or --codex: that agent's hooks instead, which import each of its
    sessions into this home as it runs (`import --from ... --hook`)."""
    state: State = ctx.obj
    if claude_code or codex:
        _agent_hooks(state, claude_code, codex, install=True)
        return
    for hook, what in git_hooks.install(_workspace(workspace), state.env, launcher()):
        err.print(vtext(f"{hook.path}: {what}"), highlight=False)


@hooks_app.command("uninstall")
def cmd_uninstall(
    ctx: typer.Context,
    workspace: Workspace = None,
    claude_code: ClaudeFlag = False,
    codex: CodexFlag = False,
) -> None:
    """Remove the gitsessions git hooks from a repository and restore your own (with
    --claude-code or --codex: only that agent's import hooks, nothing else of its config)."""
    state: State = ctx.obj
    if claude_code or codex:
        _agent_hooks(state, claude_code, codex, install=False)
        return
    for hook, what in git_hooks.uninstall(_workspace(workspace), state.env, launcher()):
        err.print(vtext(f"{hook.path}: {what}"), highlight=False)


def _agent_hooks(state: State, claude_code: bool, codex: bool, *, install: bool) -> None:
    """Claude Code's hooks and Codex's notify: each runs this gitsessions (this Python)
    on this home, `import --from ... --hook`."""
    home = Path(state.env.get("HOME") or Path.home())
    base = [str(Path(sys.executable).absolute()), "-m", "gitsessions", "--home", str(state.home)]
    if claude_code:
        config = state.env.get("CLAUDE_CONFIG_DIR")
        settings = (Path(config) if config else home / ".claude") / "settings.json"
        argv = [*base, "import", "--from", "claude-code", "--hook"]
        if install:
            what = agent_hooks.install_claude(settings, shlex.join(argv))
        else:
            what = agent_hooks.uninstall_claude(settings)
        err.print(vtext(f"{settings}: {what}"), highlight=False)
    if codex:
        codex_home = state.env.get("CODEX_HOME")
        config_toml = (Path(codex_home) if codex_home else home / ".codex") / "config.toml"
        argv = [*base, "import", "--from", "codex", "--hook", "--payload"]
        if install:
            what = agent_hooks.install_codex(config_toml, argv)
        else:
            what = agent_hooks.uninstall_codex(config_toml)
        err.print(vtext(f"{config_toml}: {what}"), highlight=False)


@hooks_app.command("list")
def cmd_list(
    ctx: typer.Context,
    workspace: Workspace = None,
    json_: Annotated[bool, typer.Option("--json", help="Print JSON on stdout.")] = False,
) -> None:
    """Show the git hooks of a repository and the lifecycle hooks of this home."""
    state: State = ctx.obj
    try:
        git = [h.as_dict() for h in git_hooks.states(_workspace(workspace), state.env, launcher())]
        repo_note = None
    except git_hooks.NotARepository as error:
        git, repo_note = [], str(error)
    lifecycle = hooks.installed(state.home)
    report: dict[str, Any] = {
        "git": git,
        "lifecycle": [
            {"event": e, "path": str(state.home / hooks.DIRECTORY / e), "state": s}
            for e, s in lifecycle.items()
        ],
        "timeout": state.hooks.timeout,
        "shipped": str(git_hooks.shipped_dir()),
    }
    if json_:
        print_json(out, report)
        return
    rows = [
        [
            f"git {h['name']}",
            h["state"] + (f" (runs {Path(h['chained']).name} first)" if h["chained"] else ""),
            h["path"],
        ]
        for h in git
    ]
    rows += [[row["event"], row["state"], row["path"]] for row in report["lifecycle"]]
    if piped(out):  # into a pipe: one tab-separated record a hook, paths whole (as `list`)
        write_records(out, rows)
    else:
        table = Table(box=None, pad_edge=False)
        for column in ("hook", "state", "path"):
            table.add_column(column, no_wrap=column != "path")
        for row in rows:
            table.add_row(*(one_line(cell) for cell in row))
        out.print(table, markup=False, highlight=False)
    if repo_note:
        err.print(vtext(f"git hooks: {repo_note}"), highlight=False)
    err.print(
        vtext(
            f"lifecycle hooks time out after {report['timeout']:g} s ([hooks] timeout); "
            f"examples and shims: {report['shipped']}"
        ),
        highlight=False,
    )


def register(app: typer.Typer) -> None:
    app.add_typer(hooks_app, name="hooks")


def session_of(state: State, session: str | None, commit: str) -> str:
    """`show --commit SHA`: the session to show (its id), the one its trailer names."""
    if session is not None:
        raise BadUsage("show takes a session ID or --commit SHA, not both")
    sha, ids = git_hooks.sessions_of_commit(Path.cwd(), commit, state.env)
    if not ids:
        raise InvalidInput(
            f"commit {sha[:12]} names no session (it has no {git_hooks.TRAILER} trailer)"
        )
    others = f" (it also names {', '.join(short(i) for i in ids[:-1])})" if len(ids) > 1 else ""
    err.print(vtext(f"commit {sha[:12]}: session {ids[-1]}{others}", style="dim"), highlight=False)
    return ids[-1]
