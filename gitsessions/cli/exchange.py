"""`export` and `import`: one JSON document per session."""

import io
import itertools
import os
import shutil
import sys
import tempfile
from collections import Counter
from contextlib import ExitStack
from pathlib import Path
from typing import IO, Annotated

import typer

from gitsessions.cli.args import JsonFlag
from gitsessions.cli.import_from import run_import_from
from gitsessions.cli.plain import one_line, write_json_bytes
from gitsessions.cli.state import State, err, out
from gitsessions.services.hooks.audit import audit
from gitsessions.services.sessions.exchange import export_bytes, import_export, load_export
from gitsessions.store.regular import NotRegularFile, open_regular
from gitsessions.values.clock import now_iso
from gitsessions.values.errors import BadUsage, InvalidInput


def cmd_export(
    ctx: typer.Context,
    session: Annotated[str, typer.Argument(metavar="ID", help="Session id or prefix.")],
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="Write to FILE instead of stdout.")
    ] = None,
) -> None:
    """Export a whole session as one JSON document (written as it is read)."""
    state: State = ctx.obj
    store = state.store
    head = store.head(store.resolve(session))
    redacted: Counter[str] = Counter()
    pieces = export_bytes(store, head, redacted)
    pieces = itertools.chain([next(pieces)], pieces)  # what a bad session refuses, first
    err.print("note: an export may contain source code and secrets from the session", markup=False)
    if output is None:
        for piece in pieces:
            write_json_bytes(out, piece)
    else:
        regular = not output.exists() or output.is_file()  # not a pipe or a device
        target = output.with_name(f".{output.name}.partial") if regular else output
        try:  # private: an export may hold secrets; a file is written whole or not at all
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as file:
                file.writelines(pieces)
            if regular:
                os.replace(target, output)
        except OSError as error:
            if regular:
                target.unlink(missing_ok=True)
            raise InvalidInput(f"cannot write {output}: {error.strerror}") from None
        err.print(f"exported {head.id} to {one_line(output)}", markup=False)
    audit(store.home, "export", head.id, "ok", **({"redacted": dict(redacted)} if redacted else {}))


def cmd_import(
    ctx: typer.Context,
    paths: Annotated[
        list[Path] | None,
        typer.Argument(
            metavar="FILE|PATH...",
            help="An export file ('-' for stdin); with --from, session files or folders"
            " (default: all of the source's sessions).",
            show_default=False,
        ),
    ] = None,
    new_id: Annotated[bool, typer.Option("--new-id", help="Give the session a fresh id.")] = False,
    from_: Annotated[
        str | None,
        typer.Option(
            "--from",
            metavar="SOURCE",
            help="Import another agent's sessions: claude-code ($CLAUDE_CONFIG_DIR/projects,"
            " default ~/.claude/projects) or codex ($CODEX_HOME/sessions, default"
            " ~/.codex/sessions). Again: only what is new is added.",
        ),
    ] = None,
    json_: JsonFlag = False,
    hook: Annotated[
        bool,
        typer.Option(
            "--hook",
            help="Run as the source's hook (`hooks install --claude-code` / `--codex`):"
            " import the session its JSON names (stdin, or --payload), holding back what"
            " the agent may still be writing until the file is a minute old or the"
            " session ends; never fails it.",
        ),
    ] = False,
    payload: Annotated[str | None, typer.Option("--payload", hidden=True)] = None,
) -> None:
    """Create a session from an export file; prints its id. The file is checked whole
    before anything is written, and read as it is stored (a long session in parts).

    With --from claude-code or --from codex: each source session becomes (or, imported
    again, is brought up to date as) the session its source id names; prints one line
    per source: id, what happened (created, appended, unchanged; shortened, rewritten,
    diverged, continued: nothing written), new messages, path. A file is imported whole
    (a call the source never answered gets a stub result) unless its last line is
    still being written; a file of the other source's format is refused."""
    state: State = ctx.obj
    if from_ is not None:
        _import_from(state, from_, paths or [], json_, new_id=new_id, hook=hook, payload=payload)
        return
    if json_:
        raise BadUsage("--json is for --from imports")
    if not paths or len(paths) != 1:
        raise BadUsage("import takes one export FILE (or --from SOURCE [PATH ...])")
    out.print(_import_file(state, paths[0], new_id))


def _import_from(
    state: State,
    source: str,
    paths: list[Path],
    json_: bool,
    *,
    new_id: bool,
    hook: bool,
    payload: str | None,
) -> None:
    """`import --from SOURCE`: the source's session files, or (`--hook`) the one session
    its hook's payload names; exits 1 when a source was refused or failed."""

    if new_id:
        raise BadUsage("--new-id is for export files; an imported source keeps its id")
    if hook:
        from gitsessions.cli.import_from import run_hook

        run_hook(state, source, payload if payload is not None else sys.stdin.read())
        return
    code = run_import_from(state, source, paths, json_)
    if code:
        raise typer.Exit(code)


def _import_file(state: State, file: Path, new_id: bool) -> str:
    """The id of the session made from the export `file` ('-': stdin, spooled to a
    private copy since it is read twice: checked whole, then stored)."""
    with ExitStack() as stack:
        path = file
        if str(file) == "-":  # read twice (checked, then stored): keep a private copy
            spool = stack.enter_context(tempfile.NamedTemporaryFile(prefix="gitsessions-import-"))
            shutil.copyfileobj(sys.stdin.buffer, spool)
            spool.flush()
            path = Path(spool.name)

        def open_text() -> IO[str]:
            # a FIFO, device or socket: one line, never waited on (stdin is `-`)
            return io.TextIOWrapper(open_regular(path), encoding="utf-8")

        try:
            export = load_export(open_text)
        except NotRegularFile as error:
            raise InvalidInput(f"{error}; to import from a pipe, give - as FILE") from None
        except InvalidInput as error:
            raise InvalidInput(f"{file}: {error}") from None
        except OSError as error:
            raise InvalidInput(f"cannot read {file}: {error.strerror}") from None
        store = state.store
        head = import_export(store, export, fresh_id=new_id, now=now_iso())
    return head.id


def register(app: typer.Typer) -> None:
    app.command("export")(cmd_export)
    app.command("import")(cmd_import)
