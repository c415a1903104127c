"""A resumed chat before its prompt (`--resume`, `--continue`, the picker, `\\sessions`):
the session found and what the banner needs read (its own settings, a worktree fork's
worktree, an unanswered prompt) without the agent or rich.

Invariants:
- Read through `State.reader` (read-only `SessionReader`, else the full store).
- The lease is taken here, before the prompt (a held session refused then), and handed
  to `build_agent(resuming=...)`, which re-reads under it.
- The same code picks the session and says where its tools work for `exec` and the
  agent's build, so the lines are the same either way.
"""

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from gitsessions.agent.turn_history import last_kept_turn
from gitsessions.cli.damage import warn_damaged
from gitsessions.cli.plain import one_line
from gitsessions.cli.state import State
from gitsessions.services.code.worktree_mark import Checked, check, mark_of, workspace_for
from gitsessions.services.settings.config import ModelSettings, with_session_settings
from gitsessions.store.errors import SessionNotFound
from gitsessions.store.here import endpoints, remember_session, sessions_here
from gitsessions.store.lease import Lease
from gitsessions.store.reader import Head, SessionReader
from gitsessions.values.clock import now_iso
from gitsessions.values.errors import BadUsage, InvalidInput
from gitsessions.values.ids import short
from gitsessions.values.messages import text_of
from gitsessions.values.records import never_answered

if TYPE_CHECKING:
    from gitsessions.store.catalog import Catalog

Line = tuple[str, str]  # a line of text and its style
RETRY = "\\retry sends it again"
RETRY_HINT = f"the last prompt has no reply yet: {RETRY} (a new prompt is sent on its own)"


@dataclass(frozen=True)
class Resuming:
    """A resumed session as found before the prompt, for the agent's build."""

    session_id: str
    settings: ModelSettings  # its own (a flag or the environment still wins)
    workspace: Path  # where its tools work (said before the prompt)
    lease: Lease  # held: the build re-reads the session under it


class WorktreeNotHere(InvalidInput):
    """A worktree fork made on another machine, resumed in a clone of its project before
    its worktree is made here: its tools would work in this checkout. The message ends
    with the command that makes it (`worktree restore`)."""

    def __init__(self, session_id: str, here: Path) -> None:
        self.session_id = session_id
        self.command = f"gitsessions worktree restore {short(session_id)}"
        super().__init__(
            f"session {short(session_id)} is a worktree fork made on another machine; its "
            f"worktree is not here, and its tools would work in this checkout ({here}); "
            f"make its worktree here first: {self.command}"
        )


class Read(NamedTuple):
    """What the lines before a resumed chat's prompt need."""

    head: "Head"
    settings: ModelSettings
    workspace: Path
    notes: list[Line]
    unanswered: bool
    recap: list[Line]  # its title and last exchange, said before the prompt


def read_resumed(
    state: "State", settings: ModelSettings, resume: str | None, continue_: bool, here: Path,
    workspace_flag: Path | None,
) -> Read:  # fmt: skip
    """The session to resume, its settings, its workspace and the notes that say where,
    and whether its last prompt is unanswered."""
    reader = state.reader
    head = pick(reader, resume, continue_, here, lambda: catalog_of(state))
    if head is None:  # neither asked for: the caller resumes only when one is
        raise BadUsage("no session to resume")
    settings, endpoint_note = with_session_settings(
        settings, head.header.get("settings"), short(head.id), endpoints(state.home)
    )
    workspace, notes = place(head, here, workspace_flag, state.home, state.env)
    if endpoint_note is not None:
        notes.insert(0, (endpoint_note, "yellow"))
    context: list[dict[str, Any]] = reader.read(head, "context")
    said = recap(head, context, last_turn(reader, head))
    return Read(head, settings, workspace, notes, unanswered(context), said)


def catalog_of(state: "State") -> "Catalog":
    """The header cache (`--continue` picks from it), a stale row read by the reader."""
    # the header cache (sqlite): 11-15 ms, only where rows are read
    from gitsessions.store.catalog import Catalog

    # a stale row needs `head_at` and `transcript`, which the reader has
    return Catalog(state.refs, lambda: state.reader)


def lease_of(state: "State", session_id: str) -> "Lease":
    """The session's lease (SessionInUse, exit 1, when another process holds it)."""
    return Lease(state.home, session_id)


