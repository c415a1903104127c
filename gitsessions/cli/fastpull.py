"""`gitsessions [--home DIR] pull [REMOTE]`, the plain form a schedule or a script runs,
answered without the typer app (about a third of an incremental pull's time): the same
state, the same `sync_out.run_pull` and the same one-line errors with their exit codes
as `app.py`. Any other form (an option, `--help`, more words) goes to the typer app."""

import sys
from collections.abc import Mapping
from pathlib import Path


def parse(argv: list[str]) -> tuple[Path | None, str | None] | None:
    """`(--home, REMOTE)` of a plain `[--home DIR] pull [REMOTE]`, else None."""
    text: str | None = None
    words = list(argv)
    if words and words[0].startswith("--home="):
        text, words = words[0][len("--home=") :], words[1:]
    elif len(words) >= 2 and words[0] == "--home":
        text, words = words[1], words[2:]
    if text is not None and not text.strip():
        return None
    home = None if text is None else Path(text)
    if not words or words[0] != "pull" or len(words) > 2:
        return None
    remote = words[1] if len(words) == 2 else None
    if remote is not None and (not remote or remote.startswith("-")):
        return None
    return home, remote


def run(home: Path | None, remote: str | None, env: Mapping[str, str]) -> int:
    """The pull; its exit code (errors printed as `app.py` prints them)."""
    from gitsessions.cli.failure import quiet_disk_errors, reported, say_error
    from gitsessions.cli.state import State
    from gitsessions.cli.sync_out import run_pull

    sys.unraisablehook = quiet_disk_errors
    st: State | None = None
    try:
        st = State.from_env(home, env)
        run_pull(st, remote)
        return 0
    except KeyboardInterrupt:
        from gitsessions.cli.state import err

        err.print("interrupted")
        return 130
    except Exception as error:  # what `app.py` reports as one line, reported the same
        found = reported(error)
        if found is None:
            raise
        say_error(found[0])
        return found[1]
    finally:
        if st is not None:
            st.close()
