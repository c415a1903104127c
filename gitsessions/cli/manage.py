"""Session management commands: list, info, show, log, rename, fork, archive, delete, gc.

Every stored string (title, summary, workspace, commit subject) is shown through
`one_line` or `print_messages`, so it reaches the terminal visible-safe.
"""

from typing import Annotated, Any

import typer
from rich.table import Table

from gitsessions.cli.render import print_json, print_messages
from gitsessions.cli.state import State, err, out
from gitsessions.cli.terminal import one_line
from gitsessions.services import manage, sessionlog
from gitsessions.store.catalog import Catalog
from gitsessions.store.sessions import Head
from gitsessions.values.ids import short
from gitsessions.values.plural import plural
from gitsessions.values.records import USAGE_TOTAL_KEYS

JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON on stdout.")]
IdArg = Annotated[str, typer.Argument(metavar="ID", help="Session id or a unique prefix (4+).")]


def _state(ctx: typer.Context) -> State:
    return ctx.obj  # type: ignore[no-any-return]


def _head(ctx: typer.Context, session: str) -> Head:
    store = _state(ctx).store
    return store.head(store.resolve(session))


def list_row(header: dict[str, Any]) -> dict[str, Any]:
    counts = header.get("counts") or {}
    return {
        "id": header["id"],
        "title": header.get("title", ""),
        "summary": header.get("summary", ""),
        "parent_id": header.get("parent_id"),
        "archived": bool(header.get("archived")),
        "messages": counts.get("messages", 0),
        "compactions": counts.get("compactions", 0),
        "created_at": header.get("created_at"),
        "updated_at": header.get("updated_at"),
        "active_at": header.get("active_at") or header.get("updated_at"),
        "workspace": (header.get("workspace") or {}).get("path"),
        **({"broken": header["broken"]} if "broken" in header else {}),
    }


def cmd_list(
    ctx: typer.Context,
    include_archived: Annotated[
        bool, typer.Option("--include-archived", help="Show archived sessions too.")
    ] = False,
    limit: Annotated[
        int | None,
        typer.Option(
            min=0,
            help="Show at most N sessions (0: all) [default: 100 in the table, all with --json].",
        ),
    ] = None,
    json_: JsonFlag = False,
) -> None:
    """List sessions, the most recently active first (a turn or a compaction; renaming or
    archiving does not move a session up)."""
    headers = Catalog(_state(ctx).store).headers()
    rows = [list_row(h) for h in headers if include_archived or not h.get("archived")]
    rows.sort(key=lambda r: (r["active_at"] or "", r["id"]), reverse=True)
    total = len(rows)
    shown = limit if limit is not None else (0 if json_ else 100)
    if shown:
        rows = rows[:shown]
    if json_:
        print_json(out, rows)
        return
    if not rows:
        err.print("no sessions yet")
        return
    table = Table(box=None, pad_edge=False)
    for column in ("id", "title", "summary", "msgs", "compact", "active", "parent", "workspace"):
        if column in ("title", "summary"):
            table.add_column(column, overflow="fold", min_width=16 if column == "title" else 8)
        elif column == "workspace":
            table.add_column(column, overflow="ellipsis", no_wrap=True, max_width=40)
        else:
            table.add_column(column, no_wrap=True)
    for r in rows:
        title = r["title"] + (" (archived)" if r["archived"] else "")
        table.add_row(
            short(r["id"]),
            one_line(title),
            one_line(r["summary"]),
            str(r["messages"]),
            str(r["compactions"]),
            one_line((r["active_at"] or "")[:16].replace("T", " ")),
            one_line(short(r["parent_id"])),
            one_line(r["workspace"] or ""),
        )
    out.print(table, markup=False, highlight=False)
    if total > len(rows):
        err.print(f"... and {total - len(rows)} more (--limit 0 shows all)")


