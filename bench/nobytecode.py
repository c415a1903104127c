"""Start-up without writing bytecode: `exec` of an installed gitsessions where
PYTHONDONTWRITEBYTECODE is set (many container images set it), against a bare
`python -c "import openai"` run the same way.

Where that variable is set, Python never writes a `__pycache__`: a package installed
without compiled bytecode is compiled again at every start. The README's install
(`uv tool install --compile-bytecode .`) compiles it once, at install time; `uv tool
install .` alone compiles nothing (uv does not read a project's `[tool.uv]
compile-bytecode` for a tool install). This bench installs this checkout both ways into
temporary tool folders (UV_TOOL_DIR, UV_TOOL_BIN_DIR; `--offline`: uv's cache must hold
the dependencies, as for tests/test_install.py) and times, with PYTHONDONTWRITEBYTECODE=1:

- `floor`: the tool's own Python running `import openai` (the same interpreter and
  site-packages as the installed command);
- `exec`: the installed `gitsessions exec` of one turn against tests/fake_openai.py
  (which answers at once), in a temp home, the list summary off.

Invariant: every number is the median of `--runs` (default 5) rounds, each running the
floor and exec of one install one after the other (a change in the machine's load falls
on both alike), after one warm-up round (the page cache, not bytecode: none is written).
Goal (issue 41): exec to its reply within 1.5 s of the floor, with the README's install.

    uv run python bench/nobytecode.py [--runs 5] [--json bench/results/nobytecode.json]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fake_openai import FakeOpenAI  # noqa: E402

GOAL_BEYOND_FLOOR = 1.5  # seconds exec may take beyond `python -c "import openai"`
INSTALLS = {"plain": [], "compiled": ["--compile-bytecode"]}  # uv tool install's flags


def install(tmp: Path, name: str, flags: list[str]) -> tuple[Path, Path]:
    """This checkout installed with `flags`: (its gitsessions command, its Python)."""
    tools, bins = tmp / f"{name}-tools", tmp / f"{name}-bin"
    env = dict(os.environ, UV_TOOL_DIR=str(tools), UV_TOOL_BIN_DIR=str(bins))
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # the install compiles what its flags say
    uv = os.environ.get("UV") or shutil.which("uv") or "uv"
    subprocess.run(
        [uv, "tool", "install", "--offline", *flags, str(ROOT)],
        env=env, check=True, capture_output=True, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    return bins / "gitsessions", tools / "gitsessions" / "bin" / "python"


def timed(cmd: list[str], env: dict[str, str], cwd: Path) -> float:
    start = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, cwd=cwd, stdin=subprocess.DEVNULL)
    seconds = time.perf_counter() - start
    if done.returncode:
        raise RuntimeError(f"{cmd[1:3]} failed: {done.stderr.decode()[-500:]}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", type=Path, default=ROOT / "bench" / "results" / "nobytecode.json")
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="gitsessions-nobytecode-"))
    workspace = tmp / "project"
    workspace.mkdir()
    home = tmp / "home"
    home.mkdir(mode=0o700)
    (home / "config.toml").write_text('exec_summary = "off"\n', encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITSESSIONS_", "OPENAI_"))}
    env.update(GITSESSIONS_HOME=str(home), PYTHONDONTWRITEBYTECODE="1")
    results: dict[str, dict[str, float]] = {}
    try:
        with FakeOpenAI() as server:
            server.models = ["fake-model"]
            for name, flags in INSTALLS.items():
                command, python = install(tmp, name, flags)
                exec_cmd = [str(command), "exec", "hello", "--base-url", server.base_url,
                            "--model", "fake-model", "--workspace", str(workspace)]  # fmt: skip
                floor_cmd = [str(python), "-c", "import openai"]
                rounds = [
                    (timed(floor_cmd, env, tmp), timed(exec_cmd, env, tmp))
                    for _ in range(args.runs + 1)
                ][1:]  # the first round warms the page cache
                floor = statistics.median(r[0] for r in rounds)
                exec_s = statistics.median(r[1] for r in rounds)
                beyond = statistics.median(r[1] - r[0] for r in rounds)
                results[name] = {"floor": floor, "exec": exec_s, "beyond": beyond}
                print(f"  {name}: floor {floor:.3f} s, exec {exec_s:.3f} s", file=sys.stderr)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    print(f"\nPYTHONDONTWRITEBYTECODE=1; median of {args.runs} rounds; load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs\n")  # fmt: skip
    print(f"{'install':<9} {'openai s':>8} {'exec s':>7} {'beyond':>7} {'goal':>5}  ok")
    rows = []
    for name, r in results.items():
        ok = r["beyond"] <= GOAL_BEYOND_FLOOR if name == "compiled" else None
        goal = f"{GOAL_BEYOND_FLOOR:.1f}" if ok is not None else ""
        mark = "" if ok is None else ("yes" if ok else "NO")
        print(f"{name:<9} {r['floor']:>8.3f} {r['exec']:>7.3f} {r['beyond']:>7.3f} {goal:>5}  "
              f"{mark}")  # fmt: skip
        rows.append({"install": name, "flags": INSTALLS[name],
                     **{k: round(v, 4) for k, v in r.items()}, "ok": ok})  # fmt: skip
    args.json.parent.mkdir(parents=True, exist_ok=True)
    report = {
        "runs": args.runs,
        "python": sys.version.split()[0],
        "load_average": os.getloadavg()[0],
        "goal_beyond_floor_seconds": GOAL_BEYOND_FLOOR,
        "results": rows,
    }
    args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
