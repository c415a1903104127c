"""Reading commands: list, info, show, log.

Every stored string (title, summary, workspace, commit subject) is shown through
`one_line` or a `Sink` (cli/terminal.py), so it reaches the terminal visible-safe.

They import little (tests/test_startup.py): the consoles (rich) only to draw for a
terminal, the store (dulwich) only when the header cache cannot answer, no writing
service.
"""

import itertools
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from gitsessions.cli import state as consoles
from gitsessions.cli.args import JsonFlag, OptionalIdArg, session_or_latest, state_of
from gitsessions.cli.damage import warn_damaged
from gitsessions.cli.pager import paged
from gitsessions.cli.plain import one_line, piped, write_json_array, write_records
from gitsessions.cli.render import (
    instruction_tokens,
    instructions_line,
    print_json,
    stream_json_list,
    stream_messages,
)
from gitsessions.cli.session_facts import messages_text, usage_text
from gitsessions.cli.state import State, plain_out
from gitsessions.services.sessions.granted import described
from gitsessions.store.refs import StoreRefs, ref_name
from gitsessions.values.errors import BadUsage, InvalidInput
from gitsessions.values.ids import short
from gitsessions.values.records import HEADER_FORMAT, USAGE_TOTAL_KEYS, context_budget, made_by

if TYPE_CHECKING:
    from gitsessions.store.reader import Head


def _head(ctx: typer.Context, session: str) -> "Head":
    reader = state_of(ctx).reader
    return reader.head(reader.resolve(session))


def cmd_list(
    ctx: typer.Context,
    include_archived: Annotated[
        bool, typer.Option("--include-archived", help="Show archived sessions too.")
    ] = False,
    here_only: Annotated[
        bool,
        typer.Option(
            "--here",
            help="Only sessions of this project (this folder, or anywhere in its git "
            "repository), its worktree forks and their forks.",
        ),
    ] = False,
    tree: Annotated[bool, typer.Option("--tree", help="Show forks under their parent.")] = False,
    limit: Annotated[
        int | None,
        typer.Option(
            min=0,
            help="Show at most N sessions (0: all) "
            "[default: 100 in the table, all with --json or into a pipe].",
        ),
    ] = None,
    json_: JsonFlag = False,
) -> None:
    """List sessions, the most recently active first (a turn or a compaction; renaming or
    archiving does not move a session up). Into a pipe: one tab-separated line each."""
    from gitsessions.cli import listing  # the header cache (sqlite): `show` needs neither

    catalog = state_of(ctx).catalog()
    # streamed from the cache in the order shown: only the rows shown are built
    here = Path.cwd() if here_only else None
    rows: Iterable[dict[str, Any]]
    rows, count = listing.open_rows(catalog, include_archived, here)
    warn_damaged(catalog.damaged)  # the others are listed: exit 0, as git for-each-ref
    pipe = piped(plain_out)
    shown = limit if limit is not None else (0 if json_ or pipe else 100)
    if shown:
        rows = itertools.islice(rows, shown)
    ordered: Iterator[tuple[int, dict[str, Any]]]
    ordered = iter(listing.as_tree(list(rows))) if tree else ((0, r) for r in rows)
    if json_:
        write_json_array(plain_out, (r for _depth, r in ordered))
        return
    first = next(ordered, None)
    if first is None:
        consoles.err.print(
            "no sessions yet" if not here_only else "no sessions in this workspace yet"
        )
        return
    ordered = itertools.chain([first], ordered)
    if pipe:
        write_records(plain_out, (listing.record(r) for _depth, r in ordered))
        return
    table = list(ordered)
    from gitsessions.cli import list_table  # for a terminal only (rich)

    list_table.show(consoles.out, table)
    total = count() if shown and len(table) >= shown else len(table)  # counted when cut
    if total > len(table):
        consoles.err.print(f"... and {total - len(table)} more (--limit 0 shows all)")


PLACE = ("path", "repo_root", "branch", "head")


def _imported_fields(header: dict[str, Any]) -> list[tuple[str, str]]:
    """`imported from`: the source and its id, and its file, for an imported session."""
    imported = header.get("imported")
    if not isinstance(imported, dict):
        return []
    return [
        ("imported from", f"{imported.get('from')} session {imported.get('id')}"),
        ("source file", str(imported.get("path"))),
    ]  # the workspace line; `made by` says the rest


