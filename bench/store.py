"""Store bench: commit cost vs. length, fork, list, size after gc, plain-file baselines.

Everything runs in one temporary directory made at run time (removed at the end unless
--keep); nothing else is touched. Message content is generated from a fixed seed, so runs
are comparable. Each section runs in a child process with a time limit: a pathological
case is reported as a timeout (with whatever it measured so far) instead of hanging.

Setup shortcuts, reported in the output: sections 1-3 build their sessions with the
store's automatic packing switched off (it is measured in section 4, where it runs as
in real use), and section 4b replays section 4 without it to give reference sizes.

    uv run python bench/store.py --quick      # smoke test, well under a minute
    uv run python bench/store.py              # full run, minutes (timeouts are reported)
    uv run python bench/store.py --only commit,fork --out /tmp/store.json
"""

import argparse
import contextlib
import json
import multiprocessing
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import dulwich
from dulwich.pack import load_pack_index

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench import resume  # noqa: E402
from gitsessions.store import maintenance  # noqa: E402
from gitsessions.store.background import wait_for_maintenance  # noqa: E402
from gitsessions.store.catalog import Catalog  # noqa: E402
from gitsessions.store.chunks import FANOUT  # noqa: E402
from gitsessions.store.sessions import Change, Head, SessionStore, touch  # noqa: E402
from gitsessions.values.canonical import dumps_line  # noqa: E402
from gitsessions.values.records import add_usage, empty_workspace, new_header  # noqa: E402

SEED = 20250101
CONTEXT_KEEP = 40  # messages kept in context.json, as compaction would keep them
MODEL = "gpt-4o-mini"
CREATED = "2025-01-01T00:00:00Z"

FULL: dict[str, Any] = {
    "ns": [100, 1_000, 10_000, 100_000],
    "commit_reps": 20,
    "json_reps": {100: 20, 1_000: 20, 10_000: 10, 100_000: 3},
    "fork_n": 10_000,
    "fork_reps": 20,
    "sessions": 10_000,
    "list_reps": 5,
    "cli_reps": 3,
    "turns": 1_000,
    "delete_reps": 3,
    "resume_ns": [10, 200_000],
    "resume_reps": 10,
    "timeout": {
        "resume": 900,
        "commit": 900,
        "fork": 300,
        "list": 900,
        "size": 900,
        "size_ref": 600,
        "maintenance": 900,
    },
}
QUICK: dict[str, Any] = {
    "ns": [100, 1_000, 10_000],
    "commit_reps": 5,
    "json_reps": {100: 5, 1_000: 5, 10_000: 3},
    "fork_n": 10_000,
    "fork_reps": 5,
    "sessions": 300,
    "list_reps": 3,
    "cli_reps": 1,
    "turns": 20,
    "delete_reps": 2,
    "resume_ns": [10, 10_000],
    "resume_reps": 3,
    "timeout": {
        "resume": 120,
        "commit": 60,
        "fork": 60,
        "list": 60,
        "size": 60,
        "size_ref": 60,
        "maintenance": 120,
    },
}
GOALS = {
    "commit_ratio": 1.5,
    "fork_ms": 50.0,
    "fork_bytes": 2048,
    "list_s": 0.5,
    "size": 1.0,
    "step_bytes": 2048,
    "resume_ratio": 1.5,
    "resume_mb": 150.0,
    "commit_max_ms": 100.0,
    "delete_s": 2.0,
    "delete_mb": 100.0,
}

# -- deterministic, realistic content ------------------------------------------------------

_WORDS = """\
the a to of and in is it that for on with this we be as are not file function
test error value return call module config path line change fix update add remove check
should would could need use make run build read write parse load save open close list dict
string number session commit branch store tree blob object index cache lock retry timeout
request response model token context message transcript segment header usage plan pin
compact fork delete archive import export workspace project repo diff patch apply search
result output input argument option flag default missing invalid expected actual failing
passing coverage benchmark latency memory disk size bytes ratio median window delta pack
loose ref head parent child user assistant tool system prompt reply step next first last
because however instead before after while when then also only still just again maybe
handler client server queue worker thread process signal socket buffer stream chunk frame
schema migration column table query row field record entry key count limit offset page
"""
WORDS = _WORDS.split()
TOOLS = ["read_file", "run_command", "apply_patch", "search_code", "list_dir", "write_file"]
EXTS = ["py", "toml", "md", "json", "rs", "ts", "yaml"]


class Messages:
    """Chat messages (user, assistant tool call, tool result, assistant reply), seeded."""

    def __init__(self, seed: int) -> None:
        self.r = random.Random(seed)

    def hexid(self, n: int) -> str:
        return f"{self.r.getrandbits(4 * n):0{n}x}"

    def ident(self) -> str:
        r = self.r
        name = "_".join(r.choice(WORDS) for _ in range(r.randint(1, 3)))
        return name + (str(r.randint(0, 99)) if r.random() < 0.3 else "")

    def path(self) -> str:
        r = self.r
        parts = [r.choice(WORDS) for _ in range(r.randint(1, 3))]
        return "/".join([*parts, f"{self.ident()}.{r.choice(EXTS)}"])

    def sentence(self) -> str:
        r = self.r
        words = [r.choice(WORDS) for _ in range(r.randint(6, 16))]
        if r.random() < 0.4:
            words.insert(r.randint(0, len(words)), f"`{self.ident()}`")
        if r.random() < 0.2:
            words.insert(r.randint(0, len(words)), self.path())
        if r.random() < 0.1:
            words.insert(r.randint(0, len(words)), self.hexid(r.choice((7, 12, 40))))
        return " ".join(words).capitalize() + r.choice(".....?:")

    def prose(self, target: int) -> str:
        out: list[str] = []
        while sum(len(s) + 1 for s in out) < target:
            out.append(self.sentence())
        return " ".join(out)

    def code_line(self) -> str:
        r = self.r
        a, b, k = self.ident(), self.ident(), r.random()
        if k < 0.3:
            return f"    {a} = {b}({self.ident()}, {r.randint(0, 4096)})"
        if k < 0.45:
            return f"def {a}({b}: str, limit: int = {r.randint(1, 99)}) -> int:"
        if k < 0.6:
            return f'        raise ValueError(f"{a} {{{b}!r}} is not valid")'
        if k < 0.8:
            return f"{self.path()}:{r.randint(1, 900)}: {self.sentence()}"
        return f"    return {a}.{b}[{r.randint(0, 64)}]  # {self.hexid(8)}"

    def code(self, target: int) -> str:
        out: list[str] = []
        while sum(len(s) + 1 for s in out) < target:
            out.append(self.code_line())
        return "\n".join(out)

    def user(self) -> dict[str, Any]:
        return {"role": "user", "content": self.prose(self.r.randint(150, 580))}

    def call(self) -> dict[str, Any]:
        r = self.r
        args: dict[str, Any] = {"path": self.path()}
        if r.random() < 0.5:
            args["pattern"] = self.ident()
        if r.random() < 0.3:
            args["command"] = f"uv run pytest -q -k {self.ident()}"
        content = self.prose(r.randint(40, 160)) if r.random() < 0.5 else None
        return {
            "role": "assistant",
            "content": content,
            "tool_calls": [
                {
                    "id": f"call_{self.hexid(24)}",
                    "type": "function",
                    "function": {"name": r.choice(TOOLS), "arguments": json.dumps(args)},
                }
            ],
        }

    def result(self, call: dict[str, Any]) -> dict[str, Any]:
        return {
            "role": "tool",
            "tool_call_id": call["tool_calls"][0]["id"],
            "content": self.code(self.r.randint(300, 880)),
        }

    def reply(self) -> dict[str, Any]:
        return {"role": "assistant", "content": self.prose(self.r.randint(200, 620))}

    def turn(self, size: int = 4) -> list[dict[str, Any]]:
        """4: user, call, result, reply; 3: call, result, reply; 2: user, reply."""
        if size == 2:
            return [self.user(), self.reply()]
        call = self.call()
        step = [call, self.result(call), self.reply()]
        return step if size == 3 else [self.user(), *step]

    def stream(self, count: int) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        while len(out) < count:
            out.extend(self.turn(4))
        return out[:count]


