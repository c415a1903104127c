"""Startup bench: how long each command takes as a new process, against the floor of
`python -c "import typer, rich"` measured in the same run.

Invariant: every number is the median of `--runs` (default 10) runs of a fresh process,
after one warm-up run that writes the bytecode caches (a user's second run, not their
first): wall-clock seconds, and the CPU seconds the process used (user + system, which
other load on the machine disturbs less; for `chat`, read from /proc at its prompt).
The store is made by the bench in a temp home (three sessions written by `exec` against
tests/fake_openai.py, which answers at once), so nothing of the user's is read. `chat`
(a new one) and `resumed` (`chat --resume ID` of one of those sessions) are timed until
the prompt appears on a pseudo-terminal (`chat ed`, no goal: until the line editor,
imported once the prompt shows, reads the keys typed meanwhile); `exec` for one whole
turn. Goals: list, info, show, log and --help at most 2.0x the floor, chat's prompt
1.5x (new or resumed), and exec (which talks to the model through the openai SDK) at
most the floor plus `import openai` plus 100 ms: the row `openai` times `python -c
"import typer, rich, openai"`, run in turn with `exec` (one after the other, so that a change in the
machine's load falls on both alike), and the rest is the median of the pairs'
differences; exec's parts are printed (floor, import openai, the rest). For comparison,
the row `sdk turn` (no goal), in the same rounds: the least any program pays to ask the
model one thing through the SDK (import typer, rich and openai, make the SDK's client
as it comes, stream one reply).

    uv run python bench/startup.py [--runs 10] [--json bench/results/startup.json]
"""

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import pexpect

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gitsessions.store.background import wait_for_maintenance  # noqa: E402
from tests.fake_openai import FakeOpenAI  # noqa: E402

PROMPT = re.compile(r"(?:^|[\r\n]|\x1b\[\?25h|\x1b\[2K)> ")
# the line editor reading keys: it turns bracketed paste on as it starts (the first
# prompt is written before it is imported; keys typed meanwhile wait for it)
READY = re.compile(r"\x1b\[\?2004h")
GOALS = {"--help": 2.0, "list": 2.0, "info": 2.0, "show": 2.0, "log": 2.0, "chat": 1.5}
GOALS["resumed"] = 1.5
EXEC_BEYOND_OPENAI = 0.100  # seconds exec may take beyond `import typer, rich, openai`
# what any program pays to ask the model one thing through the SDK, for comparison
SDK_TURN = """import typer, rich, openai
client = openai.OpenAI(base_url={url!r}, api_key="k")
for _ in client.chat.completions.create(
        model="fake-model", messages=[{{"role": "user", "content": "hello"}}], stream=True):
    pass"""


Sample = tuple[float, float]  # (wall seconds, CPU seconds)


def in_turn(runs: int, *commands: Callable[[], Sample]) -> list[tuple[Sample, ...]]:
    """`runs` rounds of `commands`, one after the other, after one warm-up round (which
    writes the bytecode caches and puts the files in the page cache)."""
    for once in commands:
        once()
    return [tuple(once() for once in commands) for _ in range(runs)]


def medians(samples: Iterable[Sample]) -> Sample:
    listed = list(samples)
    return statistics.median(s[0] for s in listed), statistics.median(s[1] for s in listed)


def median_of(runs: int, once: Callable[[], Sample]) -> Sample:
    return medians(r[0] for r in in_turn(runs, once))


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(cmd: list[str], env: dict[str, str], cwd: Path) -> Callable[[], Sample]:
    def once() -> Sample:
        cpu = _children_cpu()
        start = time.perf_counter()
        done = subprocess.run(cmd, env=env, capture_output=True, cwd=cwd)
        seconds = time.perf_counter() - start
        if done.returncode:
            raise RuntimeError(f"{cmd[3:]} failed: {done.stderr.decode()[-500:]}")
        cpu = _children_cpu() - cpu
        # a commit may have started store maintenance in the background (never waited
        # for by the command): let it end, or it would run beside the next one timed
        wait_for_maintenance(Path(env["GITSESSIONS_HOME"]) / "store.git")
        wait_for_summaries()  # a fresh exec's list summary, asked after it exited, likewise
        return seconds, cpu

    return once


def wait_for_summaries() -> None:
    """Until no process asks for an exec's list summary (agent/summary_later.py)."""
    while True:
        busy = False
        for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
            try:
                busy |= b"gitsessions.agent.summary_later" in cmdline.read_bytes()
            except OSError:  # gone meanwhile
                continue
        if not busy:
            return
        time.sleep(0.02)


