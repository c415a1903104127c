"""`remote add|list|set|remove`, `push`, `pull` and `sync`: sessions synced through git remotes.

Data (the result table, `--json`) goes to stdout; progress and notes to stderr. A URL is
only ever shown masked (`services.sync` hands out nothing else). Into a pipe both are
written plain (the table as one tab-separated record per session, as `list` writes
it), so a scripted or scheduled sync never loads rich; on a terminal they go through
the consoles.
"""

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer

from gitsessions.cli import state
from gitsessions.cli.args import JsonFlag, state_of
from gitsessions.cli.plain import Sink, StreamOf, one_line, piped, write_json, write_records
from gitsessions.cli.state import plain_out
from gitsessions.cli.sync_code import (
    CodeFlag,
    code_moved,
    here_root,
    make_worktrees,
    show_code,
    show_worktrees,
    whose,
)
from gitsessions.services.sync.pull import fetch_snapshots, pull
from gitsessions.services.sync.push import push, push_snapshots
from gitsessions.services.sync.remotes import (
    add_remote,
    code_goes_with,
    list_remotes,
    pick_remote,
    remove_remote,
    set_remote_code,
)
from gitsessions.services.sync.report import NOT_SENT, Report, deferred_line, ignored_line
from gitsessions.store import remoteconfig
from gitsessions.store.projectrefs import keys
from gitsessions.store.sessions import SessionStore
from gitsessions.values.errors import BadUsage
from gitsessions.values.ids import short
from gitsessions.values.plural import plural

plain_err = StreamOf("stderr")  # where `state.err` writes, without making it


def is_id_prefix(word: str) -> bool:
    return len(word) >= 4 and all(c in "0123456789abcdef" for c in word.lower())


CodeRemote = Annotated[
    str, typer.Option("--code-remote", help="The project's remote for --code snapshots.")
]
remote_app = typer.Typer(
    no_args_is_help=True,
    help="Remotes the sessions sync with (kept in store.git/config, so stock git sees them).",
)


def _note(line: str, style: str = "") -> None:
    """One line of data on stderr: plain into a pipe, through the console on a terminal."""
    if piped(plain_err):
        sink = Sink(plain_err.file, colour=False)
        sink.line(line, one_line=True)
        sink.flush()
    else:
        state.err.print(one_line(line), style=style)


def _progress(line: str) -> None:
    _note(line, "dim")


def _show(
    report: Report, json_: bool, verb: str, code_remote: str = "", strict: str | None = None
) -> None:
    """The report: its table (or JSON) on stdout, notes on stderr; exit 1 (after it is
    all said) when code could not go where `--code` was asked (`strict`, see
    `sync_code.show_code`), or git refused a session's code."""
    if json_:
        write_json(plain_out, report.as_dict())
        if show_code(report, code_remote, _error_only, strict=strict):
            raise typer.Exit(1)
        return
    quiet = {"up to date", "unchanged"}
    rows = [
        [short(o.id), o.result, f"{o.detail} -> forked as {short(o.fork)}" if o.fork else o.detail]
        for o in report.sessions
        if o.result not in quiet
    ]
    if rows and piped(plain_out):
        write_records(plain_out, rows)
    elif rows:
        # rich: only for a table on a terminal
        from rich.table import Table

        table = Table(box=None, pad_edge=False)
        for column in ("id", "result", "detail"):
            table.add_column(column, no_wrap=column != "detail")
        for row in rows:
            table.add_row(*(one_line(cell) for cell in row))
        state.out.print(table, markup=False, highlight=False)
    for sid, why in report.kept:
        _note(f"kept {short(sid)}: {why}")
    for line in (ignored_line(report), deferred_line(report)):
        if line is not None:
            _note(f"warning: {line}")
    failed = show_code(report, code_remote, _note, strict=strict)
    counts = report.counts()
    summary = ", ".join(f"{n} {what}" for what, n in sorted(counts.items())) or "no sessions"
    _note(f"{verb} {report.url}: {summary}{whose(report.sessions)}")
    if failed:
        raise typer.Exit(1)


def _error_only(line: str, style: str = "") -> None:
    """With `--json`: a line that fails the run is still said; the rest is in the data."""
    if line.startswith("error:"):
        _note(line, style)


def _strict(code: bool | None, env: Mapping[str, str]) -> str | None:
    """The repository whose missing code remote fails the run: the current directory's,
    when `--code` was asked."""
    return here_root(env) if code else None


Here = Annotated[
    bool,
    typer.Option(
        "--here",
        help="Only this project's sessions (as `list --here` finds them; on a pull, "
        "asked of the remote by its project index alone).",
    ),
]


def _project_ids(store: "SessionStore") -> list[str]:
    """The sessions of the project of the current directory (and their forks)."""
    # the header cache (sqlite): 12-14 ms a pull does not need
    from gitsessions.cli.listing import session_rows

    return [row["id"] for row in session_rows(store, include_archived=True, workspace=Path.cwd())]


