"""What `push`, `pull` and `sync` say about code: whether code goes (`--code`,
`--no-code`, else the remote's setting), and each session's snapshots as lines.

Invariants:
- A cause several sessions share is said once. A project repository without the code
  remote fails the run (exit 1) only when it is the one `--code` was asked in (the
  current directory's); any other (another project, or code a remote's setting carried)
  is one note line for them all, and the run goes on.
- Code git refused (a remote that is down, a ref moved differently there) fails the run.
"""

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from gitsessions.services.sync.report import Outcome, Report
from gitsessions.values.ids import short
from gitsessions.values.plural import plural

if TYPE_CHECKING:
    from gitsessions.store.sessions import SessionStore

Note = Callable[[str, str], None]  # a line on stderr, and its style on a terminal

CodeFlag = Annotated[
    bool | None,
    typer.Option(
        "--code/--no-code",
        help="Also move each session's code snapshots (refs/gitsessions/snapshots/<id> of "
        "its project repository); default: the remote's setting (remote add --code).",
        show_default=False,
    ),
]
MOVED = ("pushed", "fetched", "kept", "up to date")


def here_root(env: Mapping[str, str]) -> str | None:
    """The repository root of the current directory, as the code outcomes name it."""
    from gitsessions.services.code.workspace import repo_root

    root = repo_root(Path.cwd(), env)
    return str(root) if root is not None else None


def show_code(
    report: Report, code_remote: str, note: Note, *, strict: str | None, each: bool = True
) -> bool:
    """The code lines of a report; whether the run fails. `strict`: the repository
    (`here_root`) whose missing remote is an error (None: every one is a note); `each`:
    one line per session (else only what did not move)."""
    # the code sync: over 2 ms, only when code moves
    from gitsessions.services.code.code_sync import NO_REMOTE

    outcomes = report.code or []
    without = [c for c in outcomes if c.result == NO_REMOTE]
    failed = any(c.detail == strict for c in without)
    if failed:
        note(
            f"error: --code needs the remote {code_remote} in the project repository "
            f"{strict}: add it there with `git remote add {code_remote} URL`, or name the "
            "project's remote with --code-remote NAME",
            "red",
        )
    elsewhere = list(dict.fromkeys(c.detail for c in without if c.detail != strict))
    if elsewhere:
        count = sum(c.detail != strict for c in without)
        shown = ", ".join(elsewhere[:3]) + (
            f" and {len(elsewhere) - 3} more" if len(elsewhere) > 3 else ""
        )
        note(
            f"note: the code of {plural(count, 'session')} stays here: no remote "
            f"{code_remote} in {shown} (`git remote add {code_remote} URL` there sends it)",
            "",
        )
    failed = failed or any(c.result == "refused" for c in outcomes)
    shared: dict[tuple[str, str], list[str]] = {}
    for c in outcomes:
        if c.result != NO_REMOTE and (each or c.result not in MOVED):
            shared.setdefault((c.result, c.detail), []).append(c.id)
    for (result, detail), ids in shared.items():
        said = f" ({detail})" if detail else ""
        many = result in ("refused", "no repository") and len(ids) > 1
        for sid in [f"of {plural(len(ids), 'session')}"] if many else map(short, ids):
            note(f"code {sid}: {result}{said}", "")
    return failed


def make_worktrees(store: "SessionStore", report: Report, env: Mapping[str, str]) -> None:
    """After a pull with code: the worktree of each worktree fork it brought code for, or
    changed, made here when the current directory is a clone of its project (recorded
    in `report.worktrees`)."""
    from gitsessions.services.code.worktree_adopt import adopt_pulled

    ids = [o.id for o in report.sessions if o.result in ("created", "updated", "forked")]
    ids += [c.id for c in report.code or [] if c.result == "fetched"]
    made, failed = adopt_pulled(store, env, ids, Path.cwd())
    report.worktrees += [{"id": a.session, "path": str(a.path), "turn": a.turn} for a in made]
    report.worktrees += [{"id": sid, "error": why} for sid, why in failed]


def show_worktrees(report: Report, note: Note) -> None:
    """One line for each worktree a pull made here, or could not make."""
    for row in report.worktrees:
        if "error" in row:
            note(f"worktree of {short(row['id'])} not made: {row['error']}", "")
            continue
        at = f" at the code of turn {row['turn']}" if row["turn"] is not None else ""
        note(f"made the worktree of {short(row['id'])} here{at}: {row['path']}", "")


def code_moved(reports: Iterable[Report]) -> str:
    """`code: 2 fetched, 1 pushed` for a sync's line ('' when no code was asked)."""
    counts: dict[str, int] = {}
    asked = False
    for report in reports:
        asked = asked or report.code is not None
        for c in report.code or []:
            if c.result in ("pushed", "fetched", "kept"):
                counts[c.result] = counts.get(c.result, 0) + 1
    if not asked:
        return ""
    return "; code: " + (", ".join(f"{n} {w}" for w, n in sorted(counts.items())) or "nothing")


def whose(outcomes: Iterable[Outcome]) -> str:
    """`; this machine's work on 3f2a61c0 goes on as 9e8d7c6b` for each fork a pull made
    of this home's line ('' when it made none)."""
    forks = [f"{short(o.id)} goes on as {short(o.fork)}" for o in outcomes if o.fork]
    return f"; this machine's work on {', '.join(forks)}" if forks else ""
