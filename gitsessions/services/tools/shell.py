"""run_shell: one `bash -c` command in the workspace, bounded in time, output and reach.

The command runs under the launcher (launcher.py), in its own session (so its own process
group), with stdin closed and stdout+stderr merged into one pipe, under an environment
the caller passes in (this module never reads the process environment). When the call
ends (the command exits, times out, or the caller is interrupted) every process the
command started is killed, including those that left the process group with `setsid`,
`nohup` or a double fork: the launcher is their subreaper and kills them all before it
exits. With a `Sandbox`, Landlock confines the command's writes and network before it
starts. Memory stays bounded: only the head and tail of huge output are kept. The
result text always starts with the line `exit code: N` or `exit code: timeout after Ns`
(the compaction ledger parses it).
"""

import contextlib
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path

from gitsessions.services.tools.errors import ToolError
from gitsessions.services.tools.output import truncate
from gitsessions.services.tools.result import ToolResult
from gitsessions.services.tools.sandbox import Sandbox
from gitsessions.services.tools.schemas import DEFAULT_TIMEOUT

LINGER_SECONDS = 1.0
NOTE_ROOM = 400
STOP_GRACE = 10.0  # seconds the launcher gets to clean up after SIGTERM before SIGKILL
LAUNCHER = Path(__file__).with_name("launcher.py")


class ShellNotStarted(ToolError):
    """The launcher could not start the command (e.g. the sandbox could not be applied)."""


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


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Ask the launcher to kill everything and exit; kill its group if it does not."""
    with contextlib.suppress(ProcessLookupError):
        process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=STOP_GRACE)
    except subprocess.TimeoutExpired:
        _kill_group(process.pid)
        process.wait()


def _wait_report(descriptor: int, timeout: float) -> str | None:
    """The launcher's status line, read until it exits ("" when it wrote none); None
    when `timeout` seconds passed first."""
    deadline = time.monotonic() + timeout
    data = bytearray()
    poller = select.poll()  # not select.select: it fails for descriptors above 1023
    poller.register(descriptor, select.POLLIN)
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not poller.poll(remaining * 1000):
            return None
        chunk = os.read(descriptor, 4096)
        if not chunk:
            return data.decode("utf-8", errors="replace").strip()
        data += chunk


def _launcher(status_fd: int, ruleset_fd: int | None) -> list[str]:
    """The launcher's command line up to `bash -c`. It needs only the standard library:
    -S (no site-packages) saves start-up time, -E -P keep PYTHON* variables and the
    working directory out of its imports."""
    argv = [sys.executable, "-E", "-P", "-S", str(LAUNCHER)]
    argv += ["--status-fd", str(status_fd), "--parent", str(os.getpid())]
    if ruleset_fd is not None:
        argv += ["--ruleset-fd", str(ruleset_fd)]
    return [*argv, "--", "bash", "-c"]


def _ruleset(sandbox: Sandbox | None) -> int | None:
    if sandbox is None:
        return None
    try:
        return sandbox.ruleset_fd()
    except OSError as error:
        reason = error.strerror or str(error)
        where = f": {error.filename}" if error.filename else ""
        message = f"the command was not run: the sandbox failed: {reason}{where}"
        raise ShellNotStarted(message) from error


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
    sandbox: Sandbox | None = None,
) -> ToolResult:
    """Run `bash -c command` in `cwd`; stop it and all it started after `timeout` seconds.

    A command killed by a signal reports a negative exit code (-9 for SIGKILL).
    A timeout is `ok=False` with `exit_code=None`; any exit code is `ok=True`. Raises
    ShellNotStarted when the launcher could not apply `sandbox` (nothing ran).
    """
    ruleset_fd = _ruleset(sandbox)
    read_end, write_end = os.pipe()
    status_read, status_write = os.pipe()
    try:
        process = subprocess.Popen(
            [*_launcher(status_write, ruleset_fd), command],
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=write_end,
            stderr=write_end,
            start_new_session=True,
            close_fds=True,
            pass_fds=(status_write,) if ruleset_fd is None else (status_write, ruleset_fd),
        )
    except BaseException:
        os.close(read_end)
        os.close(status_read)
        raise
    finally:
        os.close(write_end)
        os.close(status_write)
        if ruleset_fd is not None:
            os.close(ruleset_fd)
    capture = _Capture(max(256 * 1024, output_limit * 4))
    reader = threading.Thread(target=capture.drain, args=(read_end,), daemon=True)
    reader.start()
    notes: list[str] = []
    try:
        report = _wait_report(status_read, timeout)
        if report is None:
            _stop(process)
            notes.append(
                f"[timed out after {timeout:g}s; the command and every process it started "
                "were killed]"
            )
        else:
            process.wait()
    finally:
        if process.returncode is None:  # interrupted (e.g. Ctrl-C): leave nothing behind
            _stop(process)
        os.close(status_read)
    words = (report or "").split()
    if words[:1] == ["error"]:
        reader.join(LINGER_SECONDS)
        raise ShellNotStarted(f"the command was not run: {report[len('error') :].strip()}")
    exit_code: int | None = None
    killed = 0
    if report is not None:
        exit_code = process.returncode  # the launcher died without a report: its own code
        if len(words) == 4 and words[0] == "exit" and words[2] == "killed":
            exit_code = None if words[1] == "none" else int(words[1])
            killed = int(words[3])
    if exit_code is not None and killed > 0:
        notes.append(
            f"[{killed} background process{'es were' if killed > 1 else ' was'} still "
            "running when the command exited, and killed]"
        )
    reader.join(LINGER_SECONDS)
    if reader.is_alive():
        notes.append("[output may be incomplete: a process outside the command holds it]")
    body = truncate(capture.text(), max(500, output_limit - NOTE_ROOM), already_cut=capture.dropped)
    parts = [exit_line(exit_code, timeout), body.rstrip("\n") if body.strip() else "(no output)"]
    parts.extend(notes)
    return ToolResult("\n".join(parts) + "\n", ok=exit_code is not None, exit_code=exit_code)
