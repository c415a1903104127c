"""Compaction quality bench (issue 47): how many planted facts a continuing agent still
reads after `gitsessions compact`, and which part of the context keeps each.

Invariant: each run stores a planted-fact session (bench/quality_cart.py, quality_ingest.py,
quality_retry.py: 58-66 messages, 22 facts each) in a fresh home through the store's API,
compacts it by running the `gitsessions compact` command in process (the CLI's own
settings, client, budget and summarizer), and scores the context the compaction committed
(bench/quality_scoring.py): facts kept by the ledger, by the user's words (when the note
carries them), by the summary (zero when it is over 40% of its input: the echo guard),
and by the last turn kept verbatim. Context tokens before and after are counted with the
agent's tool schemas. Nothing outside the temporary homes is written but the JSON report.

Summarizers:
- `control`: the fake server (tests/fake_openai.py) answering each session's hand-written
  control summary, which must score every fact (else the bench fails: the scoring broke);
- `fake`: the fake server answering a summary that forgets everything;
- `smollm2`: SmolLM2-135M-Instruct served by llama.cpp through node-llama-cpp
  (tests/llama_server.mjs), as `.ci/install-test-tools` installs it;
- `qwen`: Qwen2.5-Coder-0.5B-Instruct Q4_K_M, once `.ci/install-test-tools --bench` has
  fetched it;
- `--replay NAME=FILE`: the replies a model wrote in an earlier run (the llama server's
  request log, `--keep-requests`), answered by the fake server to the same requests, so
  a change to the note's deterministic parts is scored against the same summaries without
  running the model again; a request that is not in the log fails its row (the
  summarizer's input changed), and each row says `replayed`.

The JSON is written again after each row, so a run stopped early keeps what it measured
(`"complete": false`).

    uv run python bench/compaction_quality.py                          # control and fake
    uv run python bench/compaction_quality.py --summarizers smollm2,qwen --runs 3
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench import quality_cart, quality_ingest, quality_retry  # noqa: E402
from bench.quality_scoring import ECHO_SHARE, PARTS, score, split_context  # noqa: E402
from bench.quality_sessions import Planted, store_session  # noqa: E402
from gitsessions.services.tools import BUILTIN_TOOLS, SESSION_TOOLS  # noqa: E402
from gitsessions.store.background import wait_for_maintenance  # noqa: E402
from gitsessions.store.sessions import SessionStore  # noqa: E402
from gitsessions.values.tokens import TokenCounter  # noqa: E402
from tests.fake_openai import FakeOpenAI  # noqa: E402

SESSIONS: dict[str, Callable[[], Planted]] = {
    "cart": quality_cart.build,
    "ingest": quality_ingest.build,
    "retry": quality_retry.build,
}
FORGETFUL = (
    "The user and the assistant worked on the code together. Some changes were made and "
    "some commands were run. The work continues."
)
MODELS = {
    "smollm2": "SmolLM2-135M-Instruct.Q4_1.gguf",
    "qwen": "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
}
RATIO_GOAL = 0.6
TOOLS = [*BUILTIN_TOOLS, *SESSION_TOOLS.values()]


class Server:
    """A summarizer's endpoint: its base URL, model name and the requests it served."""

    def __init__(self, base_url: str, model: str, requests: Callable[[], list[dict[str, Any]]]):
        self.base_url, self.model, self.requests = base_url, model, requests
        self.missed_count: Callable[[], int] = lambda: 0  # replayed: requests not in the log


@contextmanager
def fake_server(answer: Callable[[dict[str, Any]], str]) -> Iterator[Server]:
    with FakeOpenAI() as server:
        server.responder = answer
        yield Server(server.base_url, "fake-summarizer", lambda: list(server.requests))


@contextmanager
def replay_server(log: Path) -> Iterator[Server]:
    """The fake server answering each request with the reply recorded for it in `log`."""
    replies: dict[str, str] = {}
    for line in log.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        key = json.dumps(entry["request"]["messages"], sort_keys=True)
        replies[key] = str(entry["reply"]["content"])
    missed: list[int] = []

    def answer(request: dict[str, Any]) -> str:
        found = replies.get(json.dumps(request["messages"], sort_keys=True))
        if found is None:
            missed.append(1)
            return ""  # an empty summary: compaction refuses it and commits nothing
        return found

    with fake_server(answer) as server:
        server.missed_count = lambda: len(missed)
        yield server


