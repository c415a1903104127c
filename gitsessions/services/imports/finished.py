"""Whether a source file is finished (nothing more will be written), decided from evidence,
never from the shape of its last line.

Invariant: a file is still being written when its last line is cut (no newline and not a
whole object) or the import runs as the source's hook, unless unchanged for `QUIET`
seconds or the hook says the session ended; a plain `import` of whole lines counts it
finished. In a finished file a cut last line is damage (`lines.Tally.settle_tail`). End
markers inside the file are read by the format's reader (`assemble.End`).
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
