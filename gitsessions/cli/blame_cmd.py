"""`gitsessions blame FILE [--at REV] [--json]`: for each line of a project's file, the
session and turn that last wrote it (services/code/blame.py), or a person.

On a terminal one row per line as `git blame` prints it, through the pager; into a pipe
tab-separated fields; `--json` one object per line. Every stored string (a title) is
shown through `one_line` or a `Sink`, so it reaches the terminal visible-safe.
"""

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer

from gitsessions.cli import listing
from gitsessions.cli.args import JsonFlag, state_of
from gitsessions.cli.pager import paged
from gitsessions.cli.plain import one_line, piped
from gitsessions.cli.state import err, plain_out
from gitsessions.services.code.blame import Blame, Line, blame, file_text, relative
from gitsessions.services.code.snapshots import find_project
from gitsessions.values.errors import InvalidInput
from gitsessions.values.ids import short
from gitsessions.values.plural import plural

PERSON = "a person"


def cmd_blame(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(metavar="FILE", help="A file of the project.")],
    at: Annotated[
        str | None,
        typer.Option("--at", metavar="REV", help="Blame the file as it is at this git revision."),
    ] = None,
    json_: JsonFlag = False,
    no_pager: Annotated[
        bool, typer.Option("--no-pager", help="Do not page the output on a terminal.")
    ] = False,
) -> None:
    """Which session and turn last wrote each line of FILE (as it is in the working tree,
    or at --at REV), from the code snapshots of this project's sessions; a line no turn
    wrote is a person's. --json: one object per line with the fields line, text, session,
    turn and commit (the code snapshot the line was written in)."""
    state = state_of(ctx)
    where = file.expanduser().absolute()
    project = find_project(where.parent if not where.is_dir() else where, state.env)
    if project is None:
        raise InvalidInput(f"{file} is not in a git working tree: nothing to blame")
    if where.is_dir():
        raise InvalidInput(f"{file} is a directory: blame takes a file")
    path = relative(project, where)
    text, before = file_text(project, state.env, path, at)
    found = blame(project, state.env, path, text, before)
    headers = {h["id"]: h for h in state.catalog().headers() if h["id"] in found.sessions}
    _say_unseen(state, found, project.root)
    with paged(state.env, enabled=not (no_pager or json_)) as sink:
        for line in found.lines:
            if json_:
                sink.json(json.dumps(_record(line), ensure_ascii=False))
                sink.file.write("\n")
            elif piped(plain_out):
                sink.file.write("\t".join(_cells(line, headers)) + "\n")  # each one_line
            else:
                sink.line(_row(line, headers, len(found.lines)), one_line=True)


def _record(line: Line) -> dict[str, Any]:
    by = line.by
    return {
        "line": line.number,
        "text": line.text,
        "session": by.session if by else None,
        "turn": by.turn if by else None,
        "commit": by.commit if by else None,
    }


def _title(header: dict[str, Any] | None) -> str:
    if header is None:
        return "(session not in this home)"
    return one_line(listing.label(listing.list_row(header)))


def _when(stamp: int) -> str:
    return datetime.fromtimestamp(stamp, UTC).strftime("%Y-%m-%d %H:%M")


def _cells(line: Line, headers: dict[str, dict[str, Any]]) -> list[str]:
    """session, turn, time, title, line number, text (a person's: empty session)."""
    by = line.by
    if by is None:
        return ["", "", "", PERSON, str(line.number), one_line(line.text)]
    title = _title(headers.get(by.session))
    return [by.session, str(by.turn), _when(by.time), title, str(line.number), one_line(line.text)]


def _row(line: Line, headers: dict[str, dict[str, Any]], total: int) -> str:
    """`id8 tN date title  N) text`, as `git blame` lays a row out."""
    width = len(str(total))
    by = line.by
    if by is None:
        who = f"{'-' * 8} {'':>5} {'':16} {PERSON:24.24}"
    else:
        title = _title(headers.get(by.session))
        who = f"{short(by.session)} {'t' + str(by.turn):>5} {_when(by.time)} {title:24.24}"
    return f"{who} {line.number:>{width}}) {line.text}"


def _say_unseen(state: Any, found: Blame, root: Path) -> None:
    """Once: the sessions of this project whose snapshots are not here (pruned, off, or
    taken in another clone): what they wrote shows as a person's."""
    rows = listing.session_rows(state.catalog(), include_archived=True, workspace=root)
    unseen = [r for r in rows if r["id"] not in found.sessions and r.get("turns", 1)]
    if unseen:
        err.print(
            f"note: {plural(len(unseen), 'session')} of this project left no code "
            "snapshots here (pruned, snapshots off, or taken in another clone): "
            "lines they wrote show as a person's",
            markup=False,
            highlight=False,
        )


def register(app: typer.Typer) -> None:
    app.command("blame")(cmd_blame)