def line_bytes(messages: list[dict[str, Any]]) -> int:
    return sum(len(dumps_line(m)) + 1 for m in messages)


def text_bytes(messages: list[dict[str, Any]]) -> int:
    """The conversation's raw text: message contents and tool-call arguments (UTF-8)."""
    total = 0
    for m in messages:
        total += len((m.get("content") or "").encode())
        for call in m.get("tool_calls") or []:
            total += len(call["function"]["arguments"].encode())
    return total


# -- measuring -----------------------------------------------------------------------------


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def quantile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def summary_ms(seconds: list[float]) -> dict[str, float]:
    return {
        "median_ms": median(seconds) * 1000,
        "p90_ms": quantile(seconds, 0.9) * 1000,
        "max_ms": max(seconds) * 1000 if seconds else float("nan"),
        "n": len(seconds),
    }


def tree_size(path: Path) -> dict[str, int]:
    """Apparent bytes (sum of file sizes), allocated bytes (as du), number of files."""
    apparent = allocated = files = 0
    for dirpath, _dirs, names in os.walk(path):
        allocated += os.lstat(dirpath).st_blocks * 512
        for name in names:
            st = os.lstat(os.path.join(dirpath, name))
            apparent += st.st_size
            allocated += st.st_blocks * 512
            files += 1
    return {"apparent": apparent, "allocated": allocated, "files": files}


def object_counts(git_dir: Path) -> dict[str, int]:
    objects = git_dir / "objects"
    loose = 0
    for name in os.listdir(objects):
        if len(name) == 2:
            loose += sum(1 for f in os.listdir(objects / name) if len(f) == 38)
    pack_dir = objects / "pack"
    packs = sum(1 for f in os.listdir(pack_dir) if f.endswith(".pack")) if pack_dir.exists() else 0
    return {"loose": loose, "packs": packs}


def loose_refs(git_dir: Path) -> int:
    return sum(len(names) for _d, _s, names in os.walk(git_dir / "refs" / "heads"))


def object_files(git_dir: Path) -> dict[str, tuple[int, int]]:
    """`{path under objects/: (file size, allocated bytes)}` of the loose objects and the
    packs' files."""
    out: dict[str, tuple[int, int]] = {}
    objects = git_dir / "objects"
    for sub in [*objects.glob("[0-9a-f][0-9a-f]"), objects / "pack"]:
        with contextlib.suppress(FileNotFoundError):
            for f in sub.iterdir():
                with contextlib.suppress(FileNotFoundError):
                    st = f.stat()
                    out[f"{sub.name}/{f.name}"] = (st.st_size, st.st_blocks * 512)
    return out


Files = dict[str, tuple[int, int]]


def step_cost(store: SessionStore, head: Head, before: Files) -> dict[str, int]:
    """What one commit added under objects/: files, their allocated bytes, and the bytes
    (file sizes) beyond its new transcript chunk's compressed size (its loose file, or
    its zlib stream in the pack): the cost of a step other than its new messages.
    Of the packs that appeared, only the commit's own counts (the smallest holding the
    commit: a merge the commit started in the background may have added another)."""
    new = {k: v for k, v in object_files(store.git.path).items() if k not in before}
    own: list[tuple[int, str]] = []
    for name in [k for k in new if k.startswith("pack/") and k.endswith(".idx")]:
        with contextlib.suppress(OSError, KeyError):
            path = str(store.git.path / "objects" / name)
            index = load_pack_index(path, store.git.objects.object_format)
            try:
                index.object_offset(bytes.fromhex(head.commit.decode()))
                own.append((new[name][0], name[: -len(".idx")]))
            finally:
                index.close()
    packs = {k for k in new if k.startswith("pack/")}
    mine = {f"{min(own)[1]}.idx", f"{min(own)[1]}.pack"} if own else set()
    new = {k: v for k, v in new.items() if k not in packs or k in mine}
    chunk = store.segments(head)[-1][1].decode()
    loose_chunk = new.get(f"{chunk[:2]}/{chunk[2:]}")
    if loose_chunk is not None:
        chunk_bytes = loose_chunk[0]
    else:
        chunk_bytes = len(zlib.compress(store.git.get(chunk.encode()).as_raw_string()))
    return {
        "files": len(new),
        "allocated": sum(v[1] for v in new.values()),
        "overhead": sum(v[0] for v in new.values()) - chunk_bytes,
    }


@contextlib.contextmanager
def autopack_off() -> Iterator[None]:
    """Setup only, in a child process: start no background maintenance after writes
    (each commit leaves a pack: a section that builds many merges them once after)."""
    saved = maintenance.needs_maintenance
    maintenance.needs_maintenance = lambda git: False  # type: ignore[assignment]
    try:
        yield
    finally:
        maintenance.needs_maintenance = saved  # type: ignore[assignment]


WAITER = """
import json, os, subprocess, sys, time
cmd, env = json.load(sys.stdin)
t = time.perf_counter()
child = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
_pid, status, usage = os.wait4(child.pid, 0)
seconds = time.perf_counter() - t
error = child.stderr.read()[-2000:].decode("utf-8", "replace")
print(json.dumps([seconds, os.waitstatus_to_exitcode(status), usage.ru_maxrss / 1024, error]))
"""