@contextmanager
def llama_server(
    tools: Path,
    model: str,
    threads: int,
    context: int,
    max_tokens: int,
    keep: Path | None = None,
) -> Iterator[Server]:
    node = shutil.which("node")
    modules, gguf = tools / "npm" / "node_modules", tools / "models" / model
    if node is None or not (modules / "node-llama-cpp").is_dir() or not gguf.is_file():
        raise SystemExit(
            f"{gguf.name} or node-llama-cpp missing under {tools}: run "
            "`bash .ci/install-test-tools --bench`"
        )
    folder = Path(tempfile.mkdtemp(prefix="quality-llama-"))
    log = folder / "requests.jsonl"
    with (folder / "stderr.txt").open("wb") as stderr:
        child = subprocess.Popen(
            [
                node,
                str(REPO / "tests" / "llama_server.mjs"),
                "--modules",
                str(modules),
                "--model",
                str(gguf),
                "--threads",
                str(threads),
                "--context",
                str(context),
                "--max-tokens",
                str(max_tokens),
                "--requests",
                str(log),
            ],
            stdout=subprocess.PIPE,
            stderr=stderr,
            stdin=subprocess.DEVNULL,
            text=True,
        )
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        if not line.startswith("listening "):
            raise SystemExit(f"llama server did not start: {(folder / 'stderr.txt').read_text()}")

        def served() -> list[dict[str, Any]]:
            lines = log.read_text().splitlines() if log.exists() else []
            return [json.loads(line)["request"] for line in lines]

        yield Server(f"http://127.0.0.1:{line.split()[1]}/v1", gguf.stem, served)
    finally:
        child.terminate()
        child.wait(timeout=30)
        if keep is not None and log.exists():
            keep.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(log, keep)
        shutil.rmtree(folder, ignore_errors=True)


def compact_in_process(home: Path, sid: str, server: Server, max_context: int) -> int:
    """`gitsessions --home HOME compact SID ...` run by the CLI's own app, in process."""
    from gitsessions.cli.app import app

    args = [
        "--home",
        str(home),
        "compact",
        sid,
        "--base-url",
        server.base_url,
        "--model",
        server.model,
        "--max-context-tokens",
        str(max_context),
    ]
    code = app(args=args, prog_name="gitsessions", standalone_mode=False)
    return code if isinstance(code, int) else 0


def run_once(planted: Planted, server: Server, max_context: int, counter: TokenCounter) -> dict:
    """Store `planted` in a fresh home, compact it through the CLI, score the result."""
    row: dict[str, Any] = {"session": planted.name, "messages": len(planted.messages)}
    with tempfile.TemporaryDirectory(prefix="quality-home-") as folder:
        home = Path(folder)
        store = SessionStore(home)
        try:
            sid = store_session(store, planted)
        finally:
            store.close()
        served = len(server.requests())
        started = time.perf_counter()
        code = compact_in_process(home, sid, server, max_context)
        row["seconds"] = round(time.perf_counter() - started, 1)
        store = SessionStore(home)
        try:
            head = store.head(sid)
            context = store.read(head, "context")
            compactions = store.read(head, "compactions")
        finally:
            store.close()
        # the store's background maintenance may still be writing: the home goes after it
        wait_for_maintenance(home / "store.git")
    row["before_tokens"] = counter.count_context(planted.messages, TOOLS)
    row["after_tokens"] = counter.count_context(context, TOOLS)
    row["ratio"] = round(row["after_tokens"] / row["before_tokens"], 3)
    if code != 0 or not compactions:
        row.update(error=f"compact exited {code}", kept=0, total=len(planted.facts))
        return row
    summary = str(compactions[-1].get("summary") or "")
    asked = server.requests()[served:]
    request = asked[-1]["messages"] if asked else []
    input_tokens = counter.count_context(request) if request else 0
    summary_tokens = counter.count_text(summary)
    result = score(
        planted.facts,
        split_context(context, summary),
        summary_tokens=summary_tokens,
        input_tokens=input_tokens,
    )
    row.update(input_of(request))
    row.update(
        kept=len(result.kept),
        total=len(planted.facts),
        by_part=result.counts(),
        summary_tokens=summary_tokens,
        summary_input_tokens=input_tokens,
        summary_share=result.summary_share,
        echo=result.echo,
        missing=list(result.missing),
        kept_by_part={part: list(names) for part, names in result.by_part.items()},
        stages=compactions[-1].get("stages"),
        summary=summary,
    )
    return row