def _here_ids(store: "SessionStore") -> list[str]:
    """`_project_ids`, at least one."""
    ids = _project_ids(store)
    if not ids:
        raise BadUsage(f"no session of this project here ({one_line(str(Path.cwd()))})")
    return ids


def _here_keys(env: Mapping[str, str]) -> list[bytes]:
    """The project index keys of the current directory's repository."""
    # the project identity (socket): over 2 ms, only for a workspace
    from gitsessions.services.code.workspace import project_of

    found = keys(project_of(Path.cwd(), env)[1])
    if not found:
        raise BadUsage("--here needs a git repository with a commit or a remote")
    return found


@remote_app.command("add")
def cmd_remote_add(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="A name for the remote, e.g. origin.")],
    url: Annotated[
        str,
        typer.Argument(
            help="A bare repository: a path, file://, ssh://, user@host:path, git:// or http(s)://."
        ),
    ],
    code: Annotated[
        bool,
        typer.Option(
            "--code",
            help="Code goes with this remote: push, pull and sync through it move the "
            "sessions' code snapshots without --code (--no-code leaves them).",
        ),
    ] = False,
) -> None:
    """Add a remote to sync sessions with."""
    stored = add_remote(state_of(ctx).store, name, url, Path.cwd(), code)
    with_code = " (code goes with it)" if code else ""
    _note(f"added remote {name}: {remoteconfig.mask(stored)}{with_code}")


@remote_app.command("set")
def cmd_remote_set(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The remote's name.")],
    code: Annotated[
        bool,
        typer.Option(
            "--code/--no-code",
            help="Whether code goes with this remote (push, pull and sync without --code).",
        ),
    ],
) -> None:
    """Change a remote's setting: whether code goes with it."""
    set_remote_code(state_of(ctx).store, name, code)
    _note(f"remote {name}: code {'goes with it' if code else 'stays unless --code'}")


@remote_app.command("list")
def cmd_remote_list(ctx: typer.Context, json_: JsonFlag = False) -> None:
    """List the remotes (credentials in a URL are masked)."""
    rows = list_remotes(state_of(ctx).store)
    if json_:
        write_json(plain_out, rows)
        return
    if not rows:
        _note("no remotes yet: gitsessions remote add NAME URL")
    write_records(
        plain_out,
        ([row["name"], row["url"], *(["code"] if row.get("code") else [])] for row in rows),
    )


@remote_app.command("remove")
def cmd_remote_remove(
    ctx: typer.Context, name: Annotated[str, typer.Argument(help="The remote's name.")]
) -> None:
    """Forget a remote (nothing on the remote changes)."""
    remove_remote(state_of(ctx).store, name)
    _note(f"removed remote {name}")


def cmd_push(
    ctx: typer.Context,
    args: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="[REMOTE] [ID]...",
            help="The remote (default: the only one, else origin), then the sessions.",
        ),
    ] = None,
    all_: Annotated[bool, typer.Option("--all", help="Push every session.")] = False,
    prune: Annotated[
        bool,
        typer.Option("--prune", help="Delete the remote's branches of sessions deleted here."),
    ] = False,
    allow_secrets: Annotated[
        bool,
        typer.Option("--allow-secrets", help="Push even when the secret scan finds one."),
    ] = False,
    code: CodeFlag = None,
    code_remote: CodeRemote = "origin",
    here: Here = False,
    json_: JsonFlag = False,
) -> None:
    """Push session branches to a remote. Never forced: a session changed on the remote
    is reported (run pull) and the others still go. Archived sessions go too. Needs
    git 2.29 or newer."""
    store = state_of(ctx).store
    words = list(args or [])
    remote = None
    if words and words[0] in {r["name"] for r in list_remotes(store)}:
        remote = words.pop(0)
    elif words and not is_id_prefix(words[0]):
        pick_remote(store, words[0])  # names the remotes there are
    if sum((bool(words), all_, here)) > 1:
        raise BadUsage("name sessions, or use --all or --here: one of them")
    if not words and not all_ and not prune and not here:
        raise BadUsage("say which sessions to push: ID ..., --here or --all")
    ids = _here_ids(store) if here else None if all_ else words
    report = push(
        store,
        remote,
        ids,
        prune=prune,
        allow_secrets=allow_secrets,
        progress=_progress,
        env=state_of(ctx).env,
    )
    env = state_of(ctx).env
    if code_goes_with(store, report.remote, code):
        push_snapshots(store, report, code_remote, env, Path.cwd(), allow_secrets)
    _show(report, json_, "pushed", code_remote, _strict(code, env))
    if report.remaining_deleted:
        _note(
            f"{plural(report.remaining_deleted, 'session')} deleted here still "
            f"{'has' if report.remaining_deleted == 1 else 'have'} a copy on "
            f"{one_line(report.remote)} (push --prune deletes them)"
        )
    if any(o.result in NOT_SENT for o in report.sessions):
        raise typer.Exit(1)  # like git: some branch did not go


