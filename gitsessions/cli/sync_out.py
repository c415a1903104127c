"""What `push` and `pull` print, and `pull` itself, without typer: `cli/fastpull.py`
runs a plain `gitsessions pull [REMOTE]` through here without loading the typer app
(`sync_cmd.py`, the typer command, runs the same code).

Data (the result table, `--json`) goes to stdout; progress and notes to stderr. Into a
pipe both are written plain (the table as one tab-separated record per session, as
`list` writes it), so a scripted or scheduled sync never loads rich; on a terminal they
go through the consoles.
"""

from gitsessions.cli import state
from gitsessions.cli.plain import Sink, StreamOf, one_line, piped, write_json, write_records
from gitsessions.cli.state import State, plain_out
from gitsessions.services import sync
from gitsessions.values.ids import short

plain_err = StreamOf("stderr")  # where `state.err` writes, without making it


def note(line: str, style: str = "") -> None:
    """One line of data on stderr: plain into a pipe, through the console on a terminal."""
    if piped(plain_err):
        sink = Sink(plain_err.file, colour=False)
        sink.line(line, one_line=True)
        sink.flush()
    else:
        state.err.print(one_line(line), style=style)


def progress(line: str) -> None:
    note(line, "dim")


def run_pull(
    st: State, remote: str | None, *, code: bool = False, code_remote: str = "origin",
    json_: bool = False,
) -> None:  # fmt: skip
    """`pull`: see `cmd_pull` in sync_cmd.py."""
    store = st.store
    report = sync.pull(store, remote, progress=progress, env=st.env, writable=lambda: st.store)
    if code:
        sync.fetch_snapshots(store, report, code_remote, st.env)
    show(report, json_, "pulled")


def show(report: sync.Report, json_: bool, verb: str) -> None:
    if json_:
        write_json(plain_out, report.as_dict())
        return
    quiet = {"up to date", "unchanged"}
    rows = [
        [short(o.id), o.result, f"{o.detail} -> forked as {short(o.fork)}" if o.fork else o.detail]
        for o in report.sessions
        if o.result not in quiet
    ]
    if rows and piped(plain_out):
        write_records(plain_out, rows)
    elif rows:
        from rich.table import Table

        table = Table(box=None, pad_edge=False)
        for column in ("id", "result", "detail"):
            table.add_column(column, no_wrap=column != "detail")
        for row in rows:
            table.add_row(*(one_line(cell) for cell in row))
        state.out.print(table, markup=False, highlight=False)
    for sid, why in report.kept:
        note(f"kept {short(sid)}: {why}")
    for c in report.code or []:
        detail = f" ({c.detail})" if c.detail else ""
        note(f"code {short(c.id)}: {c.result + detail}")
    counts = report.counts()
    summary = ", ".join(f"{n} {what}" for what, n in sorted(counts.items())) or "no sessions"
    note(f"{verb} {report.url}: {summary}")
