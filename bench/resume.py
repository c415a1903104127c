"""Resume cost vs. session length: `exec --resume` of a session of N transcript messages,
timed from the process start to the first model request (the fake server on 127.0.0.1
notes when it arrives), with the process's peak RSS. A section of `bench/store.py`.

The sessions are written by the store as an import would write them (chunks of 256
lines), with the working context the last messages, as after compactions; the budget is
set high so that no compaction runs: what is measured is reading the session.
"""

import multiprocessing
import os
import time
from pathlib import Path
from typing import Any

from gitsessions.store.sessions import Change, SessionStore


def measure(cmd: list[str], server: Any, env: dict[str, str], bench: Any) -> tuple[float, float]:
    """(seconds from spawn to the first request, peak RSS MB of the process)."""
    seen = len(server.requests)
    start = time.perf_counter()
    done = bench.spawn_measured(cmd, env)
    first = None
    while first is None:
        if len(server.requests) > seen:
            first = time.perf_counter() - start
        elif done.poll() is not None:
            raise RuntimeError(f"exec ended before a request: {bench.measured_result(done)!r}")
        else:
            time.sleep(0.0005)
    _seconds, code, rss, error = bench.measured_result(done)
    if code:
        raise RuntimeError(f"exec failed: {error!r}")
    return first, rss


def build(home: Path, n: int, bench: Any) -> None:
    """A session of `n` transcript messages in `home`; its id in `home/id`."""
    store = SessionStore(home, background_maintenance=False)
    gen = bench.Messages(bench.SEED + 7)
    system = {"role": "system", "content": "You are a coding agent."}
    stream = [system, *gen.stream(n - 1)]
    context = [system, *stream[1:][-bench.CONTEXT_KEEP :]]
    head = store.create(
        bench.make_header(gen, f"resume {n}"), Change(context=context, append=stream)
    )
    store.close()
    (home / "id").write_text(head.id)


def section_resume(
    cfg: dict[str, Any], work: Path, res: dict[str, Any], save: Any, bench: Any
) -> None:
    from tests.fake_openai import FakeOpenAI

    res["rows"] = []
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITSESSIONS_")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: imports read cached bytecode
    env["HOME"] = str(work)
    for n in cfg["resume_ns"]:
        home = work / f"resume-{n}"
        t = time.perf_counter()
        # built in a process of its own: a child forked from one holding 200k messages
        # would count them in its peak RSS until it execs
        context = multiprocessing.get_context("fork")
        builder = context.Process(target=build, args=(home, n, bench))
        builder.start()
        builder.join()
        session_id = (home / "id").read_text()
        row: dict[str, Any] = {"n": n, "build_s": time.perf_counter() - t}
        res["rows"].append(row)
        firsts: list[float] = []
        rss: list[float] = []
        with FakeOpenAI() as server:
            cmd = [
                *bench.cli_command(), "--home", str(home), "exec", "--resume", session_id,
                "--base-url", server.base_url, "--model", "m", "--workspace", str(work),
                "--max-context-tokens", "1000000", "go on",
            ]  # fmt: skip
            for _ in range(cfg["resume_reps"]):
                first, peak = measure(cmd, server, env, bench)
                firsts.append(first)
                rss.append(peak)
        row["first_request"] = bench.summary_ms(firsts)
        row["rss_mb"] = max(rss)
        row["rss_each_mb"] = [round(r) for r in rss]
        row["first_each_ms"] = [round(f * 1000) for f in firsts]
        save()
    small, large = res["rows"][0], res["rows"][-1]
    res["ratio"] = large["first_request"]["median_ms"] / small["first_request"]["median_ms"]
    res["rss_mb"] = large["rss_mb"]


def report(res: dict[str, Any], bench: Any) -> str:
    rows = [
        [
            f"{r['n']:,}",
            bench.ms(r["first_request"]["median_ms"]),
            bench.ms(r["first_request"]["max_ms"]),
            f"{r['rss_mb']:.0f} MB",
        ]
        for r in res.get("rows", [])
    ]
    return bench.table(
        "6. exec --resume: process start to the first model request",
        ["messages", "median", "max", "peak RSS"],
        rows,
    )
