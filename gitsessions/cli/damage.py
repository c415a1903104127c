"""What a listing (`list`, `search`, the picker, `--continue`) says of the session refs
it could not read: one warning line each on stderr, and the listing goes on with the
others (exit 0), as `git for-each-ref` does with a broken ref.

Invariants: each damaged ref is named once per listing; the name (a file name: any
bytes) is shown through `one_line`, visible-safe; a command that names the damaged
session itself still fails with its one-line error (the store raises it).
"""

from collections.abc import Iterable

from gitsessions.cli.plain import one_line, vtext
from gitsessions.store.refs import DamagedRef


def warning(damage: "DamagedRef") -> str:
    """`warning: session ref refs/heads/sessions/<id> is damaged (why); run ...`."""
    name = damage.name
    what = f"session ref {name}" if name.startswith("refs/") else f"store.git/{name}"
    return f"warning: {one_line(what)} is damaged ({damage.why}); run `gitsessions doctor`"


def warn_damaged(damaged: Iterable["DamagedRef"]) -> None:
    """Each damaged ref's warning on stderr, once."""
    # `err` is made (a console) on first use
    from gitsessions.cli.state import err

    said: set[str] = set()
    for damage in damaged:
        line = warning(damage)
        if line not in said:
            said.add(line)
            err.print(vtext(line, style="yellow"), highlight=False)
