"""Revisions: the text that names one state of a session, parsed (pure; no store).

Forms, each optionally followed by `~N` (N commits back along the first-parent history,
`~` alone is `~1`, several add up):
- `ID`: the session's head (`ID` is a full id or a unique prefix of 4+ hex);
- `ID@turn:N`: the last commit of turn N (N >= 1) in the session's history;
- `ID@<commit>`: a commit of the session's history, named by 4 to 40 hex characters.
Anything else is `BadRevision`: one line, exit code 2. Finding the commit is
`services/sessions/revisions.py`'s job.
"""

import re
from dataclasses import dataclass

from gitsessions.values.errors import BadUsage
from gitsessions.values.ids import check_prefix

_BACK = re.compile(r"~(\d*)$")
_TURN = re.compile(r"turn:(\d{1,9})")
_COMMIT = re.compile(r"[0-9a-f]{4,40}")
MAX_SHOWN = 60


class BadRevision(BadUsage):
    """A revision that cannot be parsed, or names nothing in its session (exit 2)."""


@dataclass(frozen=True)
class Revision:
    text: str
    session: str  # an id or a checked prefix
    turn: int | None = None
    commit: str | None = None  # lowercase hex, 4 to 40 characters
    back: int = 0

    @property
    def is_head(self) -> bool:
        return self.turn is None and self.commit is None and self.back == 0


def shown(text: str) -> str:
    """`text` quoted for an error message, cut when long."""
    return repr(text if len(text) <= MAX_SHOWN else text[:MAX_SHOWN] + "...")


def parse_revision(text: str) -> Revision:
    """Parse `ID`, `ID@turn:N`, `ID@<commit>`, with optional `~N` suffixes."""
    rest = text.strip()
    if not rest:
        raise BadRevision("empty revision: expected ID, ID@turn:N, ID@<commit> or ID~N")
    back = 0
    while (match := _BACK.search(rest)) is not None:
        back += int(match.group(1) or "1")
        rest = rest[: match.start()]
    if "~" in rest:
        raise BadRevision(f"bad revision {shown(text)}: ~ takes a number of commits (ID~2)")
    session, at, where = rest.partition("@")
    if not session:
        raise BadRevision(f"bad revision {shown(text)}: it names no session (ID@turn:N)")
    try:
        prefix = check_prefix(session)
    except BadUsage as error:
        raise BadRevision(f"bad revision {shown(text)}: {error}") from None
    if not at:
        return Revision(text, prefix, back=back)
    lowered = where.strip().lower()
    if (turn := _TURN.fullmatch(lowered)) is not None:
        number = int(turn.group(1))
        if number < 1:
            raise BadRevision(f"bad revision {shown(text)}: turns are numbered from 1")
        return Revision(text, prefix, turn=number, back=back)
    if _COMMIT.fullmatch(lowered):
        return Revision(text, prefix, commit=lowered, back=back)
    raise BadRevision(
        f"bad revision {shown(text)}: after @ comes turn:N or a commit (4 to 40 hex characters)"
    )
