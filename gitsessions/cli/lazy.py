"""The command group that imports a command's module only when that command runs.

Invariants:
- `gitsessions list` imports what `list` needs and nothing else (no openai, tiktoken,
  agent); `--help` prints the table's summaries without importing a command
  (tests/test_basics.py checks the table names every registered command and each
  summary is a sentence). A command registered on the app directly is eager: add it to
  the table instead.
- `--home DIR` is accepted after the command too (moved in front before parsing).
- The cycle collector, off from `cli/entry.py` on, runs again once the command is built
  (`started`), the start-up objects frozen out of its reach (off saves `list` about 8 ms
  of CPU, frozen about 30 ms).
- A command that exited (`exiting`: its code) ends the process once the other exit
  handlers ran and its threads were joined, its streams flushed, without the
  interpreter's teardown (`leave`); a stream that cannot be flushed leaves it to the
  teardown, which says so as before.
"""

import gc
import os
from importlib import import_module
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup

from gitsessions.cli.plain import StreamOf

# command -> (module under gitsessions.cli, the summary `--help` lists: one full sentence)
COMMANDS: dict[str, tuple[str, str]] = {
    "chat": ("chat", "Chat with the agent in this workspace; every turn is a commit."),
    "exec": ("exec_cmd", "Run one turn (tool calls included) and print the final reply."),
    "list": ("read_cmd", "List sessions, the most recently active first."),
    "info": ("read_cmd", "Show one session: ids, counts, usage, settings and workspace."),
    "show": ("read_cmd", "Print the full transcript (or the working context) of a session."),
    "log": ("read_cmd", "Show the session's history, one line per turn."),
    "rename": ("edit_cmd", "Set the session's title."),
    "fork": ("fork_cmd", "Fork a session: a new branch at its head; nothing is copied."),
    "archive": ("edit_cmd", "Hide a session from `list` and search."),
    "unarchive": ("edit_cmd", "Bring an archived session back."),
    "delete": ("edit_cmd", "Delete a session for good, with every object only it used."),
    "undelete": ("edit_cmd", "Bring back a session a pull deleted for a remote's tombstone."),
    "gc": ("gc_cmd", "Pack objects (deltified) and purge what no session reaches."),
    "export": ("exchange", "Export a whole session as one JSON document."),
    "import": ("exchange", "Import an export file, or Claude Code or Codex sessions."),
    "search": ("search", "Search titles, summaries and transcripts of all sessions."),
    "compact": ("compact_cmd", "Compact a session's working context now."),
    "pin": ("compact_cmd", "Pin a note: it survives every compaction verbatim."),
    "unpin": ("compact_cmd", "Remove a pinned note by its number."),
    "pins": ("compact_cmd", "List a session's pinned notes."),
    "doctor": ("doctor_cmd", "Check the store for what git fsck cannot see, and repair it."),
    "diff": ("diff_cmd", "Compare two session states since their common ancestor."),
    "merge": ("merge_cmd", "Join a fork back: its code and its conclusion, one merge commit."),
    "rewind": ("rewind_cmd", "Rewind a session's chat and code to an earlier turn."),
    "blame": ("blame_cmd", "Show which session and turn last wrote each line of a file."),
    "trace": ("blame_cmd", "Print the Agent Trace record of the lines a commit changed."),
    "snapshot": ("snapshot_cmd", "Restore or prune code snapshots (`rewind --force` saves one)."),
    "worktree": ("worktree_cmd", "List, remove or restore the git worktrees of forks."),
    "remote": ("sync_cmd", "Add, list or remove the remotes sessions sync with."),
    "push": ("sync_cmd", "Push sessions to a git remote; never forced."),
    "pull": ("sync_cmd", "Pull sessions from a git remote; nothing is ever lost."),
    "sync": ("sync_cmd", "Pull, then push: one line says what moved; safe from cron."),
    "acp": ("acp_cmd", "Serve the agent to editors such as Zed over ACP (stdio)."),
    "mcp": ("mcp_cmd", "Serve the session store to other agents over MCP (stdio)."),
    "view": ("view_cmd", "Browse the sessions in a web browser, read-only, on 127.0.0.1."),
    "hooks": ("hooks_cmd", "Install, uninstall or list the git hooks that name a session."),
    "hook": ("githook", "What the installed git hook shims run; not for typing."),
}


def started() -> None:
    """Start-up is over: the modules, classes and functions made so far live as long as
    the process. `cli/entry.py` turns the cycle collector off until now (it would scan
    them over and over as they pile up: about 8 ms of `list`'s CPU); they are moved out
    of its reach (`gc.freeze`: without it, the collections after start-up and at exit
    scan them all, about 30 ms) and it runs again from here on."""
    gc.freeze()
    gc.enable()


_code: int | None = None  # the exit code of a command that exited, once it did


def exiting(code: object) -> None:
    """The command exited with `code` (a `SystemExit`'s): `leave` may end the process."""
    global _code
    _code = code if isinstance(code, int) else 0 if code is None else None