def cmd_info(ctx: typer.Context, session: IdArg, json_: JsonFlag = False) -> None:
    """Show one session: ids, counts, usage, settings, workspace, branch and head."""
    store = _state(ctx).store
    head = _head(ctx, session)
    usage = store.read(head, "usage")
    h, counts = head.header, head.counts
    info = {
        "id": head.id,
        "title": h.get("title", ""),
        "summary": h.get("summary", ""),
        "parent_id": h.get("parent_id"),
        "fork_point": h.get("fork_point"),
        "archived": bool(h.get("archived")),
        "messages": counts.get("messages", 0),
        "context_messages": counts.get("context_messages", 0),
        "compactions": counts.get("compactions", 0),
        "usage": {k: usage.get(k, 0) for k in USAGE_TOTAL_KEYS},
        "model": h.get("model"),
        "settings": h.get("settings"),
        "workspace": h.get("workspace"),
        "created_at": h.get("created_at"),
        "updated_at": h.get("updated_at"),
        "active_at": h.get("active_at"),
        "branch": head.branch,
        "head": head.commit.decode(),
    }
    if json_:
        print_json(out, info)
        return
    table = Table(box=None, show_header=False, pad_edge=False)
    table.add_column(style="bold")
    table.add_column()
    u = info["usage"]
    ws = info["workspace"] or {}
    for key, value in [
        ("id", info["id"]),
        ("title", info["title"]),
        ("summary", info["summary"]),
        ("parent", info["parent_id"] or "-"),
        ("archived", "yes" if info["archived"] else "no"),
        (
            "messages",
            f"{info['messages']} in the transcript, "
            f"{info['context_messages']} in the working context",
        ),
        ("compactions", str(info["compactions"])),
        (
            "usage",
            f"{u['prompt_tokens']} prompt + {u['completion_tokens']} completion tokens, "
            f"{plural(u['requests'], 'request')}, ${u['cost_usd']:.4f}",
        ),
        ("model", info["model"] or "-"),
        ("settings", _settings_line(info["settings"])),
        ("workspace", " ".join(f"{k}={v}" for k, v in ws.items() if v) or "-"),
        ("created", info["created_at"]),
        ("active", info["active_at"]),
        ("updated", info["updated_at"]),
        ("branch", info["branch"]),
        ("head", info["head"]),
    ]:
        table.add_row(key, one_line(value))
    out.print(table, markup=False, highlight=False)


def _settings_line(settings: Any) -> str:
    """`gemma4 at http://localhost:11434/v1, 24,000 tokens`: what a resume reuses."""
    if not isinstance(settings, dict):
        return "-"
    budget = settings.get("max_context_tokens")
    tokens = f", {budget:,} tokens" if isinstance(budget, int) else ""
    return f"{settings.get('model')} at {settings.get('base_url')}{tokens}"


def cmd_show(
    ctx: typer.Context,
    session: IdArg,
    context: Annotated[
        bool,
        typer.Option(
            "--context", help="Show the working context (what the model sees next) instead."
        ),
    ] = False,
    json_: JsonFlag = False,
) -> None:
    """Print the full transcript (or the working context) of a session."""
    store = _state(ctx).store
    head = _head(ctx, session)
    messages = store.read(head, "context") if context else store.transcript(head)
    if json_:
        print_json(out, messages)
    else:
        print_messages(out, messages)


def cmd_log(
    ctx: typer.Context,
    session: IdArg,
    steps: Annotated[
        bool, typer.Option("--steps", help="One line per commit (every step of every turn).")
    ] = False,
    json_: JsonFlag = False,
) -> None:
    """The session's history, newest first: one line per turn (its prompt, steps and the
    tools it used) and per other event; a fork shows its parent's history too."""
    store = _state(ctx).store
    head = _head(ctx, session)
    entries = sessionlog.commits(store, head)
    if not steps:
        entries = sessionlog.turns(store, head, entries)
    if json_:
        print_json(out, entries)
        return
    table = Table(box=None, pad_edge=False)
    for column in ("commit", "time", "event", "subject", "detail"):
        table.add_column(column, no_wrap=column in ("commit", "time", "event"))
    for e in entries:
        subject = (
            e["subject"] if e["session"] == head.id else f"{e['subject']} ({short(e['session'])})"
        )
        table.add_row(
            e["commit"][:10],
            e["time"].replace("T", " "),
            one_line(e["event"]),
            one_line(subject),
            one_line(_detail(e)),
        )
    out.print(table, markup=False, highlight=False)


