"""`import --from claude-code|codex`: sessions of 1k, 10k and 100k source lines in each
format, the first import and a re-import after 10 new lines: seconds and peak RSS; and
a Claude Code file with one 60 MB line of nested empty objects (`{"x":[{},{},...]}`,
which `json.loads` would need about 2 GB for), skipped as damage.

Goals (issue 30): the first import of 100k lines under 150 MB peak RSS, a re-import
after 10 new lines about a second, the 60 MB line's import under 200 MB. Issue 39 adds
`claude-code-rewinds`: a turn left every 100 turns, each a branch imported as a fork.

    uv run python bench/import.py                  # all sizes; a few minutes
    uv run python bench/import.py --sizes 1000     # smoke test

Each import runs the real CLI in a child process (peak RSS from `wait4`), against a
fresh store in a temporary directory. The sources are written to the shapes the tests'
fixtures use (tests/import_fixtures.py): Claude Code turns of a prompt, a reply split
over lines with a tool call, its result (about 2 KB) and a closing reply, a compaction
every 2,000 lines; Codex turns of the same size. Prints a table and writes
bench/results/import.json.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.import_fixtures import ClaudeFile  # noqa: E402

RESULT = "lorem ipsum dolor sit amet, " * 70  # ~2 KB of tool output
REWINDS = "claude-code-rewinds"  # Claude Code, a turn left every REWIND turns (forks)
REWIND = 100


def claude_source(path: Path, lines: int, rewind: int = 0) -> ClaudeFile:
    """Turns of Claude Code's; with `rewind`, every that many turns the turn before is
    left (the turn goes on from the one before that): a branch, a fork."""
    f = ClaudeFile(path)
    turn = 0
    before: str | None = None  # where the turn before began
    while len(f.lines) < lines:
        turn += 1
        if rewind and turn % rewind == 0:
            f.last = before
        before = f.last
        if turn % 400 == 0:  # ~2,000 lines: a compaction
            boundary = f.chained(
                "system", None, parentUuid=None, subtype="compact_boundary",
                logicalParentUuid=f.last, compactMetadata={"trigger": "auto", "preTokens": 150000},
            )  # fmt: skip
            f.last = boundary
            f.chained(
                "user", {"role": "user", "content": f"Summary {turn}."}, isCompactSummary=True
            )
        claude_turn(f, turn)
    return f


def claude_turn(f: ClaudeFile, turn: int) -> None:
    f.prompt(f"step {turn}: look at module {turn}")
    tool = {
        "type": "tool_use",
        "id": f"toolu_{turn}",
        "name": "Read",
        "input": {"file_path": f"m{turn}.py"},
    }
    f.reply(f"msg_{turn}a", [{"type": "text", "text": "Reading it."}, tool], stop="tool_use")
    f.results((f"toolu_{turn}", RESULT))
    f.reply(f"msg_{turn}b", [{"type": "text", "text": f"Module {turn} is fine."}], stop="end_turn")


def codex_source(path: Path, lines: int) -> list[str]:
    out: list[str] = [
        codex_line("session_meta", {"id": "0199a213-0000-7000-8000-000000000001", "cwd": "/w"}, 0)
    ]
    turn = 0
    while len(out) < lines:
        turn += 1
        out += codex_turn(turn)
    path.write_text("".join(x + "\n" for x in out))
    return out


def codex_line(kind: str, payload: dict[str, Any], n: int) -> str:
    return json.dumps(
        {
            "timestamp": f"2026-10-02T10:{n // 60 % 60:02d}:{n % 60:02d}.000Z",
            "type": kind,
            "payload": payload,
        }
    )


def codex_turn(turn: int) -> list[str]:
    if turn % 400 == 0:
        extra = [codex_line("compacted", {"message": f"Summary {turn}."}, turn)]
    else:
        extra = []
    return [
        *extra,
        codex_line(
            "response_item",
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": f"step {turn}"}],
            },
            turn,
        ),
        codex_line(
            "response_item",
            {
                "type": "function_call",
                "name": "shell",
                "arguments": '{"command":["ls"]}',
                "call_id": f"c{turn}",
            },
            turn,
        ),
        codex_line(
            "event_msg",
            {
                "type": "token_count",
                "info": {"last_token_usage": {"input_tokens": 9, "output_tokens": 1}},
            },
            turn,
        ),
        codex_line(
            "response_item",
            {"type": "function_call_output", "call_id": f"c{turn}", "output": RESULT},
            turn,
        ),
        codex_line(
            "response_item",
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "ok"}],
            },
            turn,
        ),
        codex_line(
            "event_msg",
            {
                "type": "token_count",
                "info": {"last_token_usage": {"input_tokens": 9, "output_tokens": 1}},
            },
            turn,
        ),
    ]


def run(home: Path, *args: str) -> tuple[float, float, str]:
    """Seconds, peak RSS (MB, of that child alone: `wait4`) and stdout of one CLI run."""
    env = {**os.environ, "GITSESSIONS_HOME": str(home)}
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "gitsessions", *args], env=env, cwd=ROOT, stdout=out, stderr=err
        )
        _pid, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if proc.returncode:
            raise SystemExit(f"{args} failed: {err.read().decode()[-2000:]}")
        return seconds, usage.ru_maxrss / 1024, out.read().decode()


def write_sources(fmt: str, lines: int, path: Path) -> None:
    """`path` with `lines` lines, and `path.more` the same with 10 more (a child process
    writes them: the bench's own memory stays small, so a child's peak RSS is its own)."""
    if fmt.startswith("claude-code"):
        f = claude_source(path, lines, REWIND if fmt == REWINDS else 0)
        f.write()
        for n in range(10_000_000, 10_000_002):
            claude_turn(f, n)  # 2 turns of 5 lines
        f.path = path.with_suffix(".more")
        f.write()
    else:
        codex = codex_source(path, lines)
        more = codex_turn(10_000_000) + codex_turn(10_000_001)
        path.with_suffix(".more").write_text("".join(x + "\n" for x in [*codex, *more[:10]]))


def measure(tmp: Path, fmt: str, lines: int) -> dict[str, Any]:
    home = tmp / f"home-{fmt}-{lines}"
    path = tmp / f"{fmt}-{lines}.jsonl"
    subprocess.run(
        [sys.executable, __file__, "--write", fmt, str(lines), str(path)], check=True, cwd=ROOT
    )
    size = path.stat().st_size
    source = "claude-code" if fmt == REWINDS else fmt
    first = run(home, "import", "--from", source, str(path))
    path.with_suffix(".more").replace(path)
    again = run(home, "import", "--from", source, str(path))
    return {
        "format": fmt,
        "lines": lines,
        "bytes": size,
        "first": {"seconds": first[0], "rss_mb": first[1], "out": first[2].strip()},
        "again": {"seconds": again[0], "rss_mb": again[1], "out": again[2].strip()},
    }


def measure_wide(tmp: Path, megabytes: int = 60) -> dict[str, Any]:
    """A file of a prompt, one line of `megabytes` MB of `{},` and a reply."""
    home = tmp / "home-wide"
    path = tmp / "wide.jsonl"
    f = ClaudeFile(path)
    f.prompt("hello")
    f.reply("msg_1", [{"type": "text", "text": "Hi."}], stop="end_turn")
    with open(path, "wb") as out:
        out.write((f.lines[0] + "\n").encode())
        out.write(b'{"type":"file-history-snapshot","x":[')
        count = megabytes * 2**20 // 3
        chunk = b"{}," * 100_000
        for _ in range(count // 100_000):
            out.write(chunk)
        out.write(b"{}]}\n")
        out.write((f.lines[1] + "\n").encode())
    size = path.stat().st_size
    seconds, rss, out_text = run(home, "import", "--from", "claude-code", str(path), "--json")
    [outcome] = json.loads(out_text)
    return {
        "bytes": size,
        "seconds": seconds,
        "rss_mb": rss,
        "damaged": outcome["damaged"],
        "messages": outcome["messages"],
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "import.json"))
    parser.add_argument("--write", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--wide-mb", type=int, default=60, help="the one long line's MB")
    parser.add_argument("--formats", default=f"claude-code,codex,{REWINDS}")
    args = parser.parse_args()
    if args.write:
        write_sources(args.write[0], int(args.write[1]), Path(args.write[2]))
        return
    sizes = [int(s) for s in args.sizes.split(",")]
    results = []
    with tempfile.TemporaryDirectory(prefix="gs-bench-import-") as tmp:
        for fmt in args.formats.split(","):
            for lines in sizes:
                results.append(measure(Path(tmp), fmt, lines))
                r = results[-1]
                print(
                    f"{fmt:19} {lines:>7} lines {r['bytes'] / 2**20:7.1f} MB | first"
                    f" {r['first']['seconds']:7.2f} s {r['first']['rss_mb']:6.0f} MB | again"
                    f" {r['again']['seconds']:7.2f} s {r['again']['rss_mb']:6.0f} MB"
                    f" | {r['again']['out'].split(chr(9))[1:3]}",
                    flush=True,
                )
        wide = measure_wide(Path(tmp), args.wide_mb)
        print(
            f"{'claude-code':12} one {wide['bytes'] / 2**20:.0f} MB line of {{}}s:"
            f" {wide['seconds']:7.2f} s {wide['rss_mb']:6.0f} MB | {wide['messages']} messages,"
            f" damaged {[(d['line'], d['reason']) for d in wide['damaged']]}",
            flush=True,
        )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    report = {"load": os.getloadavg(), "results": results, "wide_line": wide}
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