def cmd_info(ctx: typer.Context, session: OptionalIdArg = None, json_: JsonFlag = False) -> None:
    """Show one session (without ID: this project's latest): ids, counts, usage,
    settings, workspace, branch and head."""
    state = state_of(ctx)
    session_id, commit, h, usage, exists = _info_source(state, session_or_latest(state, session))
    counts = h.get("counts") or {}
    info = {
        "id": session_id,
        "title": h.get("title", ""),
        "summary": h.get("summary", ""),
        "parent_id": h.get("parent_id"),
        "parent_deleted": bool(h.get("parent_id")) and not exists(h["parent_id"]),
        "fork_point": h.get("fork_point"),
        "archived": bool(h.get("archived")),
        "messages": counts.get("messages", 0),
        "context_messages": counts.get("context_messages", 0),
        "compactions": counts.get("compactions", 0),
        "usage": {k: usage.get(k, 0) for k in USAGE_TOTAL_KEYS},
        "model": last_model(h),
        "settings": h.get("settings"),
        "context_budget": context_budget(h.get("settings")),
        "workspace": h.get("workspace"),
        "instructions": h.get("instructions") or [],
        "instructions_tokens": instruction_tokens(h.get("instructions")),
        "created_at": h.get("created_at"),
        "updated_at": h.get("updated_at"),
        "active_at": h.get("active_at"),
        "branch": ref_name(session_id).decode(),
        "head": commit.decode(),
        "approvals": described(state.home, session_id),  # what "always" allowed here
        **({"imported": h["imported"]} if isinstance(h.get("imported"), dict) else {}),
    }
    if json_:
        print_json(plain_out, info)
        return
    u = info["usage"]
    ws = info["workspace"] or {}
    parent = "-"
    if info["parent_id"]:
        parent = info["parent_id"] + (" (parent deleted)" if info["parent_deleted"] else "")
    fields = [
        ("id", info["id"]),
        ("title", info["title"]),
        ("summary", info["summary"]),
        ("parent", parent),
        ("archived", "yes" if info["archived"] else "no"),
        ("messages", messages_text(info["messages"], info["context_messages"])),
        ("compactions", f"{info['compactions']:,}"),
        ("usage", usage_text(u)),
        ("model", info["model"] or "-"),
        ("settings", _settings_line(info["settings"])),
        ("workspace", " ".join(f"{k}={v}" for k, v in ws.items() if v and k in PLACE) or "-"),
        ("made by", made_by(h) or "-"),
        ("instructions", instructions_line(info["instructions"])),
        ("approvals", ", ".join(info["approvals"]) or "-"),
        *_imported_fields(h),
        ("created", info["created_at"]),
        ("active", info["active_at"]),
        ("updated", info["updated_at"]),
        ("branch", info["branch"]),
        ("head", info["head"]),
    ]
    if piped(plain_out):
        write_records(plain_out, fields)
        return
    from rich.table import Table  # for a terminal only

    table = Table(box=None, show_header=False, pad_edge=False)
    table.add_column(style="bold")
    table.add_column()
    for key, value in fields:
        table.add_row(key, one_line(value))
    consoles.out.print(table, markup=False, highlight=False)


def last_model(header: dict[str, Any]) -> Any:
    """The model the session last ran with: its recorded settings' (written when it goes
    on with another), else the one it was made (or imported) with."""
    settings = header.get("settings")
    recorded = settings.get("model") if isinstance(settings, dict) else None
    return recorded or header.get("model")


def _info_source(
    state: State, session: str
) -> tuple[str, bytes, dict[str, Any], dict[str, Any], Callable[[str], bool]]:
    """`(id, head commit, header, usage, exists)` of a session: from the header cache
    when it holds this head in format 2 (no dulwich), else read from the store through
    dulwich, as `show` reads it."""
    refs = state.refs
    session_id = refs.resolve(session)
    if isinstance(refs, StoreRefs):
        commit = refs.head_commit(session_id)
        header = state.catalog().cached_header(session_id, commit) if commit else None
        if commit and header is not None and header.get("format") == HEADER_FORMAT:
            return session_id, commit, header, header.get("usage") or {}, refs.exists
    reader = state.reader
    head = reader.head(session_id)
    return head.id, head.commit, head.header, reader.read(head, "usage"), reader.exists


def _settings_line(settings: Any) -> str:
    """`gemma4 at http://localhost:11434/v1, 24,000 tokens`: what a resume reuses; with
    `, the server holds 4,096: the budget` when the server's context was smaller."""
    if not isinstance(settings, dict):
        return "-"
    budget = settings.get("max_context_tokens")
    tokens = f", {budget:,} tokens" if isinstance(budget, int) else ""
    held = context_budget(settings)
    if held is not None and held != budget:
        tokens += f", the server holds {held:,}: the budget"
    return f"{settings.get('model')} at {settings.get('base_url')}{tokens}"


NoPager = Annotated[bool, typer.Option("--no-pager", help="Do not page the output on a terminal.")]


