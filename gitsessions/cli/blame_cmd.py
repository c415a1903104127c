"""`gitsessions blame FILE [--at REV] [--json | --format agent-trace]`: for each line of
a project's file, the session and turn that last wrote it (services/code/blame.py), or a
person; and `gitsessions trace [REV]`, the Agent Trace record of the lines a commit
changed (services/code/trace.py).

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
from gitsessions.cli.render import print_json
from gitsessions.cli.state import err, out, plain_out
from gitsessions.services.code import trace
from gitsessions.services.code.blame import (
    Blame,
    Line,
    blame,
    blame_files,
    blob_at,
    cache_dir,
    changed_lines,
    commit_of,
    file_text,
    head_commit,
    relative,
)
from gitsessions.services.code.session_turns import last_turns
from gitsessions.services.code.snapshots import find_project
from gitsessions.values.errors import BadUsage, InvalidInput
from gitsessions.values.ids import short
from gitsessions.values.line_range import lines_of, parse_range, split_file
from gitsessions.values.plural import plural

PERSON = "a person"


def cmd_blame(
    ctx: typer.Context,
    file: Annotated[
        str, typer.Argument(metavar="FILE[:LINE]", help="A file of the project (:LINE: one line).")
    ],
    lines: Annotated[
        str | None,
        typer.Option(
            "-L",
            metavar="A,B",
            help="Only lines A to B, as git blame -L: A,B  A,+N  A,-N  A (to the end)  ,B.",
        ),
    ] = None,
    at: Annotated[
        str | None,
        typer.Option("--at", metavar="REV", help="Blame the file as it is at this git revision."),
    ] = None,
    json_: JsonFlag = False,
    format_: Annotated[
        str | None,
        typer.Option(
            "--format",
            metavar="FORMAT",
            help="agent-trace: print one Agent Trace record (agent-trace.dev) of the file.",
        ),
    ] = None,
    no_pager: Annotated[
        bool, typer.Option("--no-pager", help="Do not page the output on a terminal.")
    ] = False,
) -> None:
    """Which session and turn last wrote each line of FILE (as it is in the working tree,
    or at --at REV), from the code snapshots of this project's sessions; a line no turn
    wrote is a person's. FILE:LINE or -L A,B: only those lines, as git blame -L. --json:
    one object per line with the fields line, text, session, turn and commit (the code
    snapshot the line was written in)."""
    if format_ not in (None, "agent-trace"):
        raise InvalidInput(f"unknown --format {format_!r}: the one format is agent-trace")
    name, chosen = split_file(file, lambda whole: Path(whole).expanduser().exists())
    if lines is not None:
        if chosen is not None:
            raise BadUsage(f"{file}: give FILE:LINE or -L, not both")
        chosen = parse_range(lines)
    if chosen is not None and format_:
        raise BadUsage("--format agent-trace records the whole file: leave out :LINE and -L")
    state = state_of(ctx)
    where = Path(name).expanduser().absolute()
    project = find_project(where.parent if not where.is_dir() else where, state.env)
    if project is None:
        raise InvalidInput(f"{name} is not in a git working tree: nothing to blame")
    if where.is_dir():
        raise InvalidInput(f"{name} is a directory: blame takes a file")
    path = relative(project, where)
    text, before = file_text(project, state.env, path, at)
    cache = cache_dir(state.home, project)
    found = blame(project, state.env, path, text, before, cache, last_turn=last_turns(state.reader))
    every = state.catalog().headers()  # read once: the titles and the unseen note
    headers = {h["id"]: h for h in every if h["id"] in found.sessions}
    _say_unseen(every, found, project.root)
    if format_ == "agent-trace":
        revision = commit_of(project, state.env, at)[0] if at else head_commit(project, state.env)
        files = [trace.file_entry(found, _models(headers))]
        print_json(out, trace.record(files, revision, _version(), datetime.now(UTC)))
        return
    numbers = lines_of(chosen, len(found.lines), path) if chosen else None
    shown = [found.lines[n - 1] for n in numbers] if numbers else found.lines
    with paged(state.env, enabled=not (no_pager or json_)) as sink:
        for line in shown:
            if json_:
                sink.json(json.dumps(_record(line), ensure_ascii=False))
                sink.line()
            elif piped(plain_out):
                sink.line("\t".join(_cells(line, headers)))  # each cell one_line already
            else:
                sink.line(_row(line, headers, len(found.lines)), one_line=True)


def cmd_trace(
    ctx: typer.Context,
    rev: Annotated[str, typer.Argument(metavar="REV", help="The commit [default: HEAD].")] = "HEAD",
    project_dir: Annotated[
        Path | None,
        typer.Option("--project", help="The project (default: the current directory)."),
    ] = None,
) -> None:
    """Print the Agent Trace record (agent-trace.dev) of the lines commit REV added or
    changed that a session's turn wrote: one conversation per turn, its url
    gitsessions:ID@turn:N. For a commit hook or CI to keep beside the code."""
    state = state_of(ctx)
    where = (project_dir or Path.cwd()).expanduser().absolute()
    project = find_project(where, state.env)
    if project is None:
        raise InvalidInput(f"{where} is not in a git working tree: nothing to trace")
    commit, stamp = commit_of(project, state.env, rev)
    changed = changed_lines(project, state.env, commit)
    texts = {}
    for path in changed:
        text = blob_at(project, state.env, commit, path)
        if b"\0" not in text[:8000]:
            texts[path] = text
    cache = cache_dir(state.home, project)
    found = blame_files(project, state.env, texts, stamp, cache, last_turn=last_turns(state.reader))
    sessions = set().union(*(b.sessions for b in found.values())) if found else set()
    headers = {h["id"]: h for h in state.catalog().headers() if h["id"] in sessions}
    files = [trace.file_entry(b, _models(headers), changed[p]) for p, b in found.items()]
    files = [f for f in files if f["conversations"]]
    print_json(out, trace.record(files, commit, _version(), datetime.now(UTC)))


def _version() -> str:
    """gitsessions' version, for a record's `tool` (importlib.metadata costs a plain
    blame 100 ms: imported only for a record)."""
    from importlib.metadata import version

    return version("gitsessions")


def _models(headers: dict[str, dict[str, Any]]) -> dict[str, str | None]:
    """Each session's model: the one its last turn used, else its header's."""
    return {sid: h.get("model") for sid, h in headers.items()}


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


def _say_unseen(headers: list[dict[str, Any]], found: Blame, root: Path) -> None:
    """Once: the sessions of this project (of every session's `headers`) whose snapshots
    are not here (pruned, off, or taken in another clone): what they wrote shows as a
    person's."""
    rows = listing.rows_of(headers, include_archived=True, workspace=root)
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
    app.command("trace")(cmd_trace)
