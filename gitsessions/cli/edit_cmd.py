"""Commands that change one session: rename, archive, unarchive, delete, undelete.

Each is one operation of services/sessions/manage.py (through the writer: one commit or
none, one audit line); a delete also takes what the session left in the project
(services/code/delete.py). Stored strings are shown through `one_line`.
"""

from typing import Annotated

import typer

from gitsessions.cli import state as consoles
from gitsessions.cli.args import IdArg, JsonFlag, state_of
from gitsessions.cli.plain import one_line, write_json
from gitsessions.cli.state import plain_out
from gitsessions.services.code.delete import delete
from gitsessions.services.sessions import manage
from gitsessions.store import trash
from gitsessions.store.catalog import Catalog
from gitsessions.store.errors import StoreError
from gitsessions.store.sessions import SessionStore
from gitsessions.store.trash import SetAside
from gitsessions.values.clock import iso_of_timestamp
from gitsessions.values.ids import short
from gitsessions.values.plural import plural


def cmd_rename(
    ctx: typer.Context,
    session: IdArg,
    title: Annotated[str, typer.Argument(help="The new title (one line).")],
) -> None:
    """Set the session's title (yours; the model-written list summary is separate)."""
    store = state_of(ctx).store
    written = manage.rename(store, store.resolve(session), title)
    head = written.head
    if not written.committed:
        consoles.err.print(f"{short(head.id)} is already titled {one_line(head.header['title'])}")
        return
    consoles.err.print(f"renamed {short(head.id)}: {one_line(head.header['title'])}", markup=False)


def cmd_archive(ctx: typer.Context, session: IdArg) -> None:
    """Hide a session from `list` (and from search); it stays readable by id."""
    store = state_of(ctx).store
    written = manage.set_archived(store, store.resolve(session), True)
    state = "archived" if written.committed else "already archived"
    consoles.err.print(f"{short(written.head.id)}: {state}")


def cmd_unarchive(ctx: typer.Context, session: IdArg) -> None:
    """Bring an archived session back."""
    store = state_of(ctx).store
    written = manage.set_archived(store, store.resolve(session), False)
    state = "unarchived" if written.committed else "not archived"
    consoles.err.print(f"{short(written.head.id)}: {state}")


def cmd_delete(
    ctx: typer.Context,
    session: IdArg,
    yes: Annotated[bool, typer.Option("--yes", help="Really delete.")] = False,
) -> None:
    """Delete a session for good: its branch and every object only it used are purged."""
    store = state_of(ctx).store
    session_id = store.resolve(session)
    forks = sum(1 for h in Catalog(store).headers() if h.get("parent_id") == session_id)
    if forks:
        consoles.err.print(
            f"warning: {short(session_id)} has {plural(forks, 'fork')}; "
            f"{'it keeps' if forks == 1 else 'they keep'} working and will show "
            "`parent deleted`"
        )
    if not yes:
        consoles.err.print(
            f"refusing to delete {short(session_id)} without --yes "
            "(this cannot be undone; `gitsessions export` keeps a copy)"
        )
        raise typer.Exit(2)
    done = delete(store, session_id, hooks=state_of(ctx).hooks, env=state_of(ctx).env)
    consoles.err.print(
        f"deleted {session_id}" + (" and its code snapshots" if done.snapshots else "")
    )
    if done.worktree is not None:
        path = one_line(str(done.worktree.get("path")))
        consoles.err.print(
            f"its worktree {path} (branch {one_line(str(done.worktree.get('branch')))}) is "
            f"kept: it is your code; `git worktree remove {path}` removes it"
        )


SetAsideArg = Annotated[
    str | None,
    typer.Argument(
        metavar="[ID]",
        help="The deleted session's id or a unique prefix (4+); none: list them.",
        show_default=False,
    ),
]


def cmd_undelete(ctx: typer.Context, session: SetAsideArg = None, json_: JsonFlag = False) -> None:
    """Bring back a session a pull deleted because a remote listed it as deleted (a
    pull sets such a session aside for 30 days; `gc` drops it after that). It comes
    back as a new session, forked from the head it had: its old id stays deleted
    everywhere. Without ID: list what is set aside."""
    store = state_of(ctx).store
    if session is None:
        entries = trash.entries(store.git)
        rows = [
            {"id": e.id, "set_aside_at": iso_of_timestamp(e.when), "why": e.why,
             "title": str(_title(store, e))}
            for e in entries
        ]  # fmt: skip
        if json_:
            write_json(plain_out, rows)
            return
        if not rows:
            consoles.err.print("nothing is set aside")
        for row in rows:
            line = f"{short(row['id'])}  {row['set_aside_at']}  {row['title']}  ({row['why']})"
            consoles.out.print(one_line(line), markup=False, highlight=False)
        return
    head = manage.undelete(store, session)
    if json_:
        write_json(plain_out, {"id": head.id, "from": head.header.get("parent_id")})
        return
    consoles.err.print(
        f"undeleted {short(str(head.header.get('parent_id')))} as {head.id}", markup=False
    )


def _title(store: "SessionStore", entry: "SetAside") -> str:
    try:
        header = store.head_at(entry.id, entry.head).header
    except StoreError:
        return "(unreadable)"
    return str(header.get("title") or header.get("summary") or "(untitled)")


def register(app: typer.Typer) -> None:
    app.command("rename")(cmd_rename)
    app.command("archive")(cmd_archive)
    app.command("unarchive")(cmd_unarchive)
    app.command("delete")(cmd_delete)
    app.command("undelete")(cmd_undelete)
