"""`export` and `import`: one JSON document per session."""

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from gitsessions.cli.state import State, err, out
from gitsessions.cli.terminal import one_line, write_json_bytes
from gitsessions.services.audit import audit
from gitsessions.services.exchange import export_redacted, import_session, parse_export
from gitsessions.values.canonical import dumps
from gitsessions.values.clock import now_iso
from gitsessions.values.errors import InvalidInput


def cmd_export(
    ctx: typer.Context,
    session: Annotated[str, typer.Argument(metavar="ID", help="Session id or prefix.")],
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="Write to FILE instead of stdout.")
    ] = None,
) -> None:
    """Export a whole session as one JSON document."""
    state: State = ctx.obj
    store = state.store
    head = store.head(store.resolve(session))
    doc, redacted = export_redacted(store, head)
    data = dumps(doc)
    err.print("note: an export may contain source code and secrets from the session", markup=False)
    if output is None:
        write_json_bytes(out, data)
    else:
        try:  # private: an export may hold secrets
            fd = os.open(output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as file:
                file.write(data)
        except OSError as error:
            raise InvalidInput(f"cannot write {output}: {error.strerror}") from None
        err.print(f"exported {head.id} to {one_line(output)}", markup=False)
    audit(store.home, "export", head.id, "ok", **({"redacted": redacted} if redacted else {}))


def cmd_import(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(metavar="FILE", help="An export file ('-' for stdin).")],
    new_id: Annotated[bool, typer.Option("--new-id", help="Give the session a fresh id.")] = False,
) -> None:
    """Create a session from an export file; prints its id."""
    state: State = ctx.obj
    try:
        data = sys.stdin.buffer.read() if str(file) == "-" else file.read_bytes()
    except OSError as error:
        raise InvalidInput(f"cannot read {file}: {error.strerror}") from None
    try:
        doc = parse_export(data)
    except InvalidInput as error:
        raise InvalidInput(f"{file}: {error}") from None
    store = state.store
    head = import_session(store, doc, fresh_id=new_id, now=now_iso())
    out.print(head.id)


def register(app: typer.Typer) -> None:
    app.command("export")(cmd_export)
    app.command("import")(cmd_import)