def _process_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def chat_prompt(
    cmd: list[str], env: dict[str, str], cwd: Path, until: re.Pattern[str] = PROMPT
) -> Callable[[], Sample]:
    def once() -> Sample:
        start = time.perf_counter()
        child = pexpect.spawn(
            cmd[0], cmd[1:], env=env, encoding="utf-8", timeout=60, cwd=str(cwd),
            dimensions=(50, 120),
        )  # fmt: skip
        child.expect(until)
        seconds = time.perf_counter() - start
        cpu = _process_cpu(child.pid)
        child.sendeof()
        child.expect(pexpect.EOF)
        child.wait()
        return seconds, cpu

    return once


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--json", type=Path, default=ROOT / "bench" / "results" / "startup.json")
    args = parser.parse_args()

    python = sys.executable
    tmp = Path(tempfile.mkdtemp(prefix="gitsessions-startup-"))
    workspace = tmp / "project"
    workspace.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITSESSIONS_", "OPENAI_"))}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # measure what a user runs: cached bytecode
    env.update(GITSESSIONS_HOME=str(tmp / "home"), TERM="xterm", COLUMNS="120", LINES="50")
    gs = [python, "-m", "gitsessions"]  # run in `tmp`: the installed package, not ./gitsessions
    results: dict[str, Sample] = {}
    with FakeOpenAI() as server:
        server.models = ["fake-model"]
        model = ["--base-url", server.base_url, "--model", "fake-model"]
        exec_cmd = [*gs, "exec", "hello", *model, "--workspace", str(workspace)]
        for _ in range(3):
            timed(exec_cmd, env, tmp)()
        listed = subprocess.run(
            [*gs, "list", "--json"], env=env, capture_output=True, check=True, cwd=tmp
        )
        session = json.loads(listed.stdout)[0]["id"][:8]
        commands: dict[str, Callable[[], Sample]] = {
            "floor": timed([python, "-c", "import typer, rich"], env, tmp),
            "--help": timed([*gs, "--help"], env, tmp),
            "list": timed([*gs, "list"], env, tmp),
            "info": timed([*gs, "info", session], env, tmp),
            "show": timed([*gs, "show", session], env, tmp),
            "log": timed([*gs, "log", session], env, tmp),
            "chat": chat_prompt([*gs, "chat", *model, "--workspace", str(workspace)], env, tmp),
            "resumed": chat_prompt(
                [*gs, "chat", "--resume", session, *model, "--workspace", str(workspace)], env, tmp
            ),
            # no goal: until the line editor reads the keys typed since the prompt showed
            "chat ed": chat_prompt(
                [*gs, "chat", *model, "--workspace", str(workspace)], env, tmp, READY
            ),
        }
        for name, once in commands.items():
            results[name] = median_of(args.runs, once)
            print(f"  {name}: {results[name][0]:.3f} s, {results[name][1]:.3f} s CPU",
                  file=sys.stderr)  # fmt: skip
        # exec's goal is a difference of two long runs: they alternate (with the bare SDK
        # turn), so that a change in the machine's load falls on all alike
        sdk_turn = SDK_TURN.format(url=server.base_url)
        rounds = in_turn(
            args.runs,
            timed([python, "-c", "import typer, rich, openai"], env, tmp),
            timed(exec_cmd, env, tmp),
            timed([python, "-c", sdk_turn], env, tmp),
        )
        for i, name in enumerate(("openai", "exec", "sdk turn")):
            results[name] = medians(r[i] for r in rounds)
        pairs = [(r[0], r[1]) for r in rounds]
        rest = statistics.median(e[0] - o[0] for o, e in pairs)
        rest_cpu = statistics.median(e[1] - o[1] for o, e in pairs)
        sdk_rest = statistics.median(r[2][0] - r[0][0] for r in rounds)
        print(f"  exec: {results['exec'][0]:.3f} s, the rest {rest:.3f} s", file=sys.stderr)

    floor, floor_cpu = results["floor"]
    rows = []
    print(f"\nmedian of {args.runs} runs; floor = python -c 'import typer, rich'; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs\n")  # fmt: skip
    header = ("command", "wall s", "x floor", "CPU s", "x floor", "goal")
    print("{:<8} {:>7} {:>8} {:>7} {:>8} {:>5}  ok".format(*header))
    for name, (seconds, cpu) in results.items():
        ratio, cpu_ratio = seconds / floor, cpu / floor_cpu if floor_cpu else float("nan")
        goal = GOALS.get(name)
        ok = None if goal is None else ratio <= goal
        if name == "exec":  # an absolute goal, shown as a ratio of this run's floor
            goal = (results["openai"][0] + EXEC_BEYOND_OPENAI) / floor
            ok = rest <= EXEC_BEYOND_OPENAI
        rows.append({"command": name, "seconds": round(seconds, 4), "ratio": round(ratio, 2),
                     "cpu_seconds": round(cpu, 4), "cpu_ratio": round(cpu_ratio, 2),
                     "goal": goal, "ok": ok})  # fmt: skip
        goal_text = f"{goal:.1f}x" if goal else ""
        mark = "" if ok is None else ("yes" if ok else "NO")
        print(f"{name:<8} {seconds:>7.3f} {ratio:>7.2f}x {cpu:>7.3f} {cpu_ratio:>7.2f}x "
              f"{goal_text:>5}  {mark}")  # fmt: skip
    print(
        f"\nexec's parts (wall): floor {floor:.3f} s, import openai "
        f"{results['openai'][0] - floor:.3f} s, the rest {rest:.3f} s ({rest_cpu:.3f} s CPU; "
        f"the median of {args.runs} exec-minus-openai pairs, goal: at most "
        f"{EXEC_BEYOND_OPENAI:.3f} s); a bare SDK turn takes {sdk_rest:.3f} s beyond "
        "import openai"
    )
    args.json.parent.mkdir(parents=True, exist_ok=True)
    report = {
        "runs": args.runs,
        "python": sys.version.split()[0],
        "load_average": os.getloadavg()[0],
        "exec_rest_seconds": round(rest, 4),
        "exec_rest_cpu_seconds": round(rest_cpu, 4),
        "sdk_turn_rest_seconds": round(sdk_rest, 4),
        "results": rows,
    }
    args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