def pick(
    reader: "SessionReader", resume: str | None, continue_: bool, workspace: Path,
    catalog: "Callable[[], Catalog]",
) -> "Head | None":  # fmt: skip
    """The session to resume, or None for a new one."""
    if resume is not None and continue_:
        raise BadUsage("use --resume ID or --continue, not both")
    if resume == "":
        raise BadUsage("--resume needs a session id (only `chat --resume` on a terminal picks one)")
    if resume:
        head = reader.head(reader.resolve(resume))
        if head.header.get("archived"):
            raise InvalidInput(
                f"session {short(head.id)} is archived; "
                f"`gitsessions unarchive {short(head.id)}` first"
            )
        remember_session(reader.home, head.id, lambda: reader.ids().keys())  # resumed here
        return head
    if continue_:
        # the project identity: over 2 ms, only for a workspace
        from gitsessions.agent.scope import continued_here

        listed = catalog()
        ours = sessions_here(reader.home, lambda: reader.ids().keys())
        unarchived = (h for h in listed.headers() if not h.get("archived") and h.get("id") in ours)
        here = continued_here(unarchived, workspace, os.environ)
        warn_damaged(listed.damaged)  # the newest good session is continued
        if not here:
            raise SessionNotFound(
                f"no session to continue in {workspace}; start one with `gitsessions chat`"
            )
        now = now_iso()
        newest = max(here, key=lambda header: preference(header, now))
        return reader.head(newest["id"])
    return None


def preference(header: Mapping[str, Any], now: str | None = None) -> tuple[bool, str, str]:
    """How `--continue` ranks a workspace's sessions: one a model ever answered before a
    failed start (`never_answered`), then the most recently active (a time later than
    now, which only a forged or skewed header says, counts as now)."""
    active = header.get("active_at") or header.get("updated_at") or ""
    return (not never_answered(header), min(str(active), now or now_iso()), str(header["id"]))


def place(
    picked: "Head", here: Path, workspace_flag: Path | None, home: Path, env: Mapping[str, str]
) -> tuple[Path, list[Line]]:
    """Where a resumed session's tools work, and the lines that say so: a worktree fork
    in its worktree (unless `--workspace` names one) when this home made it
    (`worktree_mark.check`), else here; a note when that is not where the session was
    recorded. A worktree fork this home did not make (made on another machine), resumed
    in a clone of its project, is refused with the command that makes its worktree here
    (`WorktreeNotHere`): its tools never work in that checkout."""
    notes: list[Line] = []
    workspace = here
    recorded = (picked.header.get("workspace") or {}).get("path") or ""
    if mark_of(picked.header):
        checked = check(home, picked.id, picked.header, env)
        if checked.mark is None and _clone_of(picked, here, env):
            raise WorktreeNotHere(picked.id, here)  # its tools would work in this checkout
        if workspace_flag is None:
            workspace, recorded, said = in_worktree(picked, here, checked)
            notes.append(said)
    if recorded != str(workspace):
        # The tools work where the user is, never where a (possibly imported) record says.
        from gitsessions.services.code.project_id import recorded as identity_of
        from gitsessions.services.code.project_id import same_project
        from gitsessions.services.code.workspace import project_of

        clone = same_project(project_of(workspace, env)[1], identity_of(picked.header))
        where = " in another clone of this project" if clone else ""
        notes.append(
            (
                f"note: this session was recorded{where} in "
                f"{one_line(recorded or 'no workspace')}; the tools now work in {workspace}",
                "yellow",
            )
        )
    return workspace, notes


