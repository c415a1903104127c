"""Hostile input to `gitsessions acp`: what one bad line costs (issue 32).

Invariant: each case starts a fresh `gitsessions acp` (no model is asked: no case gets
that far), writes its hostile line and then one `initialize`, closes stdin and reads
all of stdout. Reported per case: the child's peak RSS (its own `ru_maxrss`, from
wait4), the bytes it wrote on stdout, the error code it answered the hostile line
with, whether the `initialize` after it was answered, and the seconds it took. The goal:
peak RSS under 200 MB for a 200 MB line, a short answer (no echo), the server going on.

    uv run python bench/acp_hostile.py              # 200 MB line
    uv run python bench/acp_hostile.py --mb 50

Writes `bench/results/acp_hostile.json` (or `--out`).
"""

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).parent
MB = 1 << 20
GOAL_RSS_MB = 200
INITIALIZE = b'{"jsonrpc":"2.0","id":99,"method":"initialize","params":{"protocolVersion":1}}\n'


def filler(mb: int) -> Iterator[bytes]:
    chunk = b"A" * MB
    for _ in range(mb):
        yield chunk


def invalid_params(mb: int) -> Iterator[bytes]:
    """A request whose `prompt` is a string of `mb` MB (the schema wants a list)."""
    yield b'{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":"'
    yield from filler(mb)
    yield b'"}}\n'


def unknown_method(mb: int) -> Iterator[bytes]:
    yield b'{"jsonrpc":"2.0","id":1,"method":"'
    yield from filler(mb)
    yield b'","params":{}}\n'


def not_json(mb: int) -> Iterator[bytes]:
    yield from filler(mb)
    yield b"\n"


def no_newline(mb: int) -> Iterator[bytes]:
    """The input ends inside the line: no `initialize` can follow."""
    yield from filler(mb)


CASES: dict[str, Callable[[int], Iterator[bytes]]] = {
    "invalid params": invalid_params,
    "unknown method": unknown_method,
    "not JSON": not_json,
    "no newline, then EOF": no_newline,
}


def run_case(name: str, mb: int) -> dict[str, Any]:
    child = subprocess.Popen(
        [sys.executable, "-m", "gitsessions", "acp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert child.stdin is not None and child.stdout is not None and child.stderr is not None
    out: list[bytes] = []
    err: list[bytes] = []
    readers = [
        threading.Thread(target=lambda: out.append(child.stdout.read())),  # type: ignore[union-attr]
        threading.Thread(target=lambda: err.append(child.stderr.read())),  # type: ignore[union-attr]
    ]
    for reader in readers:
        reader.start()
    started = time.monotonic()
    try:
        for piece in CASES[name](mb):
            child.stdin.write(piece)
        if name != "no newline, then EOF":
            child.stdin.write(INITIALIZE)
        child.stdin.close()
    except BrokenPipeError:
        pass
    _pid, status, usage = os.wait4(child.pid, 0)
    seconds = time.monotonic() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    for reader in readers:
        reader.join()
    lines = [json.loads(line) for line in out[0].splitlines() if line.strip()]
    first = lines[0] if lines else {}
    return {
        "case": name,
        "line_mb": mb,
        "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
        "stdout_bytes": len(out[0]),
        "stderr_bytes": len(err[0]),
        "code": (first.get("error") or {}).get("code"),
        "goes_on": any(m.get("id") == 99 and "result" in m for m in lines),
        "exit": child.returncode,
        "seconds": round(seconds, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--mb", type=int, default=200, help="size of the hostile line in MB")
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "acp_hostile.json")
    args = parser.parse_args()
    rows = []
    print(f"{'case':<22} {'line':>6} {'peak RSS':>9} {'stdout':>10} {'code':>7} goes on {'s':>5}")
    for name in CASES:
        row = run_case(name, args.mb)
        rows.append(row)
        print(
            f"{row['case']:<22} {row['line_mb']:>4}MB {row['peak_rss_mb']:>7}MB "
            f"{row['stdout_bytes']:>10,} {row['code']!s:>7} {'yes' if row['goes_on'] else 'no':>7} "
            f"{row['seconds']:>5}",
            flush=True,
        )
    worst = max(r["peak_rss_mb"] for r in rows)
    met = worst < GOAL_RSS_MB
    print(f"goal: peak RSS under {GOAL_RSS_MB} MB for a {args.mb} MB line: worst {worst} MB, "
          f"{'met' if met else 'NOT met'}")  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {"goal_rss_mb": GOAL_RSS_MB, "worst_rss_mb": worst, "met": met, "cases": rows}, indent=2
        )
        + "\n"
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
