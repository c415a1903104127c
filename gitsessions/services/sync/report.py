"""What a sync did: one `Outcome` a session, gathered in a `Report` (what the CLI shows
and `--json` writes), and the words both sides of a sync share.

Invariant: plain data; a URL in it is only ever the masked one. A push's `NOT_SENT`
results make its exit code 1; `SWAPPED` marks a pull's fork whose session took the remote's line.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gitsessions.store.refnames import shown
from gitsessions.values.plural import plural

if TYPE_CHECKING:
    from gitsessions.services.code.code_sync import CodeOutcome

ZERO = b"0" * 40
SWAPPED = "diverged: this home's line"  # a pull's fork: the branch took the remote's line
NOT_SENT = ("diverged", "behind", "refused", "deleted there")  # push results: exit code 1
Progress = Callable[[str], None]


# a lifecycle hook a pull calls for: its event, session, commit and details
HookCall = tuple[str, str, str, dict[str, Any]]


@dataclass
class Outcome:
    """What a sync did to one session."""

    id: str
    # push: new, updated, up to date, diverged, behind, deleted there, pruned, refused;
    # pull: created, updated, unchanged, forked, busy, deleted (by the remote's
    # tombstone), deleted here (not created), refused
    result: str
    detail: str = ""
    fork: str | None = None
    # the lifecycle hooks it calls for (a pull's forks and deletes), which the caller
    # runs once the pull is done
    hooks: list[HookCall] = field(default_factory=list, compare=False, repr=False)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "result": self.result}
        if self.detail:
            out["detail"] = self.detail
        if self.fork:
            out["fork"] = self.fork
        return out


@dataclass
class Report:
    """What a sync did."""

    remote: str
    url: str  # masked
    sessions: list[Outcome] = field(default_factory=list)
    remaining_deleted: int = 0  # push: remote copies of sessions deleted here
    tombstones: int = 0  # deleted ids known after the sync
    tombstones_deferred: int = 0  # pull: the remote's new deleted ids left for the next
    kept: list[tuple[str, str]] = field(default_factory=list)  # (id, why): deleted there
    code: list[CodeOutcome] | None = None  # with --code: each session's snapshots
    # a pull with code: the worktrees of pulled worktree forks made here, and why others
    # were not ({"id", "path", "turn"} or {"id", "error"})
    worktrees: list[dict[str, Any]] = field(default_factory=list)
    # ref names the remote lists that break git's rules or are not of the store's
    # layout (`refnames.sort_listing`): ignored
    ignored: set[bytes] = field(default_factory=set)

    def ignored_refs(self) -> list[str]:
        """The ignored names, sorted, each quoted and escaped (`refnames.shown`)."""
        return [shown(name) for name in sorted(self.ignored)]

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for outcome in self.sessions:
            out[outcome.result] = out.get(outcome.result, 0) + 1
        return out

    def as_dict(self) -> dict[str, Any]:
        return {
            "remote": self.remote,
            "url": self.url,
            "summary": self.counts(),
            "remaining_deleted": self.remaining_deleted,
            "tombstones": self.tombstones,
            "tombstones_deferred": self.tombstones_deferred,
            "kept": [{"id": sid, "detail": why} for sid, why in self.kept],
            "sessions": [o.as_dict() for o in self.sessions],
            "ignored_refs": self.ignored_refs(),
            **({"code": [c.as_dict() for c in self.code]} if self.code is not None else {}),
            **({"worktrees": self.worktrees} if self.worktrees else {}),
        }


def ignored_line(report: Report, shown: int = 3) -> str | None:
    """The one line that says which ref names the remote lists were ignored."""
    names = report.ignored_refs()
    if not names:
        return None
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return (
        f"{report.remote} lists {plural(len(names), 'ref name')} that break git's rules or "
        f"are not gitsessions' (ignored): {', '.join(names[:shown])}{more}"
    )


def deferred_line(report: Report) -> str | None:
    """The one line that says how many of the remote's deleted ids a pull left."""
    if not report.tombstones_deferred:
        return None
    return (
        f"{report.remote} lists {report.tombstones_deferred:,} more deleted ids of sessions "
        "never here than one pull records; the next pull records more (each counts as "
        "deleted already)"
    )


def quiet(_line: str) -> None:
    pass