def _detail(entry: dict[str, Any]) -> str:
    """Tokens of a compaction; steps and tools of a turn."""
    if "tokens_before" in entry:
        return f"{entry['tokens_before']} -> {entry['tokens_after']}"
    if "tools" not in entry:
        return ""
    tools = ", ".join(
        name if count == 1 else f"{name} x{count}" for name, count in entry["tools"].items()
    )
    return plural(entry["steps"], "step") + (f": {tools}" if tools else "")


def cmd_rename(
    ctx: typer.Context,
    session: IdArg,
    title: Annotated[str, typer.Argument(help="The new title (one line).")],
) -> None:
    """Set the session's title (yours; the model-written list summary is separate)."""
    store = _state(ctx).store
    written = manage.rename(store, store.resolve(session), title)
    head = written.head
    if not written.committed:
        err.print(f"{short(head.id)} is already titled {one_line(head.header['title'])}")
        return
    err.print(f"renamed {short(head.id)}: {one_line(head.header['title'])}", markup=False)


def cmd_fork(
    ctx: typer.Context,
    session: IdArg,
    title: Annotated[str | None, typer.Option(help="Title of the fork.")] = None,
    json_: JsonFlag = False,
) -> None:
    """Fork a session: a new branch at its head; nothing is copied, nothing switched."""
    store = _state(ctx).store
    head = manage.fork(store, store.resolve(session), title)
    if json_:
        print_json(
            out,
            {
                "id": head.id,
                "parent_id": head.header["parent_id"],
                "fork_point": head.header["fork_point"],
                "branch": head.branch,
            },
        )
    else:
        out.print(head.id)


def cmd_archive(ctx: typer.Context, session: IdArg) -> None:
    """Hide a session from `list` (and from search); it stays readable by id."""
    store = _state(ctx).store
    written = manage.set_archived(store, store.resolve(session), True)
    state = "archived" if written.committed else "already archived"
    err.print(f"{short(written.head.id)}: {state}")


def cmd_unarchive(ctx: typer.Context, session: IdArg) -> None:
    """Bring an archived session back."""
    store = _state(ctx).store
    written = manage.set_archived(store, store.resolve(session), False)
    state = "unarchived" if written.committed else "not archived"
    err.print(f"{short(written.head.id)}: {state}")


def cmd_delete(
    ctx: typer.Context,
    session: IdArg,
    yes: Annotated[bool, typer.Option("--yes", help="Really delete.")] = False,
) -> None:
    """Delete a session for good: its branch and every object only it used are purged."""
    store = _state(ctx).store
    session_id = store.resolve(session)
    if not yes:
        err.print(
            f"refusing to delete {short(session_id)} without --yes "
            "(this cannot be undone; `gitsessions export` keeps a copy)"
        )
        raise typer.Exit(2)
    manage.delete(store, session_id)
    err.print(f"deleted {session_id}")


def cmd_gc(ctx: typer.Context) -> None:
    """Pack objects (deltified) and purge what no session reaches."""
    stats = manage.gc(_state(ctx).store)
    broken = [name.rsplit("/", 1)[-1] for name in stats["broken"]]  # type: ignore[attr-defined]
    if broken:
        err.print(
            f"nothing was packed or purged: {plural(len(broken), 'session')} cannot be read "
            f"whole ({', '.join(short(b) for b in broken[:5])}); run `gitsessions doctor`"
        )
        return
    err.print(
        f"packed {plural(stats['objects'], 'object')} "
        f"(from {stats['loose_before']} loose and {plural(stats['packs_before'], 'pack')})"
    )


def register(app: typer.Typer) -> None:
    app.command("list")(cmd_list)
    app.command("info")(cmd_info)
    app.command("show")(cmd_show)
    app.command("log")(cmd_log)
    app.command("rename")(cmd_rename)
    app.command("fork")(cmd_fork)
    app.command("archive")(cmd_archive)
    app.command("unarchive")(cmd_unarchive)
    app.command("delete")(cmd_delete)
    app.command("gc")(cmd_gc)
