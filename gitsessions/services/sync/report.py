"""What a sync did: one `Outcome` a session, gathered in a `Report` (what the CLI shows
and `--json` writes), and the words both sides of a sync share.

Invariant: plain data (plain classes: `dataclasses` costs a pull's start-up 5 ms); a
URL in it is only ever the masked one. A push's `NOT_SENT` results make its exit code 1;
`SWAPPED` marks a pull's fork whose session took the remote's line.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gitsessions.services.code.code_sync import CodeOutcome

ZERO = b"0" * 40
SWAPPED = "diverged: this home's line"  # a pull's fork: the branch took the remote's line
NOT_SENT = ("diverged", "behind", "refused", "deleted there")  # push results: exit code 1
Progress = Callable[[str], None]


# a lifecycle hook a pull calls for: its event, session, commit and details
HookCall = tuple[str, str, str, dict[str, Any]]


class Outcome:
    """What a sync did to one session (a plain class: `dataclasses` costs a pull's
    start-up 5 ms)."""

    __slots__ = ("detail", "fork", "hooks", "id", "result")

    def __init__(
        self,
        id: str,
        result: str,
        detail: str = "",
        fork: str | None = None,
        hooks: list[HookCall] | None = None,
    ) -> None:
        self.id = id
        # push: new, updated, up to date, diverged, behind, deleted there, pruned, refused;
        # pull: created, updated, unchanged, forked, busy, deleted (by the remote's
        # tombstone), deleted here (not created), refused
        self.result = result
        self.detail = detail
        self.fork = fork
        # the lifecycle hooks it calls for (a pull's forks and deletes), which the caller
        # runs once the pull is done
        self.hooks = hooks or []

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Outcome):
            return NotImplemented
        return self.as_dict() == other.as_dict()

    def __repr__(self) -> str:
        return f"Outcome({self.id!r}, {self.result!r}, {self.detail!r}, {self.fork!r})"

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "result": self.result}
        if self.detail:
            out["detail"] = self.detail
        if self.fork:
            out["fork"] = self.fork
        return out


class Report:
    """What a sync did (a plain class, as `Outcome`)."""

    def __init__(self, remote: str, url: str) -> None:
        self.remote = remote
        self.url = url  # masked
        self.sessions: list[Outcome] = []
        self.remaining_deleted = 0  # push: remote copies of sessions deleted here
        self.tombstones = 0  # deleted ids known after the sync
        self.kept: list[tuple[str, str]] = []  # (id, why): lost here, deleted on the remote
        self.code: list[CodeOutcome] | None = None  # with --code: each session's snapshots

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
            "kept": [{"id": sid, "detail": why} for sid, why in self.kept],
            "sessions": [o.as_dict() for o in self.sessions],
            **({"code": [c.as_dict() for c in self.code]} if self.code is not None else {}),
        }


def quiet(_line: str) -> None:
    pass