def cmd_show(
    ctx: typer.Context,
    session: OptionalIdArg = None,
    commit: Annotated[
        str | None,
        typer.Option(
            metavar="SHA",
            help="Instead of ID: the session named by this commit's Gitsessions-Session "
            "trailer (run in the project).",
        ),
    ] = None,
    context: Annotated[
        bool,
        typer.Option(
            "--context", help="Show the working context (what the model sees next) instead."
        ),
    ] = False,
    compaction: Annotated[
        int | None,
        typer.Option(
            metavar="N",
            min=1,
            help="Show what compaction N took out of the working context (the messages "
            "summarised, the outputs cleared) and the summary it left, before and after.",
        ),
    ] = None,
    json_: JsonFlag = False,
    no_pager: NoPager = False,
) -> None:
    """Print the full transcript (or the working context) of a session (without ID:
    this project's latest), through $PAGER on a terminal. ID@turn:N prints that turn
    only (its prompt, tool calls and reply), as `blame` names it."""
    state = state_of(ctx)
    if compaction is not None:
        if context or commit is not None or "@turn:" in (session or ""):
            raise BadUsage(
                "--compaction N shows one compaction: not with --context, --commit or @turn:"
            )
        _show_compaction(ctx, session_or_latest(state, session), compaction, json_)
        return
    if commit is not None:
        from gitsessions.cli.hooks_cmd import session_of  # git's hooks: only for --commit

        session = session_of(state, session, commit)
    else:
        session = session_or_latest(state, session)
    session, turn = _turn_of(session)
    head = _head(ctx, session)
    reader = state.reader
    messages: Iterator[tuple[int, Any]]
    if context:
        messages = enumerate(reader.read(head, "context"))
    else:
        records = reader.iter_records(head)
        messages = ((i, r["message"]) for i, r in records if turn is None or r.get("turn") == turn)
    with paged(state.env, enabled=not (no_pager or json_)) as sink:
        if json_:
            stream_json_list(sink, (message for _i, message in messages))
        else:
            stream_messages(sink, messages)


def _show_compaction(ctx: typer.Context, session: str, number: int, json_: bool) -> None:
    """`show --compaction N`: read from the compaction's commit and its parent."""
    # dulwich and the token counter: only for this view
    from gitsessions.services.compaction.history import view

    head = _head(ctx, session)
    data = view(state_of(ctx).reader, head, number)
    if json_:
        print_json(plain_out, data)
        return
    from gitsessions.cli.compaction_view import render  # rich: for people only

    render(consoles.out, data)


def _turn_of(session: str) -> tuple[str, int | None]:
    """`ID@turn:N` (as `blame` and Agent Trace records name a turn) -> (ID, N)."""
    name, at, turn = session.partition("@turn:")
    if not at:
        return session, None
    if not turn.isdigit() or int(turn) < 1:
        raise InvalidInput(f"{session!r}: a turn is ID@turn:N, N a number from 1")
    return name, int(turn)


def cmd_log(
    ctx: typer.Context,
    session: OptionalIdArg = None,
    steps: Annotated[
        bool, typer.Option("--steps", help="One line per commit (every step of every turn).")
    ] = False,
    json_: JsonFlag = False,
    no_pager: NoPager = False,
) -> None:
    """The session's history (without ID: this project's latest session's), newest first:
    one line per turn (its prompt, steps and the tools it used) and per other event; a
    fork shows its parent's history too, a merge the fork's own line it joined (under
    it, marked |). Paged on a terminal; piped, one tab-separated
    line per record."""
    state = state_of(ctx)
    head = _head(ctx, session_or_latest(state, session))
    # dulwich: `list` does not need it
    from gitsessions.services.sessions import sessionlog

    entries = sessionlog.commits(state.reader, head)
    if not steps:
        entries = sessionlog.turns(state.reader, head, entries)
    with paged(state.env, enabled=not (no_pager or json_)) as sink:
        if json_:
            stream_json_list(sink, entries)
            return
        if piped(plain_out):  # commit, time, event, session, subject, detail
            for e in entries:
                cells = [e["commit"], e["time"], e["event"], e["session"], e["subject"]]
                sink.line("\t".join(one_line(c) for c in [*cells, sessionlog.detail(e)]))
            return
        width = max((len(e["event"]) for e in entries), default=5)
        for e in entries:
            subject = e["subject"]
            if e["session"] != head.id:
                subject = f"{subject} ({short(e['session'])})"
            if "merged_by" in e:  # a commit of the line a merge joined, under the merge
                subject = f"| {subject}"
            sink.text(e["commit"][:10], "yellow", one_line=True)
            sink.text(f"  {e['time'].replace('T', ' ')}  ", one_line=True)
            sink.text(e["event"].ljust(width), "bold", one_line=True)
            sink.text(f"  {subject}", one_line=True)
            detail = sessionlog.detail(e)
            sink.line(f"  {detail}" if detail else "", "dim", one_line=True)


def register(app: typer.Typer) -> None:
    app.command("list")(cmd_list)
    app.command("info")(cmd_info)
    app.command("show")(cmd_show)
    app.command("log")(cmd_log)