def spawn_measured(cmd: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    """Start `cmd` from a small Python process that waits for it and prints (seconds,
    exit status, peak RSS MB, stderr's end) as JSON (`measured_result`): a child forked
    straight from a bench process holding a big store counts that memory in its peak
    RSS until it execs."""
    waiter = subprocess.Popen(
        [sys.executable, "-c", WAITER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert waiter.stdin is not None
    waiter.stdin.write(json.dumps([cmd, env]))
    waiter.stdin.close()
    return waiter


def measured_result(waiter: subprocess.Popen[str]) -> tuple[float, int, float, str]:
    assert waiter.stdout is not None
    out = waiter.stdout.read()
    waiter.wait()
    seconds, code, rss, error = json.loads(out)
    return seconds, code, rss, error


def run_measured(cmd: list[str]) -> tuple[float, float]:
    """Run a command to completion: (seconds, peak RSS in MB) of that process alone."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITSESSIONS_")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: imports read cached bytecode
    seconds, code, rss, error = measured_result(spawn_measured(cmd, env))
    assert code == 0, (cmd, error)
    return seconds, rss


def section_maintenance(cfg: dict[str, Any], work: Path, res: dict[str, Any], save: "Save") -> None:
    """delete and gc in a store of many sessions, each as its own process (time, RSS)."""
    count = cfg["sessions"]
    home = work / "maint"
    store = SessionStore(home)
    gen = Messages(SEED + 13)
    ids: list[str] = []
    with autopack_off():
        for i in range(count):
            messages = [gen.user(), gen.reply()]
            header = make_header(gen, gen.sentence()[:70])
            header["created_at"] = header["updated_at"] = f"2025-01-{1 + i % 28:02d}T12:00:00Z"
            ids.append(store.create(header, Change(context=messages, append=messages)).id)
    maintenance.merge_packs(store.git)  # what background maintenance would have left
    store.close()
    res["sessions"] = count
    cli = [*cli_command(), "--home", str(home)]
    git_dir = home / "store.git"
    res["delete_before_gc"] = [run_measured([*cli, "delete", ids[i], "--yes"]) for i in range(2)]
    save()
    res["gc_s"], res["gc_rss_mb"] = run_measured([*cli, "gc"])
    res["after_gc"] = {**tree_size(git_dir), **object_counts(git_dir)}
    save()
    res["delete_packed"] = [
        run_measured([*cli, "delete", ids[i], "--yes"]) for i in range(2, 2 + cfg["delete_reps"])
    ]
    res["fsck"] = fsck(git_dir)
    save()


def session_id(gen: Messages) -> str:
    return gen.hexid(32)


def make_header(gen: Messages, title: str) -> dict[str, Any]:
    return new_header(
        session_id(gen),
        CREATED,
        title=title,
        workspace=empty_workspace("/home/dev/project"),
        model=MODEL,
    )


def turn_change(
    head: Head, tail: list[dict[str, Any]], turn: list[dict[str, Any]], usage: dict[str, Any]
) -> tuple[Change, list[dict[str, Any]], dict[str, Any]]:
    """One turn as the agent commits it: append, bounded context, usage, header."""
    context = (tail + turn)[-CONTEXT_KEEP:]
    usage = add_usage(usage, MODEL, 12_000 + 40 * len(context), 300, 0.0021)
    change = Change(header=touch(head.header), context=context, append=turn, usage=usage)
    return change, context, usage


def json_save(path: Path, doc: dict[str, Any]) -> None:
    """The plain baseline: serialize the whole session, write a temp file, rename."""
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(json.dumps(doc, ensure_ascii=False).encode())
    os.replace(tmp, path)


def jsonl_append(path: Path, messages: list[dict[str, Any]], fsync: bool) -> None:
    """The append baseline: one line (one write) per message; fsync once per turn."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        for message in messages:
            os.write(fd, dumps_line(message) + b"\n")
        if fsync:
            os.fsync(fd)
    finally:
        os.close(fd)


# -- sections ------------------------------------------------------------------------------
# Each runs in a child process and fills `res`, calling `save()` whenever it has something.

Save = Callable[[], None]


def section_commit(cfg: dict[str, Any], work: Path, res: dict[str, Any], save: Save) -> None:
    ns: list[int] = cfg["ns"]
    reps: int = cfg["commit_reps"]
    t0 = time.perf_counter()
    stream = Messages(SEED).stream(max(ns))
    extra_gen = Messages(SEED + 1)
    extra = [extra_gen.turn(extra_gen.r.choice((2, 3, 4))) for _ in range(reps + 1)]
    res["setup"] = {
        "generate_s": time.perf_counter() - t0,
        "avg_message_bytes": line_bytes(stream) / len(stream),
        "note": "sessions built in one create with autopack off; timed commits run as in "
        "real use (autopack on); time is SessionStore.commit only (Change built before)",
    }
    res["rows"] = []
    for n in ns:
        row: dict[str, Any] = {"n": n}
        res["rows"].append(row)
        home = work / f"commit-{n}"
        store = SessionStore(home)
        gen = Messages(SEED + 100 + n)
        transcript = stream[:n]
        context = transcript[-CONTEXT_KEEP:]
        usage = add_usage(add_usage({}, MODEL, 0, 0, 0.0), MODEL, 9_000 * n, 200 * n, 0.01)
        t = time.perf_counter()
        with autopack_off():
            head = store.create(
                make_header(gen, f"bench {n}"),
                Change(context=context, append=list(transcript), usage=usage),
            )
        row["build_s"] = time.perf_counter() - t
        row["objects_before"] = object_counts(home / "store.git")
        tail = list(context)
        times: list[float] = []
        packs = row["objects_before"]["packs"]
        autopacks = 0
        overheads: list[int] = []
        files: list[int] = []
        allocated: list[int] = []
        for i, turn in enumerate(extra):
            change, tail, usage = turn_change(head, tail, turn, usage)
            before = object_files(home / "store.git")
            t = time.perf_counter()
            head = store.commit(head, change, event="turn", subject=f"turn {i}")
            elapsed = time.perf_counter() - t
            if i:  # the first commit warms caches; not counted
                times.append(elapsed)
                cost = step_cost(store, head, before)
                overheads.append(cost["overhead"])
                files.append(cost["files"])
                allocated.append(cost["allocated"])
            now_packs = object_counts(home / "store.git")["packs"]
            autopacks += now_packs < packs  # a merge (each commit adds one pack)
            packs = now_packs
        row["store"] = summary_ms(times)
        row["step_overhead_bytes"] = {"median": median(overheads), "max": max(overheads)}
        row["step_files"] = {"median": median(files), "max": max(files)}
        row["step_allocated_bytes"] = {"median": median(allocated), "max": max(allocated)}
        row["autopacks_during_timing"] = autopacks
        store.close()
        save()
        wait_for_maintenance(home / "store.git")  # a merge a commit started
        shutil.rmtree(home)

        # baselines on the same messages
        doc_path = work / f"plain-{n}.json"
        doc: dict[str, Any] = {
            "header": make_header(Messages(1), "bench"),
            "context": context,
            "usage": usage,
            "transcript": list(transcript),
        }
        json_save(doc_path, doc)
        json_times: list[float] = []
        tail = list(context)
        for turn in extra[: cfg["json_reps"].get(n, 3)]:
            doc["transcript"].extend(turn)
            tail = (tail + turn)[-CONTEXT_KEEP:]
            doc["context"] = tail
            t = time.perf_counter()
            json_save(doc_path, doc)
            json_times.append(time.perf_counter() - t)
        row["json_rewrite"] = summary_ms(json_times)
        row["json_file_bytes"] = doc_path.stat().st_size
        doc_path.unlink()
        for fsync in (False, True):
            log = work / f"plain-{n}.jsonl"
            with open(log, "wb") as f:
                f.write(b"".join(dumps_line(m) + b"\n" for m in transcript))
            append_times: list[float] = []
            for turn in extra[1:]:
                t = time.perf_counter()
                jsonl_append(log, turn, fsync)
                append_times.append(time.perf_counter() - t)
            row["jsonl_fsync" if fsync else "jsonl"] = summary_ms(append_times)
            log.unlink()
        save()
    first, last = res["rows"][0], res["rows"][-1]
    res["ratio"] = last["store"]["median_ms"] / first["store"]["median_ms"]
    res["ratio_between"] = [first["n"], last["n"]]


def section_fork(cfg: dict[str, Any], work: Path, res: dict[str, Any], save: Save) -> None:
    from gitsessions.services.sessions import manage
    from gitsessions.values.clock import now_iso

    n = cfg["fork_n"]
    home = work / "fork"
    store = SessionStore(home)
    gen = Messages(SEED + 7)
    stream = Messages(SEED).stream(n)
    with autopack_off():
        head = store.create(
            make_header(gen, "fork source"),
            Change(context=stream[-CONTEXT_KEEP:], append=stream),
        )
    git_dir = home / "store.git"
    res["n"] = n
    res["objects_before"] = object_counts(git_dir)
    times: list[float] = []
    added: list[int] = []
    added_alloc: list[int] = []
    new_objects: list[int] = []
    for i in range(cfg["fork_reps"] + 1):
        before, loose = tree_size(git_dir / "objects"), object_counts(git_dir)["loose"]
        t = time.perf_counter()
        store.fork(head, session_id(gen), title=None, created_at=now_iso())
        elapsed = time.perf_counter() - t
        after = tree_size(git_dir / "objects")
        if i:
            times.append(elapsed)
            added.append(after["apparent"] - before["apparent"])
            added_alloc.append(after["allocated"] - before["allocated"])
            new_objects.append(object_counts(git_dir)["loose"] - loose)
    res["store_fork"] = summary_ms(times)
    res["bytes_added"] = median(added)
    res["bytes_added_max"] = max(added)
    res["allocated_added"] = median(added_alloc)
    res["new_objects"] = median(new_objects)
    save()
    service: list[float] = []
    for _ in range(cfg["fork_reps"]):
        t = time.perf_counter()
        manage.fork(store, head.id)
        service.append(time.perf_counter() - t)
    res["service_fork"] = summary_ms(service)
    res["note"] = (
        "store_fork: SessionStore.fork(head, ...); service_fork: services.sessions.manage.fork "
        "(re-reads the head, writes the audit line); bytes: sum of file sizes under objects/"
    )
    store.close()
    save()


def cli_command() -> list[str]:
    script = Path(sys.executable).parent / "gitsessions"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "from gitsessions.cli.app import main; main()"]


def section_list(cfg: dict[str, Any], work: Path, res: dict[str, Any], save: Save) -> None:
    count = cfg["sessions"]
    home = work / "list"
    store = SessionStore(home)
    gen = Messages(SEED + 11)
    t = time.perf_counter()
    with autopack_off():
        for i in range(count):
            messages = [gen.user(), gen.reply()]
            header = make_header(gen, gen.sentence()[:70])
            header["created_at"] = header["updated_at"] = f"2025-01-{1 + i % 28:02d}T12:00:00Z"
            store.create(header, Change(context=messages, append=messages))
    maintenance.merge_packs(store.git)  # what background maintenance would have left
    res["sessions"] = count
    res["create_s"] = time.perf_counter() - t
    res["create_note"] = "SessionStore.create with autopack off (packing is measured in (4))"
    git_dir = home / "store.git"
    res["loose_refs"] = loose_refs(git_dir)
    save()

    catalog = Catalog(store)
    t = time.perf_counter()
    rows = catalog.headers()
    res["cold_s"] = time.perf_counter() - t
    assert len(rows) == count, len(rows)
    res["warm_loose_refs"] = summary_ms(timed(lambda: Catalog(store).headers(), cfg["list_reps"]))
    maintenance.run_maintenance(store.git)  # what a write starts in the background now
    res["loose_refs_after_autopack"] = loose_refs(git_dir)
    res["warm"] = summary_ms(timed(lambda: Catalog(store).headers(), cfg["list_reps"]))
    save()

    # the CLI: in-process (no interpreter start-up) and as a fresh process (with it)
    from typer.testing import CliRunner

    from gitsessions.cli.app import app

    argv = ["--home", str(home), "list", "--json"]
    umask = os.umask(0o077)  # the CLI sets this; put ours back afterwards
    os.umask(umask)
    try:
        runner = CliRunner()

        def invoke() -> None:
            result = runner.invoke(app, argv)
            assert result.exit_code == 0, result.output[-500:]

        invoke()  # warm the catalog and imports
        res["cli_in_process"] = summary_ms(timed(invoke, cfg["list_reps"]))
    finally:
        os.umask(umask)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITSESSIONS_")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: imports read cached bytecode
    cmd = [*cli_command(), *argv]

    def spawn() -> None:
        done = subprocess.run(cmd, capture_output=True, env=env, check=True)
        assert len(json.loads(done.stdout)) == count

    res["cli_process"] = summary_ms(timed(spawn, cfg["cli_reps"]))
    startup = [sys.executable, "-c", "import gitsessions.cli.app"]
    res["python_import_only"] = summary_ms(
        timed(lambda: subprocess.run(startup, env=env, check=True), cfg["cli_reps"])
    )
    res["cli_command"] = " ".join([*cmd[:1], "--home", "DIR", "list", "--json"])
    save()

    res["refs_only_packed"] = summary_ms(timed(store.ids, cfg["list_reps"]))
    store.close()
    save()


def timed(fn: Callable[[], Any], reps: int) -> list[float]:
    out = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def _turns(cfg: dict[str, Any]) -> list[list[dict[str, Any]]]:
    gen = Messages(SEED + 2)
    return [gen.turn(4) for _ in range(cfg["turns"])]


def _run_turns(
    store: SessionStore,
    turns: list[list[dict[str, Any]]],
    res: dict[str, Any],
    save: Save,
) -> Head:
    from gitsessions.values.records import empty_usage

    git_dir = store.git.path
    head = store.create(make_header(Messages(SEED + 3), "long session"), Change())
    tail: list[dict[str, Any]] = []
    usage = empty_usage()
    times: list[float] = []
    stalls: list[dict[str, Any]] = []
    packs = object_counts(git_dir)["packs"]
    res["turns_done"] = 0
    res["merges"] = 0
    for i, turn in enumerate(turns):
        change, tail, usage = turn_change(head, tail, turn, usage)
        res["in_flight"] = {"turn": i, "since": time.time()}
        if i % 10 == 0 or stalls:
            save()  # so a timeout can say which commit was still running
        t = time.perf_counter()
        head = store.commit(head, change, event="turn", subject=f"turn {i}")
        elapsed = time.perf_counter() - t
        times.append(elapsed)
        now = object_counts(git_dir)["packs"]
        res["merges"] += now < packs  # background maintenance merged packs (or loose objects)
        if elapsed > 1.0:
            stalls.append({"turn": i, "seconds": elapsed, **object_counts(git_dir)})
            res["stalls"] = stalls
            save()
        packs = now
        res["turns_done"] = i + 1
        res["commit"] = summary_ms(times)
        res["commit_total_s"] = sum(times)
    res.pop("in_flight", None)
    res["stalls"] = stalls
    return head


def section_size(cfg: dict[str, Any], work: Path, res: dict[str, Any], save: Save) -> None:
    turns = _turns(cfg)
    messages = [m for turn in turns for m in turn]
    res["turns"] = len(turns)
    res["raw_transcript_bytes"] = line_bytes(messages)
    res["raw_text_bytes"] = text_bytes(messages)
    res["note"] = "autopack on, as in real use; then services.sessions.manage.gc"
    save()
    home = work / "size"
    store = SessionStore(home)
    git_dir = home / "store.git"
    res["phase"] = "turns"
    _run_turns(store, turns, res, save)
    wait_for_maintenance(git_dir)
    res["before_gc"] = {**tree_size(git_dir), **object_counts(git_dir)}
    res["phase"] = "gc"
    save()
    res["gc_s"], res["gc_rss_mb"] = run_measured([*cli_command(), "--home", str(home), "gc"])
    res["after_gc"] = {**tree_size(git_dir), **object_counts(git_dir)}
    res["ratio"] = res["after_gc"]["allocated"] / res["raw_transcript_bytes"]
    res["ratio_apparent"] = res["after_gc"]["apparent"] / res["raw_transcript_bytes"]
    res["text_ratio"] = res["after_gc"]["allocated"] / res["raw_text_bytes"]
    res["text_ratio_as_left"] = res["before_gc"]["allocated"] / res["raw_text_bytes"]
    store.close()
    res["fsck"] = fsck(git_dir)
    save()


def fsck(git_dir: Path) -> dict[str, Any]:
    done = subprocess.run(
        ["git", "--git-dir", str(git_dir), "fsck", "--strict"],
        capture_output=True,
        text=True,
    )
    lines = (done.stdout + done.stderr).strip().splitlines()
    return {"ok": done.returncode == 0, "output": lines[:5]}


def section_size_ref(cfg: dict[str, Any], work: Path, res: dict[str, Any], save: Save) -> None:
    """The same turns with autopack off: loose size, stock git's packing, baselines."""
    turns = _turns(cfg)
    messages = [m for turn in turns for m in turn]
    res["raw_transcript_bytes"] = raw = line_bytes(messages)
    home = work / "size-ref"
    store = SessionStore(home)
    git_dir = home / "store.git"
    with autopack_off():
        _run_turns(store, turns, res, save)
    store.close()
    res["loose"] = {**tree_size(git_dir), **object_counts(git_dir)}
    save()
    t = time.perf_counter()
    subprocess.run(
        ["git", "--git-dir", str(git_dir), "repack", "-adfq", "--window=10", "--depth=50"],
        check=True,
    )
    res["git_repack_s"] = time.perf_counter() - t
    res["git_repack"] = {**tree_size(git_dir), **object_counts(git_dir)}
    res["git_repack_ratio"] = res["git_repack"]["allocated"] / raw
    res["fsck"] = fsck(git_dir)
    save()

    # baselines over the same turns
    doc_path = work / "plain.json"
    doc: dict[str, Any] = {"header": make_header(Messages(1), "bench"), "transcript": []}
    tail: list[dict[str, Any]] = []
    json_times: list[float] = []
    for turn in turns:
        doc["transcript"].extend(turn)
        tail = (tail + turn)[-CONTEXT_KEEP:]
        doc["context"] = tail
        t = time.perf_counter()
        json_save(doc_path, doc)
        json_times.append(time.perf_counter() - t)
    res["json_rewrite"] = {**summary_ms(json_times), "total_s": sum(json_times)}
    res["json_bytes"] = doc_path.stat().st_size
    for fsync in (False, True):
        log = work / f"plain-{fsync}.jsonl"
        append_times = timed_each(
            lambda turn, log=log, fsync=fsync: jsonl_append(log, turn, fsync), turns
        )
        key = "jsonl_fsync" if fsync else "jsonl"
        res[key] = {**summary_ms(append_times), "total_s": sum(append_times)}
        res[key + "_bytes"] = log.stat().st_size
    save()


def timed_each(fn: Callable[[Any], Any], items: list[Any]) -> list[float]:
    out = []
    for item in items:
        t = time.perf_counter()
        fn(item)
        out.append(time.perf_counter() - t)
    return out


SECTIONS: dict[str, Callable[[dict[str, Any], Path, dict[str, Any], Save], None]] = {
    "commit": section_commit,
    "fork": section_fork,
    "list": section_list,
    "size": section_size,
    "size_ref": section_size_ref,
    "maintenance": section_maintenance,
    "resume": lambda cfg, work, res, save: resume.section_resume(
        cfg, work, res, save, sys.modules[__name__]
    ),
}


def _child(name: str, cfg: dict[str, Any], work: Path, result_path: Path) -> None:
    res: dict[str, Any] = {}

    def save() -> None:
        tmp = result_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(res, default=str))
        os.replace(tmp, result_path)

    try:
        SECTIONS[name](cfg, work, res, save)
        res["complete"] = True
    except Exception as error:  # reported, not raised: the other sections still run
        import traceback

        res["error"] = f"{type(error).__name__}: {error}"
        res["traceback"] = traceback.format_exc()[-2000:]
    save()


def run_section(name: str, cfg: dict[str, Any], root: Path) -> dict[str, Any]:
    work = root / name
    work.mkdir()
    result_path = root / f"{name}.result.json"
    timeout = cfg["timeout"][name]
    context = multiprocessing.get_context("fork")
    child = context.Process(target=_child, args=(name, cfg, work, result_path))
    started = time.perf_counter()
    child.start()
    child.join(timeout)
    if child.is_alive():
        child.kill()
        child.join()
    res = json.loads(result_path.read_text()) if result_path.exists() else {}
    res["wall_s"] = time.perf_counter() - started
    if not res.get("complete") and "error" not in res:
        res["timeout_s"] = timeout
        if "in_flight" in res:  # a commit that was still running when time ran out
            res["in_flight"]["running_s"] = time.time() - res["in_flight"].pop("since")
    shutil.rmtree(work, ignore_errors=True)
    return res


# -- reporting -----------------------------------------------------------------------------


def table(title: str, header: list[str], rows: list[list[Any]]) -> str:
    cells = [[str(c) for c in header], *[[str(c) for c in row] for row in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]

    def line(row: list[str]) -> str:
        pairs = enumerate(zip(row, widths, strict=True))
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in pairs)

    rule = "-" * len(line(cells[0]))
    return "\n".join([title, rule, line(cells[0]), rule, *map(line, cells[1:]), ""])


def dur(value_ms: Any) -> str:
    """A duration given in ms, with its unit."""
    text = ms(value_ms)
    return text if text.endswith(" s") or text == "-" else text + " ms"


def ms(value: Any) -> str:
    if not isinstance(value, int | float) or value != value:
        return "-"
    if value >= 10_000:
        return f"{value / 1000:.1f} s"
    return f"{value:.2f}" if value < 10 else f"{value:.1f}"


def size(n: Any) -> str:
    if not isinstance(n, int | float):
        return "-"
    for unit, scale in (("MB", 1e6), ("KB", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n:.0f} B"


def status_line(res: dict[str, Any]) -> str:
    if "error" in res:
        return f"  ERROR: {res['error']}\n"
    if "timeout_s" in res:
        text = f"  TIMEOUT after {res['timeout_s']:.0f} s"
        text += f" during {res['phase']}" if "phase" in res else ""
        flight = res.get("in_flight")
        if flight and "running_s" in flight:
            text += f"; the commit of turn {flight['turn']} had run {flight['running_s']:.0f} s"
        return text + "\n"
    return ""


def report_commit(res: dict[str, Any]) -> str:
    rows = []
    for r in res.get("rows", []):
        s = r.get("store", {})
        rows.append(
            [
                f"{r['n']:,}",
                r.get("step_files", {}).get("median", "-"),
                size(r.get("step_allocated_bytes", {}).get("median")),
                size(r.get("step_overhead_bytes", {}).get("median")),
                ms(s.get("median_ms")),
                ms(s.get("p90_ms")),
                ms(s.get("max_ms")),
                r.get("autopacks_during_timing", "-"),
                ms(r.get("json_rewrite", {}).get("median_ms")),
                ms(r.get("jsonl", {}).get("median_ms")),
                ms(r.get("jsonl_fsync", {}).get("median_ms")),
            ]
        )
    text = table(
        "1. Commit one turn vs. transcript length (ms; store = SessionStore.commit)",
        [
            "messages",
            "files",
            "disk",
            "step bytes*",
            "store med",
            "p90",
            "max",
            "autopacks",
            "JSON rewrite",
            "JSONL",
            "JSONL+fsync",
        ],
        rows,
    )
    if "ratio" in res:
        a, b = res["ratio_between"]
        text += f"  ratio store median N={b:,} / N={a:,}: {res['ratio']:.2f}\n"
    text += (
        "  files, disk: what a commit adds under objects/ (median; disk = allocated blocks);\n"
        "  * step bytes: those files' bytes beyond the new transcript chunk (compressed)\n"
    )
    setup = res.get("setup", {})
    if setup:
        text += f"  avg message {setup['avg_message_bytes']:.0f} B (JSONL line); {setup['note']}\n"
    return text + status_line(res)


def report_fork(res: dict[str, Any]) -> str:
    rows = []
    for key, label in (("store_fork", "SessionStore.fork"), ("service_fork", "manage.fork")):
        if key in res:
            s = res[key]
            rows.append([label, ms(s["median_ms"]), ms(s["p90_ms"]), ms(s["max_ms"])])
    text = table(
        f"2. Fork of a {res.get('n', 0):,}-message session (ms)",
        ["operation", "median", "p90", "max"],
        rows,
    )
    if "bytes_added" in res:
        text += (
            f"  added per fork: {res['bytes_added']:.0f} B in files (max "
            f"{res['bytes_added_max']} B), {res['allocated_added']:.0f} B allocated on disk, "
            f"{res['new_objects']:.0f} new loose objects\n"
        )
    return text + status_line(res)


def report_list(res: dict[str, Any]) -> str:
    rows = []
    items = (
        ("cold_s", "Catalog.headers() cold (cache build)"),
        ("warm_loose_refs", "Catalog.headers() warm, 10,000 loose refs (setup only)"),
        ("warm", "Catalog.headers() warm, refs packed by autopack"),
        ("refs_only_packed", "refs only (store.ids), packed refs"),
        ("cli_in_process", "CLI list --json in-process (no start-up)"),
        ("cli_process", "CLI list --json new process (with start-up)"),
        ("python_import_only", "  of which: python + import gitsessions.cli.app"),
    )
    for key, label in items:
        if key not in res:
            continue
        value = res[key]
        if isinstance(value, dict):
            rows.append([label, ms(value["median_ms"]), ms(value["max_ms"]), value["n"]])
        else:
            rows.append([label, ms(value * 1000), "", 1])
    text = table(
        f"3. List {res.get('sessions', 0):,} sessions (ms)",
        ["operation", "median", "max", "runs"],
        rows,
    )
    if "create_s" in res:
        text += (
            f"  setup: {res['sessions']:,} creates in {res['create_s']:.1f} s "
            f"({res['create_note']}); {res['loose_refs']:,} loose refs before pack_refs\n"
        )
    return text + status_line(res)


def report_size(res: dict[str, Any], ref: dict[str, Any]) -> str:
    raw = res.get("raw_transcript_bytes") or ref.get("raw_transcript_bytes")
    rows = [["raw transcript (JSONL lines)", size(raw), "", "1.00"]]

    def add(label: str, entry: dict[str, Any] | None, extra: str = "") -> None:
        if entry:
            ratio = f"{entry['allocated'] / raw:.2f}" if raw else "-"
            rows.append([label, size(entry["allocated"]), extra, ratio])

    def counts(entry: dict[str, Any]) -> str:
        return f"{entry['loose']} loose, {entry['packs']} packs"

    before, after = res.get("before_gc"), res.get("after_gc")
    add("store before gc (autopack on)", before, counts(before) if before else "")
    add("store after gc", after, counts(after) if after else "")
    loose = ref.get("loose")
    add("store, autopack off, all loose", loose, counts(loose) if loose else "")
    add("  same, packed by `git repack -adf`", ref.get("git_repack"), "reference only")
    for key, label in (("json_bytes", "plain JSON file"), ("jsonl_bytes", "plain JSONL file")):
        if key in ref:
            rows.append([label, size(ref[key]), "", f"{ref[key] / raw:.2f}"])
    turns = res.get("turns") or ref.get("turns_done") or 0
    text = table(
        f"4. Store size for a {turns:,}-turn session (du, allocated bytes)",
        ["what", "size", "objects", "x raw"],
        rows,
    )
    if "commit" in res:
        c = res["commit"]
        text += (
            f"  autopack on: {res['turns_done']:,} of {res.get('turns', 0):,} turns committed: "
            f"median {dur(c['median_ms'])}, p90 {dur(c['p90_ms'])}, max {dur(c['max_ms'])}, "
            f"total {res['commit_total_s']:.1f} s\n"
        )
    if "merges" in res:
        text += f"  background maintenance merged packs {res['merges']} times during the turns\n"
    for stall in res.get("stalls", []):
        text += (
            f"  turn {stall['turn']}: commit took {stall['seconds']:.2f} s "
            f"(now {stall['loose']} loose, {stall['packs']} packs)\n"
        )
    if "gc_s" in res:
        text += f"  gc (own process) took {res['gc_s']:.1f} s, peak RSS {res['gc_rss_mb']:.0f} MB\n"
    if "fsck" in res:
        text += f"  git fsck --strict: {'ok' if res['fsck']['ok'] else 'FAILED'}"
        text += "" if res["fsck"]["ok"] else f" {res['fsck']['output']}"
        text += "\n"
    text += status_line(res)
    if status_line(ref):
        text += "\n  (4b, autopack off)" + status_line(ref)
    return text


def report_baselines(commit: dict[str, Any], sized: dict[str, Any], ref: dict[str, Any]) -> str:
    rows = []
    for r in commit.get("rows", []):
        rows.append(
            [
                f"save at {r['n']:,} messages",
                ms(r.get("store", {}).get("median_ms")),
                ms(r.get("json_rewrite", {}).get("median_ms")),
                ms(r.get("jsonl", {}).get("median_ms")),
                ms(r.get("jsonl_fsync", {}).get("median_ms")),
            ]
        )
    if "json_rewrite" in ref:
        rows.append(
            [
                f"per turn, {ref.get('turns_done', 0):,} turns (store: no autopack)",
                ms(ref.get("commit", {}).get("median_ms")),
                ms(ref["json_rewrite"]["median_ms"]),
                ms(ref["jsonl"]["median_ms"]),
                ms(ref["jsonl_fsync"]["median_ms"]),
            ]
        )
        after_gc = sized.get("after_gc")
        store_size = (
            size(after_gc["allocated"]) + " (gc)"
            if after_gc
            else size(ref.get("git_repack", {}).get("allocated")) + " (git repack)"
        )
        rows.append(
            [
                "size after those turns",
                store_size,
                size(ref["json_bytes"]),
                size(ref["jsonl_bytes"]),
                size(ref["jsonl_fsync_bytes"]),
            ]
        )
    return table(
        "5. Store vs. plain files (ms per save, and size)",
        ["", "store", "JSON rewrite", "JSONL", "JSONL+fsync"],
        rows,
    )


def goals(results: dict[str, Any], quick: bool) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []

    def goal(name: str, target: str, value: Any, shown: str, ok: bool | None) -> None:
        status = "n/a" if ok is None else ("pass" if ok else "FAIL")
        out.append(
            {"goal": name, "target": target, "value": value, "shown": shown, "status": status}
        )

    c = results.get("commit", {})
    if "ratio" in c:
        a, b = c["ratio_between"]
        goal(
            f"commit ms ratio N={b:,} / N={a:,}",
            "<= 1.5",
            c["ratio"],
            f"{c['ratio']:.2f}",
            c["ratio"] <= GOALS["commit_ratio"],
        )
    else:
        goal("commit ms ratio", "<= 1.5", None, *missing(c))
    overheads = [r["step_overhead_bytes"] for r in c.get("rows", []) if "step_overhead_bytes" in r]
    if overheads:
        worst = max(o["max"] for o in overheads)
        typical = max(o["median"] for o in overheads)
        goal(
            "bytes a step commit writes beyond its new lines (worst of all N)",
            "<= 2 KB",
            worst,
            f"{worst:,.0f} B (median {typical:,.0f} B)",
            worst <= GOALS["step_bytes"],
        )
    r = results.get("resume", {})
    if "ratio" in r:
        a, b = r["rows"][0]["n"], r["rows"][-1]["n"]
        goal(
            f"resume to first request, N={b:,} / N={a:,}",
            "<= 1.5",
            r["ratio"],
            f"{r['ratio']:.2f}",
            r["ratio"] <= GOALS["resume_ratio"],
        )
        goal(
            f"  peak RSS resuming N={b:,}",
            "<= 150 MB",
            r["rss_mb"],
            f"{r['rss_mb']:.0f} MB",
            r["rss_mb"] <= GOALS["resume_mb"],
        )
    elif r:
        goal("resume", "<= 1.5x, <= 150 MB", None, *missing(r))
    f = results.get("fork", {})
    if "store_fork" in f:
        v = f["store_fork"]["median_ms"]
        goal("fork time (median)", "< 50 ms", v, f"{v:.2f} ms", v < GOALS["fork_ms"])
        v = f["bytes_added"]
        goal("fork bytes added (file sizes)", "< 2 KB", v, f"{v:.0f} B", v < GOALS["fork_bytes"])
    else:
        goal("fork", "< 50 ms, < 2 KB", None, *missing(f))
    li = results.get("list", {})
    if "warm" in li:
        v = li["warm"]["median_ms"] / 1000
        goal(
            f"list warm, {li['sessions']:,} sessions (Catalog.headers)",
            "< 0.5 s",
            v,
            f"{v:.3f} s",
            v < GOALS["list_s"],
        )
    else:
        goal("list warm", "< 0.5 s", None, *missing(li))
    for key, label in (("cli_in_process", "in-process"), ("cli_process", "new process")):
        if key in li:
            v = li[key]["median_ms"] / 1000
            goal(f"  CLI list --json warm, {label}", "info", v, f"{v:.3f} s", None)
    s = results.get("size", {})
    if "ratio" in s:
        goal(
            "store after gc / raw transcript (bare messages' JSONL)",
            "<= 1.0",
            s["ratio"],
            f"{s['ratio']:.2f}",
            s["ratio"] <= GOALS["size"],
        )
    else:
        goal("store after gc / raw transcript", "<= 1.0", None, *missing(s))
    ref = results.get("size_ref", {})
    if "git_repack_ratio" in ref:
        v = ref["git_repack_ratio"]
        goal("  same layout packed by stock git", "info", v, f"{v:.2f}", None)
    before = s.get("before_gc")
    if before:
        merged = s.get("merges", 0) > 0
        shown = (
            f"merged {s.get('merges', 0)} times; {before['loose']} loose, "
            f"{before['packs']} packs before gc"
        )
        ok: bool | None = merged
        if quick and not merged:
            ok = None  # too few packs in quick mode to reach the threshold
        goal("background maintenance merged packs during the run", "yes", merged, shown, ok)
        ratio = before["allocated"] / s["raw_transcript_bytes"]
        goal("store as left (before gc) / raw transcript", "info", ratio, f"{ratio:.2f}", None)
    if "text_ratio" in s:
        v = s["text_ratio_as_left"]
        goal("store as left / raw text (contents, arguments)", "info", v, f"{v:.2f}", None)
        v = s["text_ratio"]
        goal("store after gc / raw text (contents, arguments)", "<= 10", v, f"{v:.2f}", v <= 10)
    if "commit" in s:
        worst = s["commit"]["max_ms"]
        goal(
            "longest commit of the run (packing is in the background)",
            "<= 100 ms",
            worst,
            f"{worst:.0f} ms",
            worst <= GOALS["commit_max_ms"],
        )
    if "gc_rss_mb" in s:
        v = s["gc_rss_mb"]
        goal(f"gc peak RSS, {s.get('turns', 0):,}-turn session", "info", v, f"{v:.0f} MB", None)
    m = results.get("maintenance", {})
    if "delete_packed" in m:
        secs = max(t for t, _ in m["delete_packed"])
        rss = max(r for _, r in m["delete_packed"])
        goal(
            f"delete in a packed {m['sessions']:,}-session store (worst, own process)",
            f"<= {GOALS['delete_s']:.0f} s, <= {GOALS['delete_mb']:.0f} MB",
            [secs, rss],
            f"{secs:.2f} s, {rss:.0f} MB",
            secs <= GOALS["delete_s"] and rss <= GOALS["delete_mb"],
        )
        goal(
            "  gc of that store (own process)",
            "info",
            [m["gc_s"], m["gc_rss_mb"]],
            f"{m['gc_s']:.1f} s, {m['gc_rss_mb']:.0f} MB",
            None,
        )
    elif m:
        goal("delete in a packed store", "", None, *missing(m))
    if "fsck" in s:
        goal(
            "git fsck --strict after gc",
            "ok",
            s["fsck"]["ok"],
            "ok" if s["fsck"]["ok"] else "FAILED",
            s["fsck"]["ok"],
        )
    else:
        goal("git fsck --strict after gc", "ok", None, *missing(s))
    return out


def missing(res: dict[str, Any]) -> tuple[str, bool | None]:
    """What to show for a goal whose section did not get that far."""
    if not res:
        return "not run", None
    if "timeout_s" in res:
        return f"not reached (timeout in {res.get('phase', '?')})", False
    return f"not reached ({res.get('error', 'unknown')})", False


def report_goals(items: list[dict[str, Any]]) -> str:
    rows = [[g["goal"], g["target"], g["shown"], g["status"]] for g in items]
    return table("Goals", ["goal", "target", "measured", "status"], rows)


def git_version() -> str:
    try:
        return subprocess.run(["git", "--version"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return "git not found"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, a smoke test")
    parser.add_argument(
        "--out",
        type=Path,
        default=Path(__file__).resolve().parent / "results" / "store.json",
        help="JSON results file (default: bench/results/store.json)",
    )
    parser.add_argument("--only", help=f"comma-separated sections of: {', '.join(SECTIONS)}")
    parser.add_argument("--timeout", type=float, help="seconds per section (default: per mode)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args()

    cfg = dict(QUICK if args.quick else FULL)
    if args.timeout:
        cfg["timeout"] = {name: args.timeout for name in SECTIONS}
    names = args.only.split(",") if args.only else list(SECTIONS)
    unknown = [n for n in names if n not in SECTIONS]
    if unknown:
        parser.error(f"unknown sections: {', '.join(unknown)}")

    root = Path(tempfile.mkdtemp(prefix="gitsessions-bench-"))
    started = time.perf_counter()
    results: dict[str, Any] = {}
    meta = {
        "mode": "quick" if args.quick else "full",
        "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "python": platform.python_version(),
        "dulwich": ".".join(map(str, dulwich.__version__)),
        "git": git_version(),
        "cpus": os.cpu_count(),
        "loadavg_start": os.getloadavg(),
        "chunk_fanout": FANOUT,
        "context_keep": CONTEXT_KEEP,
        "seed": SEED,
        "config": {k: v for k, v in cfg.items() if k != "json_reps"},
    }
    print(f"gitsessions store bench ({meta['mode']}), work dir {root}", flush=True)
    try:
        for name in names:
            print(f"... {name}", flush=True)
            results[name] = run_section(name, cfg, root)
            print(f"    {results[name]['wall_s']:.1f} s", flush=True)
    finally:
        if args.keep:
            print(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    meta["loadavg_end"] = os.getloadavg()
    meta["wall_s"] = time.perf_counter() - started

    print()
    if "commit" in results:
        print(report_commit(results["commit"]))
    if "fork" in results:
        print(report_fork(results["fork"]))
    if "list" in results:
        print(report_list(results["list"]))
    if "resume" in results:
        print(resume.report(results["resume"], sys.modules[__name__]))
    if "size" in results or "size_ref" in results:
        print(report_size(results.get("size", {}), results.get("size_ref", {})))
    if "commit" in results or "size_ref" in results:
        print(
            report_baselines(
                results.get("commit", {}), results.get("size", {}), results.get("size_ref", {})
            )
        )
    goal_rows = goals(results, args.quick)
    print(report_goals(goal_rows))
    print(
        f"total {meta['wall_s']:.0f} s; load average {meta['loadavg_start'][0]:.2f} -> "
        f"{meta['loadavg_end'][0]:.2f} on {meta['cpus']} cpus"
    )

    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps({"meta": meta, "results": results, "goals": goal_rows}, indent=2, default=str)
        + "\n"
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
