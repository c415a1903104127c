"""The console script: `gitsessions hook prepare-commit-msg|commit-msg ...` (run by the
git hook shims at every commit) is answered without loading the typer app and the agent;
a plain `gitsessions [--home DIR] pull [REMOTE]` by `cli/fastpull.py`; everything else
goes to `cli/app.py`."""

import gc
import os
import sys
from pathlib import Path


def started() -> None:
    """Start-up is over: the modules, classes and functions made so far live as long as
    the process. `main` turns the cycle collector off until now (it would scan them over
    and over as they pile up: several milliseconds of each command's start); they are
    moved out of its reach (`gc.freeze`) and it runs again from here on."""
    gc.freeze()
    gc.enable()


def main() -> None:
    gc.disable()  # until the command is built (`cli.lazy.load`) or picked here: `started`
    argv = sys.argv[1:]
    if len(argv) >= 3 and argv[0] == "hook":
        from gitsessions.services.git_hooks import MANAGED

        if argv[1] in MANAGED:
            from gitsessions.cli.githook import run_hook

            started()
            sys.exit(run_hook(argv[1], argv[2], argv[3:], os.environ, Path.cwd()))
    if "pull" in argv[:3]:  # `[--home DIR] pull [REMOTE]`: without the typer app
        from gitsessions.cli import fastpull

        plain = fastpull.parse(argv)
        if plain is not None:
            started()
            sys.exit(fastpull.run(*plain, os.environ))
    from gitsessions.cli.app import main as app_main

    app_main()
