"""Whether a source file is finished (nothing more will be written to it), decided from
evidence, never from the shape of its last line (a finished Claude Code file may end on
a reply whose `stop_reason` is null, a Codex rollout of an older version on a message
with no event after it).

A file counts as still being written when its last line is cut (no newline, and not a
whole JSON object: `lines.Tally.partial_tail`) or the import runs as the source's hook
(it runs while the agent does), unless it has not changed for `QUIET` seconds or the
hook says the session ended. A plain `import` of a file whose lines are all whole (the
last one with or without its newline) counts it finished. In a file found finished, a
cut last line is damage (`lines.Tally.settle_tail`). End markers inside the file (a
Codex `task_complete`) are read by the format's reader as items (`assemble.End`).
"""

import time
from pathlib import Path

QUIET = 60.0  # seconds a file is unchanged before it counts as finished


def is_finished(
    path: Path,
    partial_tail: bool,
    *,
    hook: bool = False,
    ended: bool = False,
    now: float | None = None,
) -> bool:
    """Whether `path` is finished: `partial_tail` its last line is cut (no newline yet,
    not a whole object), `hook` the import runs as the source's hook, `ended` the hook
    says the session ended; `now` (seconds since the epoch) the time to compare its mtime with."""
    if ended:
        return True
    try:
        age = (time.time() if now is None else now) - path.stat().st_mtime
    except OSError:
        return False
    if age >= QUIET:
        return True
    return not hook and not partial_tail