def in_worktree(picked: "Head", here: Path, checked: Checked) -> tuple[Path, str, Line]:
    """Where a worktree fork resumes: in its worktree, from any directory (said in one
    line); when this home did not make it, its project is not here or the worktree is
    gone, here, with one line saying why. Returns the workspace, what to compare the
    recorded one with, and the line."""
    said_mark = mark_of(picked.header) or {}
    mark = checked.mark
    if mark is None:  # pulled, or changed since: never trusted
        said = (
            f"note: session {short(picked.id)} names a worktree this home did not make "
            f"({one_line(str(said_mark.get('path'))[:200])}); the tools work in {here}"
        )
        return here, str(here), (said, "yellow")
    if not Path(mark["repo"]).is_dir():
        said = (
            f"note: the worktree of session {short(picked.id)} belongs to a project "
            f"not on this machine ({one_line(str(mark.get('repo')))}); the tools work "
            f"in {here}"
        )
        return here, str(here), (said, "yellow")
    if not checked.live:
        said = (
            f"note: the worktree of session {short(picked.id)} is gone "
            f"({one_line(mark['path'])}); the tools work in {here}; "
            f"`gitsessions worktree restore {short(picked.id)}` brings it back"
        )
        return here, str(here), (said, "yellow")
    place = workspace_for(picked.header, mark)
    said = (
        f"working in the worktree of session {short(picked.id)}: {one_line(str(place))} "
        f"(branch {one_line(mark['branch'])})"
    )
    return place, str(place), (said, "dim")


def _clone_of(picked: "Head", here: Path, env: Mapping[str, str]) -> bool:
    """Whether `here` is in a clone of the project the session was recorded in."""
    from gitsessions.services.code.project_id import recorded, same_project
    from gitsessions.services.code.workspace import project_of

    root, identity = project_of(here, env)
    return root is not None and same_project(identity, recorded(picked.header))


def unanswered(context: list[dict[str, Any]]) -> bool:
    """Whether the working context ends with a prompt the model left unfinished (as
    `AgentSession.unanswered_prompt`): a user message, or tool results after one."""
    if len(context) < 2 or context[-1].get("role") not in ("user", "tool"):
        return False
    return any(message.get("role") == "user" for message in context)


RECAP_LINES = 3  # of the last prompt, and of the reply to it
RECAP_WIDTH = 100


def last_turn(reader: "SessionReader", head: "Head") -> int | None:
    """The number of the turn whose exchange the recap shows (the N of `\\rewind N`):
    the newest turn whose prompt is still in the working context, as `\\undo` reads it
    (after a rewind to turn 1, turn 1, not the newest turn the transcript holds)."""
    return last_kept_turn(reader, head)


def recap(head: "Head", context: list[dict[str, Any]], turn: int | None = None) -> list[Line]:
    """Where a resumed session was: its title (else summary), then its last exchange in
    the working context (the last prompt and the reply's text), a few lines each, cut;
    `turn`, the last turn's number, is said with it."""
    header = head.header
    # named as `info` names them: a summary is no title
    label, name = (
        ("title", header.get("title"))
        if header.get("title")
        else ("summary", header.get("summary"))
    )
    lines: list[Line] = [(f"{label}: {one_line(name)}", "bold")] if name else []
    compacted = bool(head.counts.get("compactions"))  # else no note: none is imported
    prompts = [
        i for i, m in enumerate(context) if m.get("role") == "user" and not (compacted and _note(m))
    ]
    if not prompts:
        return lines
    at = prompts[-1]
    lines.append((f"last exchange (turn {turn}):" if turn else "last exchange:", "dim"))
    lines += _quoted("you", text_of(context[at]))
    replies = [m for m in context[at + 1 :] if m.get("role") == "assistant" and text_of(m).strip()]
    if replies:
        lines += _quoted("model", text_of(replies[-1]))
    return lines


def _note(message: dict[str, Any]) -> bool:
    """A continuation note (compaction's summary), not a prompt the user typed."""
    # the compaction engine: 13 ms, only for a compacted session
    from gitsessions.services.compaction.continuation import is_note

    return is_note(message)


def _quoted(who: str, text: str) -> list[Line]:
    """`text`'s first `RECAP_LINES` non-empty lines, each cut to `RECAP_WIDTH`."""
    rows = [line.rstrip() for line in text.splitlines() if line.strip()]
    lines: list[Line] = []
    for n, row in enumerate(rows[:RECAP_LINES]):
        cut = row if len(row) <= RECAP_WIDTH else row[: RECAP_WIDTH - 1] + "…"
        lines.append((f"  {who + ':' if n == 0 else ' ' * (len(who) + 1)} {cut}", "dim"))
    if len(rows) > RECAP_LINES:
        more = len(rows) - RECAP_LINES
        lines.append((f"  {' ' * (len(who) + 1)} … {more:,} more line{'s' * (more != 1)}", "dim"))
    return lines
