"""Long output through a pager, as git does it.

`show` and `log` on a terminal write into $GITSESSIONS_PAGER, else $PAGER, else `less`
(with `LESS=FRX` unless LESS is set: quit when it fits one screen, pass colours, keep
the screen). An empty value or `cat` means no pager; so does `--no-pager`, or output
that is not a terminal, which is written as it is made, without colour. Output is
written a line at a time, so the first screen shows before the rest is read, and
quitting the pager early stops the command quietly.
"""

import shutil
import subprocess
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress

from gitsessions.cli.failure import quiet_stdout
from gitsessions.cli.plain import Sink
from gitsessions.cli.state import plain_out as out  # its file only: no rich


def pager_command(env: Mapping[str, str]) -> str | None:
    """The pager to run, or None for none."""
    for key in ("GITSESSIONS_PAGER", "PAGER"):
        if key in env:
            command = env[key].strip()
            return None if command in ("", "cat") else command
    return "less" if shutil.which("less") else None


@contextmanager
def paged(env: Mapping[str, str], enabled: bool = True) -> Iterator[Sink]:
    """A `Sink` on the pager's input (or on stdout); waits for the pager at the end."""
    terminal = out.file.isatty()
    colour = terminal and "NO_COLOR" not in env
    command = pager_command(env) if enabled and terminal else None
    if command is None:
        sink = Sink(out.file, colour)
        try:
            yield sink
            sink.flush()
        except BrokenPipeError:  # `| head`: the reader has what it wanted
            quiet_stdout()
        return
    child_env = {**env, "LESS": env.get("LESS", "FRX"), "LV": env.get("LV", "-c")}
    out.file.flush()
    pager = subprocess.Popen(
        command, shell=True, stdin=subprocess.PIPE, env=child_env, text=True,
        encoding="utf-8", errors="replace",
    )  # fmt: skip
    assert pager.stdin is not None
    try:
        yield Sink(pager.stdin, colour)
    except (BrokenPipeError, KeyboardInterrupt):  # the user quit the pager
        pass
    finally:
        with suppress(BrokenPipeError):
            pager.stdin.close()
        while True:
            try:
                pager.wait()
                break
            except KeyboardInterrupt:  # Ctrl-C inside less reaches us too: keep waiting
                continue
