"""`remote add|list|remove`, `push` and `pull`: sessions synced through git remotes.

Data (the result table, `--json`) goes to stdout; progress and notes to stderr. A URL is
only ever shown masked (`services.sync` hands out nothing else).
"""

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from gitsessions.cli.render import print_json
from gitsessions.cli.state import State, err, out
from gitsessions.cli.terminal import one_line
from gitsessions.services import sync
from gitsessions.values.errors import BadUsage
from gitsessions.values.ids import short
from gitsessions.values.plural import plural


def is_id_prefix(word: str) -> bool:
    return len(word) >= 4 and all(c in "0123456789abcdef" for c in word.lower())


JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON on stdout.")]
CodeRemote = Annotated[
    str, typer.Option("--code-remote", help="The project's remote for --code snapshots.")
]
remote_app = typer.Typer(
    no_args_is_help=True,
    help="Remotes the sessions sync with (kept in store.git/config, so stock git sees them).",
)


def _state(ctx: typer.Context) -> State:
    return ctx.obj  # type: ignore[no-any-return]


def _progress(line: str) -> None:
    err.print(one_line(line), style="dim")


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
) -> None:
    """Add a remote to sync sessions with."""
    stored = sync.add_remote(_state(ctx).store, name, url, Path.cwd())
    err.print(f"added remote {one_line(name)}: {one_line(sync.remotes.mask(stored))}")


@remote_app.command("list")
def cmd_remote_list(ctx: typer.Context, json_: JsonFlag = False) -> None:
    """List the remotes (credentials in a URL are masked)."""
    rows = sync.list_remotes(_state(ctx).store)
    if json_:
        print_json(out, rows)
        return
    if not rows:
        err.print("no remotes yet: gitsessions remote add NAME URL")
    for row in rows:
        out.print(f"{one_line(row['name'])}\t{one_line(row['url'])}")


@remote_app.command("remove")
def cmd_remote_remove(
    ctx: typer.Context, name: Annotated[str, typer.Argument(help="The remote's name.")]
) -> None:
    """Forget a remote (nothing on the remote changes)."""
    sync.remove_remote(_state(ctx).store, name)
    err.print(f"removed remote {one_line(name)}")


def cmd_push(
    ctx: typer.Context,
    args: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="[REMOTE] [ID ...]",
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
    code: Annotated[
        bool,
        typer.Option(
            "--code",
            help="Also push each session's code snapshots "
            "(refs/gitsessions/snapshots/<id> of its project repository).",
        ),
    ] = False,
    code_remote: CodeRemote = "origin",
    json_: JsonFlag = False,
) -> None:
    """Push session branches to a remote. Never forced: a session changed on the remote
    is reported (run pull) and the others still go. Archived sessions go too."""
    store = _state(ctx).store
    words = list(args or [])
    remote = None
    if words and words[0] in {r["name"] for r in sync.list_remotes(store)}:
        remote = words.pop(0)
    elif words and not is_id_prefix(words[0]):
        sync.pick_remote(store, words[0])  # names the remotes there are
    if words and all_:
        raise BadUsage("name sessions or use --all, not both")
    if not words and not all_ and not prune:
        raise BadUsage("say which sessions to push: ID ... or --all")
    ids = None if all_ else words
    report = sync.push(
        store, remote, ids, prune=prune, allow_secrets=allow_secrets, progress=_progress
    )
    if code:
        sync.push_snapshots(store, report, code_remote, _state(ctx).env)
    _show(report, json_, "pushed")
    if report.remaining_deleted:
        err.print(
            f"{plural(report.remaining_deleted, 'session')} deleted here still "
            f"{'has' if report.remaining_deleted == 1 else 'have'} a copy on "
            f"{one_line(report.remote)} (push --prune deletes them)"
        )
    if any(o.result in sync.NOT_SENT for o in report.sessions):
        raise typer.Exit(1)  # like git: some branch did not go


def cmd_pull(
    ctx: typer.Context,
    remote: Annotated[
        str | None, typer.Argument(help="The remote (default: the only one, else origin).")
    ] = None,
    code: Annotated[
        bool,
        typer.Option(
            "--code",
            help="Also fetch each pulled session's code snapshots into its project repository.",
        ),
    ] = False,
    code_remote: CodeRemote = "origin",
    json_: JsonFlag = False,
) -> None:
    """Fetch the remote's sessions: new ones are created, ones the remote moved ahead
    fast-forward, and when both sides changed ours stays and the remote's line becomes a
    fork (nothing is lost). A session deleted here, or on a machine that pushed its
    deletes, is never re-created; a pull never deletes one."""
    store = _state(ctx).store
    report = sync.pull(store, remote, progress=_progress)
    if code:
        sync.fetch_snapshots(store, report, code_remote, _state(ctx).env)
    _show(report, json_, "pulled")


def _show(report: sync.Report, json_: bool, verb: str) -> None:
    if json_:
        print_json(out, report.as_dict())
        return
    quiet = {"up to date", "unchanged"}
    rows = [o for o in report.sessions if o.result not in quiet]
    if rows:
        table = Table(box=None, pad_edge=False)
        for column in ("id", "result", "detail"):
            table.add_column(column, no_wrap=column != "detail")
        for o in rows:
            detail = o.detail
            if o.fork:
                detail = f"{detail} -> forked as {short(o.fork)}"
            table.add_row(short(o.id), one_line(o.result), one_line(detail))
        out.print(table, markup=False, highlight=False)
    for c in report.code or []:
        detail = f" ({c.detail})" if c.detail else ""
        err.print(f"code {short(c.id)}: {one_line(c.result + detail)}")
    counts = report.counts()
    summary = ", ".join(f"{n} {what}" for what, n in sorted(counts.items())) or "no sessions"
    err.print(f"{verb} {one_line(report.url)}: {one_line(summary)}")


def register(app: typer.Typer) -> None:
    app.add_typer(remote_app, name="remote")
    app.command("push")(cmd_push)
    app.command("pull")(cmd_pull)
