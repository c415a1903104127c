"""The chat's offer to make a pulled worktree fork's worktree here before it resumes.

Invariants:
- Asked only on a terminal, before the prompt, when `read_resumed` refused the session
  (`WorktreeNotHere`: a worktree fork made on another machine, resumed in a clone of its
  project). Anything but y or yes (Enter, Ctrl-D, Ctrl-C, no terminal) is no: the chat
  stops with the exact command, and nothing is written anywhere.
- Yes runs `worktree restore` (services/code/worktrees.py `restore`, the one way it is
  made) in `here`, says its line, and the caller reads the session again: it now
  resumes in the worktree. Whatever the restore refuses is the chat's error.
"""

from pathlib import Path

from gitsessions.cli.chat_input import discard_ahead, discarded_note, echoed, on_terminal
from gitsessions.cli.plain import Sink
from gitsessions.cli.resuming import WorktreeNotHere
from gitsessions.cli.state import State
from gitsessions.values.errors import InvalidInput
from gitsessions.values.ids import short


class RestoreDeclined(InvalidInput):
    """The user said no to making the worktree here: the chat stops, naming the command."""


def offer(state: State, refused: WorktreeNotHere, here: Path, sink: Sink) -> None:
    """Ask whether to make the fork's worktree here; make it on yes, else raise
    `RestoreDeclined` with the command."""
    session = short(refused.session_id)
    question = (
        f"session {session} is a worktree fork made on another machine; its worktree is "
        f"not here. Make it here now ({refused.command})?"
    )
    if not on_terminal() or not _yes(question, sink):
        raise RestoreDeclined(
            f"session {session} was not resumed (its tools would work in {here}); "
            f"make its worktree here first: {refused.command}"
        )
    from gitsessions.services.code import worktree_adopt

    said = worktree_adopt.restore(state.store, state.env, refused.session_id, here)
    sink.line(said, one_line=True)


def _yes(question: str, sink: Sink) -> bool:
    dropped = discard_ahead()  # keys typed before the question answer nothing
    if dropped:
        sink.line(discarded_note(dropped), "dim")
    sink.text(question + " [y/N] ")
    sink.file.flush()
    restore = echoed()
    try:
        answer = input()
    except (EOFError, KeyboardInterrupt):
        sink.text("\n")
        return False
    finally:
        restore()
    return answer.strip().lower() in ("y", "yes")