def cmd_pull(
    ctx: typer.Context,
    remote: Annotated[
        str | None, typer.Argument(help="The remote (default: the only one, else origin).")
    ] = None,
    code: CodeFlag = None,
    code_remote: CodeRemote = "origin",
    here: Here = False,
    json_: JsonFlag = False,
) -> None:
    """Fetch the remote's sessions: new ones are created, ones the remote moved ahead
    fast-forward, and when both sides changed our line becomes a fork (pushed next) and
    the session takes the remote's (nothing is lost; every machine converges). A
    session deleted here, or on a machine that pushed its deletes, is never re-created,
    and one deleted there is deleted here too: set aside (`gitsessions undelete` brings
    it back), or, when it has turns the remote never had, forked to a new session
    first. With code (--code, or the remote's setting), every session of this project
    whose snapshots this clone lacks gets them, pulled now or before. Needs git 2.29 or
    newer."""
    st = state_of(ctx)
    store = st.store
    keys = _here_keys(st.env) if here else None
    scope = set(_project_ids(store)) if here else None
    report = pull(
        store, remote, progress=_progress, env=st.env, writable=lambda: st.store, keys=keys,
        scope=scope,
    )  # fmt: skip
    _run_hooks(st, report)
    if code_goes_with(store, report.remote, code):
        lacking = _project_ids(store) if scope is None else scope
        fetch_snapshots(store, report, code_remote, st.env, Path.cwd(), lacking)
    _show(report, json_, "pulled", code_remote, _strict(code, st.env))


def _run_hooks(st: "state.State", report: Report) -> None:
    """The lifecycle hooks a pull calls for, once it is done: post-fork for each fork it
    made, post-delete for each session a remote's tombstone deleted here; a problem
    several runs share is said once, with their count."""
    calls = [call for outcome in report.sessions for call in outcome.hooks]
    if not calls:
        return
    hooks = st.hooks
    said: dict[str, int] = {}  # a hook's problem as it is told, and for how many sessions

    def tally(line: str) -> None:
        said[line] = said.get(line, 0) + 1

    quiet = replace(hooks, report=tally)
    for event, session, commit, details in calls:
        quiet.run(event, session, commit, **details)
    for line, count in said.items():  # a cause they share (a hook that cannot start): once
        hooks.report(line if count == 1 else f"{line} (the same for {plural(count, 'session')})")


def cmd_sync(
    ctx: typer.Context,
    remote: Annotated[
        str | None, typer.Argument(help="The remote (default: the only one, else origin).")
    ] = None,
    code: CodeFlag = None,
    code_remote: CodeRemote = "origin",
    here: Here = False,
    json_: JsonFlag = False,
) -> None:
    """Pull, then push every session (or this project's, --here), with their code when
    asked (--code, or the remote's setting): one line says what moved, and names the
    new id of this machine's work when a session diverged. Asks nothing and never
    forces, so it is safe from cron or the post-turn hook; exit 1 when a session could
    not go (changed on the remote meanwhile: sync again)."""
    st = state_of(ctx)
    store = st.store
    keys = _here_keys(st.env) if here else None
    scope = set(_project_ids(store)) if here else None
    pulled = pull(store, remote, env=st.env, writable=lambda: st.store, keys=keys, scope=scope)
    _run_hooks(st, pulled)
    with_code = code_goes_with(store, pulled.remote, code)
    if with_code:
        lacking = _project_ids(store) if scope is None else scope
        fetch_snapshots(store, pulled, code_remote, st.env, Path.cwd(), lacking)
        make_worktrees(store, pulled, st.env)
    ids = _here_ids(store) if here else None
    pushed = push(store, pulled.remote, ids, env=st.env)
    if with_code:
        push_snapshots(store, pushed, code_remote, st.env, Path.cwd())
    strict = _strict(code, st.env)
    note = _error_only if json_ else _note
    failed = False
    if json_:
        write_json(plain_out, {"pull": pulled.as_dict(), "push": pushed.as_dict()})
    else:
        for sid, why in pulled.kept:
            _note(f"kept {short(sid)}: {why}")
        for line in (ignored_line(pulled), deferred_line(pulled)):  # the push's: the same
            if line is not None:
                _note(f"warning: {line}")
    for report in (pulled, pushed):
        failed = show_code(report, code_remote, note, strict=strict, each=False) or failed
    if not json_:
        show_worktrees(pulled, _note)
        quiet = {"up to date", "unchanged", "deleted here"}  # nothing moved for these

        def moved(report: Report) -> str:
            counts = {w: n for w, n in report.counts().items() if w not in quiet}
            return ", ".join(f"{n} {w}" for w, n in sorted(counts.items())) or "nothing"

        _note(
            f"synced {pulled.url}: pulled {moved(pulled)}; pushed {moved(pushed)}"
            f"{code_moved((pulled, pushed))}{whose(pulled.sessions)}"
        )
    if failed or any(o.result in NOT_SENT for o in pushed.sessions):
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.add_typer(remote_app, name="remote")
    app.command("push")(cmd_push)
    app.command("pull")(cmd_pull)
    app.command("sync")(cmd_sync)
