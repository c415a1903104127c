"""`gc`: pack the store's objects and purge what no session reaches."""

import typer

from gitsessions.cli import state as consoles
from gitsessions.cli.args import state_of
from gitsessions.values.ids import short
from gitsessions.values.plural import plural


def cmd_gc(ctx: typer.Context) -> None:
    """Pack objects (deltified) and purge what no session reaches."""
    from gitsessions.services.sessions import manage

    stats = manage.gc(state_of(ctx).store)
    broken = [name.rsplit("/", 1)[-1] for name in stats["broken"]]  # type: ignore[attr-defined]
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


def register(app: typer.Typer) -> None:
    app.command("gc")(cmd_gc)
