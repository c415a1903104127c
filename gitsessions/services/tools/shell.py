"""run_shell: one `bash -c` command in the workspace, bounded in time, output and reach.

Invariants:
- It runs under launcher.py in its own session, stdin closed, stdout and stderr merged,
  under the environment handed in (never the process's); when the call ends every
  process it started is killed, `setsid`/double-forked ones too.
- With a `Sandbox`, Landlock confines writes and network before it starts; `.git` is
  read-only by a mount namespace, or by per-entry rules (said once per `said`).
- Memory stays bounded (head and tail of huge output); the result starts `exit code: N`
  or `exit code: timeout after Ns` (the ledger parses it).
"""

import contextlib
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from gitsessions.services.tools.errors import ToolError
from gitsessions.services.tools.output import truncate
from gitsessions.services.tools.result import ToolResult
from gitsessions.services.tools.sandbox import Sandbox
from gitsessions.services.tools.schemas import DEFAULT_TIMEOUT

LINGER_SECONDS = 1.0
NOTE_ROOM = 600
FALLBACK_NOTE = "git-fallback"
LAST_LINE_BYTES = 1024  # of the line a running command shows
STOP_GRACE = 10.0  # seconds the launcher gets to clean up after SIGTERM before SIGKILL
LAUNCHER = Path(__file__).with_name("launcher.py")


class ShellNotStarted(ToolError):
    """The launcher could not start the command (e.g. the sandbox could not be applied)."""


class _Capture:
    """The first and last `keep` bytes read from a pipe, and how many were dropped; the
    last line seen is told to `listener` as the output comes (a `\r` ends a line too:
    a progress bar's newest state)."""

    def __init__(self, keep: int, listener: Callable[[str], None] | None = None) -> None:
        self.keep = keep
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0
        self.listener = listener
        self.line = bytearray()  # the line being written (its last LAST_LINE_BYTES)
        self.last = b""  # the last line ended that was not blank
        self.told = ""

    def add(self, chunk: bytes) -> None:
        if self.listener is not None:
            self._tell(chunk)
        room = self.keep - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        self.tail += chunk
        if len(self.tail) > self.keep:
            excess = len(self.tail) - self.keep
            self.dropped += excess
            del self.tail[:excess]

    def _tell(self, chunk: bytes) -> None:
        *ended, rest = chunk.replace(b"\r", b"\n").split(b"\n")
        for part in ended:
            whole = self.line + part
            if whole.strip():
                self.last = bytes(whole[-LAST_LINE_BYTES:])
            self.line = bytearray()
        self.line += rest
        del self.line[:-LAST_LINE_BYTES]
        current = self.line if self.line.strip() else self.last
        # a character cut at either end (the chunk's, or the kept bytes') shows whole later
        text = bytes(current).decode("utf-8", errors="replace").strip().strip("\ufffd")
        if text and text != self.told and self.listener is not None:
            self.told = text
            try:
                self.listener(text)
            except Exception:  # a display's failure must never stop the pipe's draining
                self.listener = None

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


def _wait_report(descriptor: int, timeout: float, data: bytearray) -> bool:
    """Read the launcher's status lines into `data` until it exits (True), or until
    `timeout` seconds passed first (False)."""
    deadline = time.monotonic() + timeout
    poller = select.poll()  # not select.select: it fails for descriptors above 1023
    poller.register(descriptor, select.POLLIN)
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not poller.poll(remaining * 1000):
            return False
        chunk = os.read(descriptor, 4096)
        if not chunk:
            return True
        data += chunk


def _launcher(status_fd: int, sandbox_options: list[str]) -> list[str]:
    """The launcher's command line up to `bash -c`. It needs only the standard library:
    -S (no site-packages) saves start-up time, -E -P keep PYTHON* variables and the
    working directory out of its imports."""
    argv = [sys.executable, "-E", "-P", "-S", str(LAUNCHER)]
    argv += ["--status-fd", str(status_fd), "--parent", str(os.getpid()), *sandbox_options]
    return [*argv, "--", "bash", "-c"]


def _rulesets(sandbox: Sandbox | None) -> tuple[list[str], list[int]]:
    """The launcher's sandbox options and the ruleset fds they name (the caller closes
    them): one ruleset, or with `read_only` paths the whole one and the per-entry one."""
    if sandbox is None:
        return [], []
    fds: list[int] = []
    try:
        if not sandbox.read_only:
            fds.append(sandbox.ruleset_fd())
            return ["--ruleset-fd", str(fds[0])], fds
        fds.append(sandbox.ruleset_fd(whole=True))
        fds.append(sandbox.ruleset_fd())
    except OSError as error:
        for fd in fds:
            os.close(fd)
        reason = error.strerror or str(error)
        where = f": {error.filename}" if error.filename else ""
        message = f"the command was not run: the sandbox failed: {reason}{where}"
        raise ShellNotStarted(message) from error
    options = ["--ruleset-fd", str(fds[0]), "--fallback-ruleset-fd", str(fds[1])]
    for path in sandbox.read_only:
        options += ["--read-only", path]
    return options, fds


