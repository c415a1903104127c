"""run_shell: one `bash -c` command in the workspace, bounded in time and output.

The command runs in its own session (so its own process group) with stdin closed and
stdout+stderr merged into one pipe, under an environment the caller passes in (this
module never reads the process environment). On timeout the whole process group is
killed; when the command exits but background processes still hold the output pipe,
they are killed too, so a call never outlives itself by more than a short grace period.
Memory stays bounded: only the head and tail of huge output are kept. The result text
always starts with the line `exit code: N` or `exit code: timeout after Ns` (the
compaction ledger parses it).
"""

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Mapping

from gitsessions.services.tools.output import truncate
from gitsessions.services.tools.result import ToolResult

DEFAULT_TIMEOUT = 120
MAX_TIMEOUT = 600
LINGER_SECONDS = 1.0
NOTE_ROOM = 400


class _Capture:
    """The first and last `keep` bytes read from a pipe, and how many were dropped."""

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0

    def add(self, chunk: bytes) -> None:
        room = self.keep - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        self.tail += chunk
        if len(self.tail) > self.keep:
            excess = len(self.tail) - self.keep
            self.dropped += excess
            del self.tail[:excess]

    def drain(self, descriptor: int) -> None:
        try:
            while chunk := os.read(descriptor, 65536):
                self.add(chunk)
        finally:
            os.close(descriptor)

    def text(self) -> str:
        return (self.head + self.tail).decode("utf-8", errors="replace")


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def exit_line(exit_code: int | None, timeout: float) -> str:
    """The first line of every run_shell result."""
    if exit_code is None:
        return f"exit code: timeout after {timeout:g}s"
    return f"exit code: {exit_code}"


def run_shell(
    command: str,
    *,
    cwd: str,
    env: Mapping[str, str],
    timeout: float = DEFAULT_TIMEOUT,
    output_limit: int,
) -> ToolResult:
    """Run `bash -c command` in `cwd`; kill its process group after `timeout` seconds.

    A command killed by a signal reports a negative exit code (-9 for SIGKILL).
    A timeout is `ok=False` with `exit_code=None`; any exit code is `ok=True`.
    """
    read_end, write_end = os.pipe()
    try:
        process = subprocess.Popen(
            ["bash", "-c", command],
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=write_end,
            stderr=write_end,
            start_new_session=True,
            close_fds=True,
        )
    except BaseException:
        os.close(read_end)
        raise
    finally:
        os.close(write_end)
    capture = _Capture(max(256 * 1024, output_limit * 4))
    reader = threading.Thread(target=capture.drain, args=(read_end,), daemon=True)
    reader.start()
    notes: list[str] = []
    exit_code: int | None
    try:
        exit_code = process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(process.pid)
        process.wait()
        exit_code = None
        notes.append(f"[timed out after {timeout:g}s; the command's process group was killed]")
    finally:
        if process.returncode is None:  # interrupted (e.g. Ctrl-C): leave nothing behind
            _kill_group(process.pid)
            process.wait()
    reader.join(LINGER_SECONDS)
    if reader.is_alive():
        _kill_group(process.pid)
        if exit_code is not None:
            notes.append(
                "[background processes still holding the output were killed when the "
                "command exited]"
            )
        reader.join(LINGER_SECONDS)
        if reader.is_alive():
            notes.append("[output may be incomplete: a process outside the group holds it]")
    body = truncate(capture.text(), max(500, output_limit - NOTE_ROOM), already_cut=capture.dropped)
    parts = [exit_line(exit_code, timeout), body.rstrip("\n") if body.strip() else "(no output)"]
    parts.extend(notes)
    return ToolResult("\n".join(parts) + "\n", ok=exit_code is not None, exit_code=exit_code)
