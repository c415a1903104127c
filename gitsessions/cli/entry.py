"""The console script: `gitsessions hook prepare-commit-msg|commit-msg ...` (run by the
git hook shims at every commit) is answered without loading the typer app and the agent;
a plain `gitsessions [--home DIR] pull [REMOTE]` by `cli/fastpull.py`; everything else
goes to `cli/app.py`."""

import gc
import os
import sys
from pathlib import Path


def main() -> None:
    gc.disable()  # until the command is built: see `cli.lazy.started`
    argv = sys.argv[1:]
    if len(argv) >= 3 and argv[0] == "hook":
        from gitsessions.services.git_hooks import MANAGED

        if argv[1] in MANAGED:
            from gitsessions.cli.githook import run_hook

            sys.exit(run_hook(argv[1], argv[2], argv[3:], os.environ, Path.cwd()))
    if "pull" in argv[:3]:  # `[--home DIR] pull [REMOTE]`: without the typer app
        from gitsessions.cli import fastpull

        plain = fastpull.parse(argv)
        if plain is not None:
            sys.exit(fastpull.run(*plain, os.environ))
    from gitsessions.cli.app import main as app_main

    app_main()
