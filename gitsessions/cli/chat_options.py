"""What `chat` was asked for, resolved before its prompt: made by `cli/chat.py`, read by
`cli/chat_session.py` once the agent is built (a module of its own, so that neither of
the two imports the other). Light: chat imports it before its prompt."""

from pathlib import Path
from typing import NamedTuple

from gitsessions.cli.state import State
from gitsessions.services.settings.config import ModelSettings, ShellSettings, SnapshotSettings


class ChatOptions(NamedTuple):
    """What `chat` was asked for, resolved before its prompt (a tuple: a dataclass
    costs half a millisecond to define, and this module loads before the prompt)."""

    state: State
    settings: ModelSettings
    shell: ShellSettings
    snapshots: SnapshotSettings
    resume: str | None
    continue_: bool
    workspace_flag: Path | None
    auto_approve: bool
    all_sessions: bool
    max_steps: int
    quiet: bool
