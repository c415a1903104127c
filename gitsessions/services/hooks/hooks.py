"""Lifecycle hooks: executables in `$GITSESSIONS_HOME/hooks/<event>`, run by the places that
commit: after a turn (`Agent.run_turn`/`retry_turn`, on an error too), around a
compaction (`compactor`, not for a dry run), after a fork and a delete (`manage`).

Invariants:
- A hook runs only once what it reports is committed (`pre-compact` on a committed
  head), so it can lose nothing; nothing it returns is read and it can veto nothing.
- It gets one JSON object on stdin and the environment it is given plus
  `GITSESSIONS_HOME`, `GITSESSIONS_SESSION`, `GITSESSIONS_EVENT`; it runs in the home, in
  a process group of its own that a timeout stops.
- A failure, timeout or start failure is one line through `report` and one audit line;
  success says nothing. Output goes to temporary files, never pipes (a child holding
  them cannot stall the agent), never to stdout.
"""

import json
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, NamedTuple

from gitsessions.services.hooks.audit import audit
from gitsessions.services.settings.config import config_table, table_shape
from gitsessions.services.settings.config_file import CONFIG_FILE
from gitsessions.values.clock import now_iso

EVENTS = ("post-turn", "pre-compact", "post-compact", "post-fork", "post-delete")
DIRECTORY = "hooks"
TABLE = "hooks"
DEFAULT_TIMEOUT = 5.0
MAX_TIMEOUT = 600.0
SHAPE = table_shape(
    timeout={
        "type": "number",
        "exclusiveMinimum": 0,
        "maximum": MAX_TIMEOUT,
        "description": f"a number of seconds in (0, {MAX_TIMEOUT:g}]",
    }
)
KILL_GRACE = 1.0  # seconds between SIGTERM and SIGKILL when a hook runs out of time


class HookRun(NamedTuple):
    """What became of one hook: `outcome` is ok, failed, timeout or unstartable."""

    event: str
    outcome: str
    exit_code: int | None
    seconds: float
    detail: str = ""


def _ignore(_line: str) -> None:
    return None


@dataclass(frozen=True)
class Hooks:
    """Runs the lifecycle hooks of one home. `home` None: no hooks at all (tests, tools)."""

    home: Path | None
    env: Mapping[str, str] = field(default_factory=dict)
    timeout: float = DEFAULT_TIMEOUT
    report: Callable[[str], None] = _ignore

    def path(self, event: str) -> Path | None:
        return None if self.home is None else self.home / DIRECTORY / event

    def run(self, event: str, session: str, commit: str | None, **details: Any) -> HookRun | None:
        """Run the `event` hook if there is one; None when there is none. Never raises
        for anything the hook does (Ctrl-C while it runs stops the hook, not the agent)."""
        assert event in EVENTS, event
        path = self.path(event)
        try:
            if path is None or not path.is_file():
                return None
            executable = os.access(path, os.X_OK)
        except OSError as error:  # a hooks folder we may not read
            executable, problem = False, str(error)
        else:
            problem = f"{path} is not executable"
        assert self.home is not None and path is not None
        payload = {
            "event": event,
            "session": session,
            "commit": commit,
            "time": now_iso(),
            "home": str(self.home),
            **details,
        }
        if not executable:
            done = HookRun(event, "unstartable", None, 0.0, problem)
        else:
            done = self._execute(path, event, session, payload)
        if done.outcome != "ok":
            self.report(describe(done))
        with suppress(OSError):  # the hook is reported already; say nothing more
            audit(
                self.home,
                "hook",
                session,
                done.outcome,
                event=event,
                exit_code=done.exit_code,
                seconds=round(done.seconds, 3),
            )
        return done

    def _execute(self, path: Path, event: str, session: str, payload: Mapping[str, Any]) -> HookRun:
        env = {
            **self.env,
            "GITSESSIONS_HOME": str(self.home),
            "GITSESSIONS_SESSION": session,
            "GITSESSIONS_EVENT": event,
        }
        started = time.monotonic()
        try:
            with tempfile.TemporaryFile() as stdin, tempfile.TemporaryFile() as output:
                stdin.write(json.dumps(payload).encode() + b"\n")
                stdin.seek(0)
                process = subprocess.Popen(
                    [str(path)],
                    stdin=stdin,
                    stdout=output,
                    stderr=output,
                    cwd=self.home,
                    env=env,
                    start_new_session=True,
                )
                outcome, code = self._wait(process)
                last = _last_line(output)
        except OSError as error:
            return HookRun(event, "unstartable", None, time.monotonic() - started, str(error))
        seconds = time.monotonic() - started
        return HookRun(event, outcome, code, seconds, last)

    def _wait(self, process: "subprocess.Popen[bytes]") -> tuple[str, int | None]:
        try:
            code = process.wait(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            _stop(process)
            return "timeout", None
        except KeyboardInterrupt:
            _stop(process)
            return "interrupted", None
        return ("ok" if code == 0 else "failed"), code


def _stop(process: "subprocess.Popen[bytes]") -> None:
    """SIGTERM the hook's process group, SIGKILL it after a grace period; reap the hook."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except (ProcessLookupError, PermissionError):
            break
        try:
            process.wait(timeout=KILL_GRACE)
            if sig == signal.SIGTERM:
                # the leader is gone; anything left in its group gets no grace
                os.killpg(process.pid, signal.SIGKILL)
            break
        except subprocess.TimeoutExpired:
            continue
        except ProcessLookupError:
            break
    if process.poll() is None:
        process.wait()


def _last_line(output: IO[bytes]) -> str:
    """The last non-empty line the hook wrote (at most 4 KB of the end are read)."""
    size = output.seek(0, os.SEEK_END)
    output.seek(max(0, size - 4096))
    lines = [line.strip() for line in output.read().decode("utf-8", "replace").splitlines()]
    lines = [line for line in lines if line]
    return lines[-1][:200] if lines else ""


def describe(done: HookRun) -> str:
    """The one line a hook that did not succeed is reported in."""
    what = {
        "failed": f"failed (exit {done.exit_code})",
        "timeout": f"timed out after {done.seconds:.1f} s and was stopped",
        "interrupted": "was interrupted and stopped",
        "unstartable": "could not start",
    }[done.outcome]
    detail = f": {done.detail}" if done.detail else ""
    return f"hook {done.event} {what}{detail}; nothing was lost (see `gitsessions hooks list`)"


def hook_timeout(config: Mapping[str, Any], config_source: str = CONFIG_FILE) -> float:
    """`[hooks] timeout` from config.toml: seconds a lifecycle hook may run."""
    table, _where = config_table(config, TABLE, SHAPE, config_source)
    return float(table.get("timeout", DEFAULT_TIMEOUT))


def installed(home: Path) -> dict[str, str]:
    """Each event's hook state in `home`: absent, executable or not executable."""
    states: dict[str, str] = {}
    for event in EVENTS:
        path = home / DIRECTORY / event
        if not path.is_file():
            states[event] = "absent"
        elif os.access(path, os.X_OK):
            states[event] = "executable"
        else:
            states[event] = "not executable"
    return states


NO_HOOKS = Hooks(None)