def leave() -> None:
    """The last exit handler: once the command exited, stdout and stderr are flushed and
    the process ends at once. The interpreter's teardown would free every module and
    object one at a time (with openai, pydantic and rich loaded: about 0.3 s of CPU, a
    chat's exit); the non-daemon threads were joined and the other exit handlers ran
    before this one (registered first), and every file the commands write is closed by
    then. A flush that fails (a reader gone) is left to the teardown, as before."""
    if _code is None:
        return
    try:
        for name in ("stdout", "stderr"):
            StreamOf(name).file.flush()
    except BaseException:  # the teardown flushes again and says what failed
        return
    os._exit(_code)


def load(name: str) -> Any:
    """The click command `name`, built from its module (which registers it on an app).
    Only `name` is built (each command typer builds costs a millisecond or more); a
    group of subcommands is built with its group."""
    module = import_module(f"gitsessions.cli.{COMMANDS[name][0]}")
    app = typer.Typer(rich_markup_mode=None, add_completion=False)
    module.register(app)
    _plain_arguments(app)
    for info in app.registered_commands:
        if info.name == name:
            command = typer.main.get_command_from_info(
                info,
                pretty_exceptions_short=app.pretty_exceptions_short,
                rich_markup_mode=app.rich_markup_mode,
            )
            break
    else:
        command = typer.main.get_group(app).commands[name]
    started()
    return command


class Command(TyperCommand):
    """A command whose usage line and `Arguments:` list name each argument as people
    write it: its metavar (else its name in capitals), `[NAME]` when it may be left out,
    `NAME...` when it takes many; never typer's `{NAME}` or its type (`<list[str]>`).
    A metavar already in brackets (`[REMOTE] [ID]...`) is shown as it is."""

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if param.param_type_name == "argument":
                pieces.append(_argument_usage(param))
            else:
                pieces.extend(param.get_usage_pieces(ctx))
        return pieces

    def format_options(self, ctx: Any, formatter: Any) -> None:
        arguments, options = [], []
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            if param.param_type_name == "argument":
                arguments.append((_argument_name(param), record[1]))
            elif param.param_type_name == "option":
                options.append(record)
        for title, records in (("Arguments", arguments), ("Options", options)):
            if records:
                with formatter.section(title):
                    formatter.write_dl(records)


def _argument_name(param: Any) -> str:
    name = str(param.metavar or (param.name or "").upper())
    return name + ("..." if param.nargs != 1 and not name.endswith("...") else "")


def _argument_usage(param: Any) -> str:
    name = _argument_name(param)
    return name if param.required or name.startswith("[") else f"[{name}]"


def _plain_arguments(app: typer.Typer) -> None:
    """Every command of `app` and of its groups built as a `Command`."""
    for info in app.registered_commands:
        if info.cls in (None, TyperCommand):  # typer's default: not a class of our own
            info.cls = Command
    for group in app.registered_groups:
        if group.typer_instance is not None:
            _plain_arguments(group.typer_instance)


def hoist_home(args: list[str]) -> list[str]:
    """`--home DIR` / `--home=DIR` anywhere before `--`, moved to the front."""
    front: list[str] = []
    rest: list[str] = []
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "--":
            rest.extend(args[index:])
            break
        if arg == "--home" and index + 1 < len(args):
            front += args[index : index + 2]
            index += 2
            continue
        if arg.startswith("--home="):
            front.append(arg)
        else:
            rest.append(arg)
        index += 1
    return front + rest


def bare_resume(argv: list[str]) -> list[str]:
    """`--resume` given without an id (last, or followed by another option) becomes
    `--resume=` (an empty id: pick one), which the option parser cannot express."""
    out: list[str] = []
    for n, arg in enumerate(argv):
        if arg == "--":
            return out + argv[n:]
        following = argv[n + 1] if n + 1 < len(argv) else None
        bare = following is None or (following.startswith("-") and following != "-")
        out.append("--resume=" if arg == "--resume" and bare else arg)
    return out


def print_version(value: bool) -> None:
    if value:
        # importlib.metadata: over 2 ms, only for --version
        from importlib.metadata import version

        # `out` is made (a console) on first use
        from gitsessions.cli.state import out

        out.print(f"gitsessions {version('gitsessions')}", highlight=False)
        raise typer.Exit()


class LazyGroup(TyperGroup):
    def list_commands(self, ctx: Any) -> list[str]:
        return [*COMMANDS, *(name for name in self.commands if name not in COMMANDS)]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            self.commands[cmd_name] = load(cmd_name)
        return self.commands.get(cmd_name)

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        return super().parse_args(ctx, hoist_home(args))

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        rows = [
            (
                name,
                COMMANDS[name][1] if name in COMMANDS else self.commands[name].get_short_help_str(),
            )
            for name in self.list_commands(ctx)
        ]
        with formatter.section("Commands"):
            formatter.write_dl(rows)
