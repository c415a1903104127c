"""`gitsessions doctor [--repair]`: what fsck cannot see, and its repair."""

from typing import Annotated

import typer

from gitsessions.cli.args import cwd_or_none
from gitsessions.cli.render import print_json
from gitsessions.cli.state import State, err, out
from gitsessions.services.code import project_care
from gitsessions.services.code.worktree_care import check_worktrees
from gitsessions.services.hooks.audit import audit
from gitsessions.services.sessions.doctor import doctor
from gitsessions.values.plural import plural


def cmd_doctor(
    ctx: typer.Context,
    repair: Annotated[
        bool,
        typer.Option(
            "--repair",
            help="Restore lost or lagging branches to the heads this home recorded for "
            "them (never to a fetched commit's trailer), remove stale locks and leases, "
            "set bad ref files and ref names git refuses aside and drop stale caches. "
            "Never deletes a commit of a session; in the projects, drops the snapshots "
            "of sessions deleted here that no remaining session names, packs a pile "
            "of loose snapshot refs, and removes the worktree and branch of a `fork "
            "--worktree` that did not finish when they hold nothing else (else it prints "
            "the git command).",
        ),
    ] = False,
    json_: Annotated[bool, typer.Option("--json", help="Print JSON on stdout.")] = False,
) -> None:
    """Check the store for lost branches, broken sessions, stale locks and caches, the
    projects the sessions worked in for snapshot refs of deleted sessions, and worktrees
    and branches of worktree forks that no session knows.

    Exits 0 when nothing is wrong (or all of it was repaired), 1 otherwise."""
    state: State = ctx.obj

    report = doctor(state.store, repair=repair)
    where = project_care.projects(state.store, state.env, cwd_or_none())
    report.findings += project_care.check(state.store, state.env, where, repair)
    report.findings += check_worktrees(state.store, state.env, where, repair)
    audit(
        state.home,
        "doctor",
        None,
        "ok" if report.healthy else "findings",
        repair=repair,
        findings=[f"{f.kind}:{f.subject}" for f in report.findings],
    )
    if json_:
        print_json(out, report.as_dict())
    else:
        for finding in report.findings:
            mark = "repaired" if finding.repaired else "found"
            out.print(f"{mark}\t{finding.kind}\t{finding.subject}\t{finding.detail}")
        unrepaired = sum(not f.repaired for f in report.findings)
        summary = (
            f"checked {plural(report.sessions, 'session')} and {plural(report.commits, 'commit')}: "
            + ("nothing wrong" if not report.findings else plural(len(report.findings), "finding"))
        )
        if unrepaired and not repair:
            summary += "; `gitsessions doctor --repair` fixes what can be fixed"
        err.print(summary)
    if not report.healthy:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("doctor")(cmd_doctor)
