"""The console script: the cycle collector off while the command starts (`cli.lazy`
turns it on again once the command is built), then the typer app (`cli/app.py`), the
one parser of every command line; once it exits, the process ends without the
interpreter's teardown (`cli.lazy.leave`)."""

import atexit
import gc


def main() -> None:
    gc.disable()  # until the command is built: `cli.lazy.started`
    from gitsessions.cli import lazy

    atexit.register(lazy.leave)  # registered first: runs after every other exit handler
    from gitsessions.cli.app import main as app_main

    try:
        app_main()
    except SystemExit as stop:
        lazy.exiting(stop.code)
        raise
