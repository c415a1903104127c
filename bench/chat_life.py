"""Chat life bench: what a whole `chat` costs as a process, not only its prompt
(bench/startup.py times that): on a pseudo-terminal, against tests/fake_openai.py (which
answers at once), a new chat is started, one prompt sent and answered, then Ctrl-D.

Invariant: every number is the median of `--runs` (default 10) fresh processes, after
one warm-up run that writes the bytecode caches: wall seconds until the prompt, for the
turn (Enter until the next prompt: it waits for the agent built and the SDK imported
while the user typed) and for the exit (Ctrl-D until the pty closes), and the CPU
seconds of the whole process (user + system, read when it is reaped: the load of the
machine disturbs it less than the wall). The `left` row leaves at the first prompt
without sending anything. Each run has a home of its own in a temp folder.

    uv run python bench/chat_life.py [--runs 10] [--json bench/results/chat_life.json]
"""

import argparse
import json
import os
import re
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pexpect

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fake_openai import FakeOpenAI  # noqa: E402

READY = re.compile(r"\x1b\[\?2004h")  # the line editor reads keys
PHASES = ("prompt", "turn", "exit", "cpu")


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def one_chat(server: FakeOpenAI, turn: bool) -> dict[str, float]:
    """One chat's life, timed by phase."""
    with tempfile.TemporaryDirectory() as temp:
        workspace = Path(temp) / "project"
        workspace.mkdir()
        env = dict(os.environ, TERM="xterm", COLUMNS="120", LINES="50",
                   GITSESSIONS_HOME=str(Path(temp) / "home"))  # fmt: skip
        args = ["-m", "gitsessions", "chat", "--base-url", server.base_url, "--model",
                "fake-model", "--workspace", str(workspace)]  # fmt: skip
        cpu = _children_cpu()
        start = time.perf_counter()
        child = pexpect.spawn(sys.executable, args, env=env, encoding="utf-8", timeout=120,
                              cwd=str(ROOT), dimensions=(50, 120))  # fmt: skip
        child.delaybeforesend = None
        child.expect(READY)
        shown = time.perf_counter()
        if turn:
            child.send("hello\r")
            child.expect(READY)
        answered = time.perf_counter()
        child.sendeof()
        child.expect(pexpect.EOF)
        gone = time.perf_counter()
        child.wait()
        if child.exitstatus != 0:
            raise RuntimeError(f"chat exited {child.exitstatus}: {child.before[-500:]}")
        return {"prompt": shown - start, "turn": answered - shown, "exit": gone - answered,
                "cpu": _children_cpu() - cpu}  # fmt: skip


def measure(runs: int) -> dict[str, dict[str, float]]:
    """The median of each phase, for a chat with one turn and one left at its prompt
    (taken in turn, so that a change in the machine's load falls on both alike)."""
    samples: dict[str, list[dict[str, float]]] = {"one turn": [], "left": []}
    with FakeOpenAI() as server:
        one_chat(server, turn=True)  # the warm-up: bytecode caches, the page cache
        for _ in range(runs):
            samples["one turn"].append(one_chat(server, turn=True))
            samples["left"].append(one_chat(server, turn=False))
    return {
        row: {phase: statistics.median(s[phase] for s in taken) for phase in PHASES}
        for row, taken in samples.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--json", type=Path)
    options = parser.parse_args()
    results = measure(options.runs)
    print(f"{'chat':<9}" + "".join(f"{phase:>9}" for phase in PHASES) + "   (seconds)")
    for row, phases in results.items():
        print(f"{row:<9}" + "".join(f"{phases[phase]:>9.3f}" for phase in PHASES))
    if options.json:
        options.json.parent.mkdir(parents=True, exist_ok=True)
        options.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
