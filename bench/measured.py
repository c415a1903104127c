"""Measuring one `gitsessions` command as the benches of `bench/scale.py` do: in a child
process of its own, started by a small waiter (so the bench's own memory is not counted),
its wall time and peak RSS from `wait4`, in a home of its own.
"""

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
CODE = [REPO]  # the checkout whose gitsessions the child processes run (--code)

WAITER = """
import json, os, subprocess, sys, time
cmd, env, cwd, out, err, timeout = json.load(sys.stdin)
with open(out, "wb") as stdout, open(err, "wb") as stderr:
    t = time.perf_counter()
    child = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=stdout, stderr=stderr)
    while True:
        pid, status, usage = os.wait4(child.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() - t > timeout:
            child.kill()
            pid, status, usage = os.wait4(child.pid, 0)
            break
        time.sleep(0.01)
print(json.dumps([time.perf_counter() - t, os.waitstatus_to_exitcode(status),
                  usage.ru_maxrss / 1024]))
"""


def run_cli(
    args: Sequence[str], env: dict[str, str], timeout: float, cwd: Path | None = None
) -> dict[str, Any]:
    """`gitsessions ARGS` measured (see `run_measured`)."""
    return run_measured([sys.executable, "-m", "gitsessions", *args], env, timeout, cwd)


def run_measured(
    cmd: Sequence[str], env: dict[str, str], timeout: float, cwd: Path | None = None
) -> dict[str, Any]:
    """Run `gitsessions ARGS` in a child; its exit code, seconds, peak RSS and output.
    The child is started by a small waiter process: forked straight from this one
    (which may hold a big session it just built) it would count that memory in its
    peak RSS until it execs."""
    with tempfile.TemporaryDirectory() as tmp:
        out, err = Path(tmp) / "out", Path(tmp) / "err"
        waiter = subprocess.run(
            [sys.executable, "-c", WAITER], capture_output=True, text=True, check=True,
            input=json.dumps([list(cmd), {**env, "PYTHONPATH": str(CODE[0])}, str(cwd or CODE[0]),
                              str(out), str(err), timeout]),
        )  # fmt: skip
        seconds, code, rss = json.loads(waiter.stdout)
        return {
            "code": code,
            "seconds": round(seconds, 2),
            "peak_rss_mb": round(rss, 1),
            "timed_out": seconds > timeout,
            "stdout": out.read_text(errors="replace"),
            "stderr": err.read_text(errors="replace")[-600:],
        }


def environment(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "GITSESSIONS_"))}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: imports read cached bytecode
    env.update(GITSESSIONS_HOME=str(home), HOME=str(home.parent), GIT_CONFIG_NOSYSTEM="1")
    return env
