"""`gc`: pack the store's objects and purge what no session reaches; in the projects,
drop the snapshots of sessions deleted here and pack what snapshots left loose."""

import typer

from gitsessions.cli import state as consoles
from gitsessions.cli.args import cwd_or_none, state_of
from gitsessions.services.code import project_care
from gitsessions.services.sessions import manage
from gitsessions.store.trash import KEEP_DAYS
from gitsessions.values.ids import short
from gitsessions.values.plural import plural


def cmd_gc(ctx: typer.Context) -> None:
    """Pack objects (deltified) and purge what no session reaches, after dropping the
    sessions a pull set aside more than 30 days ago (`undelete` lists them); in the
    projects the sessions worked in, drop the snapshots of sessions deleted here and
    pack the loose snapshot refs and objects."""
    state = state_of(ctx)
    stats = manage.gc(state.store)
    broken = [name.rsplit("/", 1)[-1] for name in stats["broken"]]
    if broken:
        consoles.err.print(
            f"nothing was packed or purged: {plural(len(broken), 'session')} cannot be read "
            f"whole ({', '.join(short(b) for b in broken[:5])}); run `gitsessions doctor`"
        )
        return
    consoles.err.print(
        f"packed {plural(stats['objects'], 'object')} "
        f"(from {stats['loose_before']} loose and {plural(stats['packs_before'], 'pack')})"
    )
    if stats["set_aside_dropped"]:
        consoles.err.print(
            f"dropped {plural(stats['set_aside_dropped'], 'session')} a pull set aside "
            f"more than {KEEP_DAYS} days ago"
        )
    where = project_care.projects(state.store, state.env, cwd_or_none())
    cleaned = project_care.clean(state.store, state.env, where)
    if cleaned.refs_packed:
        consoles.err.print(
            f"packed {plural(cleaned.refs_packed, 'loose code snapshot ref')} and "
            f"{plural(cleaned.objects_packed, 'object')} they reach in the projects"
        )
    if cleaned.dropped:
        consoles.err.print(
            f"dropped {plural(cleaned.dropped, 'code snapshot')} of deleted sessions "
            f"({plural(cleaned.refs_deleted, 'ref')} deleted) in "
            f"{plural(cleaned.projects, 'project')}; each project's next `git gc` frees them"
        )


def register(app: typer.Typer) -> None:
    app.command("gc")(cmd_gc)