FALLBACK_PREFIX = "[sandbox: .git is kept read-only by per-entry rules here, not by a mount ("


def fallback_note(reason: str) -> str:
    """The note of the first command whose launcher could not mount the git dir
    read-only (`reason`) and enforced the per-entry rules."""
    return (
        f"{FALLBACK_PREFIX}{reason}): in this session commands cannot create, remove or "
        "rename entries at the workspace's top level, nor write through a symbolic link "
        "there; write_file can, or run with --sandbox-allow-git (which also lets the "
        "shell write .git)]"
    )


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
    said: set[str] | None = None,
    on_output: Callable[[str], None] | None = None,
) -> ToolResult:
    """Run `bash -c command` in `cwd`; stop it and all it started after `timeout` seconds.

    A command killed by a signal reports a negative exit code (-9 for SIGKILL).
    A timeout is `ok=False` with `exit_code=None`; any exit code is `ok=True`. Raises
    ShellNotStarted when the launcher could not apply `sandbox` (nothing ran). A note
    named in `said` is not repeated; one added is put in it. `on_output(line)` is told
    the output's last non-blank line each time it changes, from the reading thread.
    """
    said = set() if said is None else said
    process, read_end, status_read = _start(command, cwd, env, sandbox)
    capture = _Capture(max(256 * 1024, output_limit * 4), on_output)
    reader = threading.Thread(target=capture.drain, args=(read_end,), daemon=True)
    reader.start()
    notes: list[str] = []
    status = bytearray()
    try:
        finished = _wait_report(status_read, timeout, status)
        if not finished:
            _stop(process)
            _wait_report(status_read, LINGER_SECONDS, status)  # a fallback line, say
            notes.append(
                f"[timed out after {timeout:g}s; the command and every process it started "
                "were killed]"
            )
        else:
            process.wait()
    except BaseException:  # interrupted: nothing more of it is shown
        capture.listener = None
        raise
    finally:
        if process.returncode is None:  # interrupted (e.g. Ctrl-C): leave nothing behind
            _stop(process)
        os.close(status_read)
    lines = status.decode("utf-8", errors="replace").strip().splitlines()
    words = lines[-1].split() if lines else []
    if words[:1] == ["error"]:
        reader.join(LINGER_SECONDS)
        capture.listener = None
        raise ShellNotStarted(f"the command was not run: {lines[-1][len('error') :].strip()}")
    for line in lines[:-1]:
        if line.startswith("fallback ") and FALLBACK_NOTE not in said:
            said.add(FALLBACK_NOTE)
            notes.append(fallback_note(line[len("fallback ") :].strip()))
    exit_code, killed = _exit_of(words, process.returncode) if finished else (None, 0)
    if exit_code is not None and killed > 0:
        notes.append(
            f"[{killed} background process{'es were' if killed > 1 else ' was'} still "
            "running when the command exited, and killed]"
        )
    reader.join(LINGER_SECONDS)
    capture.listener = None  # a process still holding the pipe is not this call's to show
    if reader.is_alive():
        notes.append("[output may be incomplete: a process outside the command holds it]")
    body = truncate(capture.text(), max(500, output_limit - NOTE_ROOM), already_cut=capture.dropped)
    parts = [exit_line(exit_code, timeout), body.rstrip("\n") if body.strip() else "(no output)"]
    parts.extend(notes)
    return ToolResult("\n".join(parts) + "\n", ok=exit_code is not None, exit_code=exit_code)


def _start(
    command: str, cwd: str, env: Mapping[str, str], sandbox: Sandbox | None
) -> tuple[subprocess.Popen[bytes], int, int]:
    """The launcher started on `command` in a new session, its output and its report
    each on a pipe: the process and the two pipes' read ends (the caller's to close)."""
    sandbox_options, ruleset_fds = _rulesets(sandbox)
    read_end, write_end = os.pipe()
    status_read, status_write = os.pipe()
    try:
        process = subprocess.Popen(
            [*_launcher(status_write, sandbox_options), command],
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=write_end,
            stderr=write_end,
            start_new_session=True,
            close_fds=True,
            pass_fds=(status_write, *ruleset_fds),
        )
    except BaseException:
        os.close(read_end)
        os.close(status_read)
        raise
    finally:
        os.close(write_end)
        os.close(status_write)
        for fd in ruleset_fds:
            os.close(fd)
    return process, read_end, status_read


def _exit_of(words: list[str], returncode: int | None) -> tuple[int | None, int]:
    """The command's exit code and how many background processes were killed, from the
    launcher's last report line (`exit CODE killed N`); without one, the launcher died
    and its own `returncode` stands."""
    if len(words) == 4 and words[0] == "exit" and words[2] == "killed":
        return (None if words[1] == "none" else int(words[1])), int(words[3])
    return returncode, 0