def input_of(request: list[dict[str, Any]]) -> dict[str, Any]:
    """What the summarizer was given: how many messages its JSON data held and how many
    of their texts were shortened ("[... N chars left out ...]") to fit its budget."""
    try:
        data = json.loads(request[-1]["content"])
        messages = data["messages"]
    except (IndexError, KeyError, TypeError, ValueError):
        return {"input_messages": None, "input_shortened": None}
    shortened = sum(
        json.dumps(m, ensure_ascii=False).count("chars left out ...]") for m in messages
    )
    return {"input_messages": len(messages), "input_shortened": shortened}


def summarizer_server(name: str, args: argparse.Namespace, planted: dict[str, Planted]):
    """The endpoint a summarizer is served from (a context manager)."""
    if name == "fake":
        return fake_server(lambda _request: FORGETFUL)
    if name == "control":

        def key(session: Planted) -> str:  # its first prompt, as the request's JSON has it
            return json.dumps(session.messages[1]["content"], ensure_ascii=False)[1:80]

        def control(request: dict[str, Any]) -> str:
            data = request["messages"][-1]["content"]
            found = [p for p in planted.values() if key(p) in data]
            return found[0].control if found else FORGETFUL

        return fake_server(control)
    if name in args.replay:
        return replay_server(args.replay[name])
    keep = args.keep_requests / f"{name}.jsonl" if args.keep_requests else None
    return llama_server(args.tools, MODELS[name], args.threads, args.context, args.max_tokens, keep)


def table(rows: list[dict[str, Any]]) -> str:
    head = (
        f"{'summarizer':<10} {'session':<7} {'run':>3} {'kept':>5}  "
        + " ".join(f"{p:>7}" for p in PARTS)
        + f" {'sum tok':>7} {'share':>6} {'before':>6} {'after':>6} {'ratio':>5} {'secs':>6}"
    )
    lines = [head, "-" * len(head)]
    for row in rows:
        lead = f"{row['summarizer']:<10} {row['session']:<7} {row['run']:>3}"
        if row.get("error"):
            lines.append(f"{lead}  FAILED: {row['error']}")
            continue
        parts = " ".join(f"{row['by_part'][p]:>7}" for p in PARTS)
        echo = "*" if row["echo"] else " "
        lines.append(
            f"{lead} {row['kept']:>2}/{row['total']:<2} {parts} {row['summary_tokens']:>7} "
            f"{row['summary_share']:>5.1%}{echo}{row['before_tokens']:>6} {row['after_tokens']:>6} "
            f"{row['ratio']:>5.2f} {row['seconds']:>6.1f}"
        )
    return "\n".join(lines)


