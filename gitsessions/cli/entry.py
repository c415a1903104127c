"""The console script: the cycle collector off while the command starts (`cli.lazy`
turns it on again once the command is built), then the typer app (`cli/app.py`), the
one parser of every command line."""

import gc


def main() -> None:
    gc.disable()  # until the command is built: `cli.lazy.started`
    from gitsessions.cli.app import main as app_main

    app_main()