def averages(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for name in dict.fromkeys(row["summarizer"] for row in rows):
        done = [r for r in rows if r["summarizer"] == name and not r.get("error")]
        if not done:
            out[name] = {"runs": 0}
            continue
        out[name] = {
            "runs": len(done),
            "failed": sum(1 for r in rows if r["summarizer"] == name and r.get("error")),
            "kept_mean": round(sum(r["kept"] for r in done) / len(done), 2),
            "kept_min": min(r["kept"] for r in done),
            "by_part_mean": {
                p: round(sum(r["by_part"][p] for r in done) / len(done), 2) for p in PARTS
            },
            "ratio_max": max(r["ratio"] for r in done),
            "seconds_mean": round(sum(r["seconds"] for r in done) / len(done), 1),
        }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--summarizers",
        default="control,fake",
        help="comma-separated: control, fake, smollm2, qwen",
    )
    parser.add_argument("--runs", type=int, default=1, help="runs per session and summarizer")
    parser.add_argument("--sessions", default=",".join(SESSIONS))
    parser.add_argument("--max-context-tokens", type=int, default=8000)
    parser.add_argument(
        "--tools",
        type=Path,
        default=REPO / ".cache" / "test-tools",
        help="where .ci/install-test-tools put node-llama-cpp and the models",
    )
    parser.add_argument(
        "--threads", type=int, default=1, help="llama.cpp threads (more than the free cores spin)"
    )
    parser.add_argument("--context", type=int, default=12288, help="llama.cpp context size")
    parser.add_argument(
        "--max-tokens",
        type=int,
        default=1024,
        help="the llama server's cap on a reply's tokens (gitsessions asks for 1024)",
    )
    parser.add_argument(
        "--timeout",
        type=int,
        default=1500,
        help="GITSESSIONS_TIMEOUT for the compaction's model requests (s)",
    )
    parser.add_argument(
        "--out", type=Path, default=REPO / "bench" / "results" / "compaction_quality.json"
    )
    parser.add_argument(
        "--keep-requests",
        type=Path,
        help="a folder to keep each model's request log in (NAME.jsonl), for --replay",
    )
    parser.add_argument(
        "--replay",
        action="append",
        default=[],
        metavar="NAME=FILE",
        help="answer NAME's requests with the replies recorded in FILE (a kept request log)",
    )
    args = parser.parse_args(argv)
    try:
        args.replay = {n: Path(f) for n, f in (item.split("=", 1) for item in args.replay)}
    except ValueError:
        parser.error("--replay takes NAME=FILE")
    args.summarizers = ",".join([*args.summarizers.split(","), *(
        n for n in args.replay if n not in args.summarizers.split(",")
    )])  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="quality-env-") as env:
        for name in [n for n in os.environ if n.startswith(("GITSESSIONS_", "OPENAI_"))]:
            del os.environ[name]
        os.environ.update(XDG_CONFIG_HOME=f"{env}/config", GITSESSIONS_TIMEOUT=str(args.timeout))
        return run(args)


def write_report(
    args: argparse.Namespace, counter: TokenCounter, rows: list[dict[str, Any]], complete: bool
) -> None:
    report = {
        "time": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "complete": complete,
        "max_context_tokens": args.max_context_tokens,
        "token_count": counter.method,
        "echo_share": ECHO_SHARE,
        "ratio_goal": RATIO_GOAL,
        "summary": averages(rows),
        "rows": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def run(args: argparse.Namespace) -> int:
    planted = {name: SESSIONS[name]() for name in args.sessions.split(",")}
    counter = TokenCounter()
    rows: list[dict[str, Any]] = []
    for name in args.summarizers.split(","):
        with summarizer_server(name, args, planted) as server:
            # the fake and a replay answer the same every time
            runs = 1 if name in ("control", "fake", *args.replay) else args.runs
            for run_number in range(1, runs + 1):
                for session in planted.values():
                    missed = server.missed_count()
                    row = run_once(session, server, args.max_context_tokens, counter)
                    if name in args.replay:
                        row["replayed"] = str(args.replay[name])
                        if server.missed_count() > missed:
                            row["error"] = "replay: the summarizer's input is not in the log"
                    rows.append({"summarizer": name, "run": run_number, **row})
                    print(table(rows[-1:]).splitlines()[-1], file=sys.stderr, flush=True)
                    write_report(args, counter, rows, complete=False)
    print(
        f"max_context_tokens {args.max_context_tokens}; token count {counter.method}; tools "
        f"counted in before/after; * = echo guard (summary over {ECHO_SHARE:.0%} of its input)"
    )
    print(table(rows))
    for name, figures in averages(rows).items():
        print(f"{name}: {json.dumps(figures)}")
    control_ok = all(
        r["kept"] == r["total"] and r["by_part"]["summary"] == r["total"]
        for r in rows
        if r["summarizer"] == "control" and not r.get("error")
    )
    write_report(args, counter, rows, complete=True)
    print(f"wrote {args.out}", file=sys.stderr)
    if not control_ok:
        print(
            "the control summary did not score every fact: the scoring is broken", file=sys.stderr
        )
        return 1
    return 0 if not any(r.get("error") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
