"""Side by side with the peers (issue 24, item 4): gitsessions against Codex CLI (`codex`),
opencode (`opencode`) and simonw/llm (`llm`), each run as a new process against the tests'
fake OpenAI server (127.0.0.1, no network; Codex through its Responses endpoint), each in
homes and config of its own under a temporary directory.

It installs nothing: a peer is the binary of that name found on PATH, and a peer that is
missing is a row saying so. gitsessions is always there (`sys.executable -m gitsessions`).
Measured, each command a whole process (wall seconds from spawn to exit and peak RSS from
`wait4`, the process and the children it waited for), medians of `--reps`, every case of
every peer interleaved in one round-robin (the same machine at the same load):

- fresh: one turn of a new session;
- turn N+1 of a session of N=27 and of N=`--long` messages (wall and RSS, and their
  ratio: how a turn's cost grows with the session);
- list: the listing of `--sessions` one-turn sessions (the peer's command for it);
- search: a word held by 1 in 100 of those sessions (10 of 1,000);
- store / raw: the bytes on disk of the peer's store after `--turns` turns of one
  session, as left (no gc; once its size stops changing, so background packing a turn
  started is done), against the text of its prompts and replies.

Sessions are built the cheapest honest way for each peer: gitsessions through its own
store (`SessionStore.create`, as `bench/counts.py`) for the long session and the many,
llm through its own Python API in one process (`conversation.prompt`, then
`log_to_db`: the rows its CLI writes), both with real requests where the peer makes
them; Codex and opencode have no such API, so their sessions are built by running their
own turns as processes (`exec resume --last`, `run -c`): only with `--slow-builds NAME` for
the long and the many sessions (a few hundred processes of 0.5 to 6 s), by default for the
`--turns` store session of Codex only. What is not measured says why in its cell.

    uv run python bench/peers.py                   # reps 5; minutes
    PATH=/tmp/peers/bin:$PATH uv run python bench/peers.py --slow-builds codex
"""

import argparse
import json
import multiprocessing
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench import store as bench  # noqa: E402
from bench.counts import build as build_long_session  # noqa: E402
from gitsessions.store import maintenance  # noqa: E402
from gitsessions.store.sessions import Change, SessionStore  # noqa: E402
from gitsessions.values.records import new_header  # noqa: E402
from tests.fake_openai import FakeOpenAI  # noqa: E402

SHORT = 27
NEEDLE = "zanzibar"
REPLY = (
    "Done: I read the module, the failing test points at the parser's handling of an empty "
    "header, and the fix is one guard before the split. Say if you want it applied."
)
PEERS = ("gitsessions", "codex", "llm", "opencode")


def prompt(n: int) -> str:
    """The n-th prompt of a built session; 10 of every `--sessions` hold the needle."""
    return f"turn {n}: look at the parser and say what fails" + (
        f" {NEEDLE}" if n % 100 == 7 else ""
    )


def measured(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, int, float, str]:
    """(wall seconds, exit status, peak RSS MB, stderr's end) of `cmd` run from a small
    waiter process (`bench.store.WAITER`)."""
    waiter = subprocess.run(
        [sys.executable, "-c", bench.WAITER], input=json.dumps([cmd, env]), capture_output=True,
        text=True, check=True, cwd=cwd,
    )  # fmt: skip
    seconds, code, rss, error = json.loads(waiter.stdout)
    return seconds, code, rss, error


def disk_bytes(root: Path, skip: tuple[str, ...] = ()) -> int:
    """Bytes on disk (allocated blocks) of the files under `root`, less the `skip` names."""
    total = 0
    for path in root.rglob("*"):
        if any(part in skip for part in path.relative_to(root).parts):
            continue
        if path.is_file() and not path.is_symlink():
            total += path.stat().st_blocks * 512
    return total


@dataclass
class Home:
    """One peer's state for one case: its directory, workspace and environment."""

    root: Path
    work: Path
    env: dict[str, str]
    session: str | None = None  # a session id, where the peer resumes by id


@dataclass
class Peer:
    """How one tool is run. Commands are None where the tool has no such command."""

    name: str
    binary: str | None
    setup: Callable[["Peer", Home, str], None]
    fresh: Callable[[Home, str], list[str]]
    resume: Callable[[Home, str], list[str]]
    listing: Callable[[Home], list[str]] | None = None
    search: Callable[[Home], list[str]] | None = None
    store: Callable[[Home], int] = lambda home: disk_bytes(home.root)
    cheap_long: Callable[[Home, int], None] | None = None
    cheap_many: Callable[[Home, int], None] | None = None
    why_no_list: str = ""
    why_no_search: str = ""
    extra_env: dict[str, str] = field(default_factory=dict)


def base_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITSESSIONS_", "OPENAI_"))}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: imports read cached bytecode
    env["OPENAI_API_KEY"] = "sk-fake"
    return env


def run_plain(cmd: list[str], home: Home) -> None:
    done = subprocess.run(cmd, env=home.env, cwd=home.work, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"{cmd[:4]} failed: {done.stderr[-1500:]}")


# -- gitsessions --------------------------------------------------------------------


def gs(home: Home, *args: str) -> list[str]:
    return [sys.executable, "-m", "gitsessions", "--home", str(home.root / "gs"), *args]


def gs_setup(peer: Peer, home: Home, url: str) -> None:
    home.env["PYTHONPATH"] = str(REPO)
    home.env["GS_URL"] = url  # read back by the commands below


def gs_turn(home: Home, text: str, *resume: str) -> list[str]:
    url = home.env["GS_URL"]
    return gs(home, "exec", *resume, "--base-url", url, "--model", "fake-model",
              "--workspace", str(home.work), text)  # fmt: skip


def gs_resume(home: Home, text: str) -> list[str]:
    return gs_turn(home, text, *(["--resume", home.session] if home.session else ["--continue"]))


def gs_build_long(home: Home, n: int) -> None:
    target = home.root / "gs"
    builder = multiprocessing.get_context("fork").Process(
        target=build_long_session, args=(target, n)
    )
    builder.start()
    builder.join()
    home.session = (target / "id").read_text()


def _build_many(home: Path, n: int) -> None:
    store = SessionStore(home, background_maintenance=False)
    for i in range(n):
        messages = [
            {"role": "system", "content": "You are a coding agent."},
            {"role": "user", "content": prompt(i)},
            {"role": "assistant", "content": REPLY},
        ]
        header = new_header(f"{i + 1:032x}", "2026-01-01T00:00:00Z")
        store.create(header, Change(context=messages, append=messages))
    maintenance.merge_packs(store.git)  # what background maintenance would have left
    store.close()


def gs_build_many(home: Home, n: int) -> None:
    builder = multiprocessing.get_context("fork").Process(
        target=_build_many, args=(home.root / "gs", n)
    )
    builder.start()
    builder.join()


# -- llm ----------------------------------------------------------------------------

LLM_BUILDER = textwrap.dedent(
    """
    import sys, llm, sqlite_utils
    from llm.migrations import migrate
    mode, n = sys.argv[1], int(sys.argv[2])
    prompts = sys.stdin.read().split("\\n")
    db = sqlite_utils.Database(llm.user_dir() / "logs.db")
    migrate(db)
    model = llm.get_model("fake")
    conversation = model.conversation()
    for i in range(n):
        if mode == "many":
            conversation = model.conversation()
        response = conversation.prompt(prompts[i])
        response.text()
        response.log_to_db(db)
    """
)


def llm_setup(peer: Peer, home: Home, url: str) -> None:
    home.env["LLM_USER_PATH"] = str(home.root / "llm")
    (home.root / "llm").mkdir()
    (home.root / "llm" / "extra-openai-models.yaml").write_text(
        f'- model_id: fake\n  model_name: fake-model\n  api_base: "{url}"\n'
    )


def llm_python(peer: Peer) -> str:
    assert peer.binary is not None
    first = Path(peer.binary).read_bytes()[:300].split(b"\n")[0]
    if not first.startswith(b"#!"):
        raise RuntimeError("llm is not a Python script: cannot build its sessions cheaply")
    return first[2:].decode().strip()


def llm_builder(peer: Peer, mode: str) -> Callable[[Home, int], None]:
    def build(home: Home, n: int) -> None:  # n messages of one session, or n sessions
        n = n if mode == "many" else (n + 1) // 2
        prompts = [prompt(i) for i in range(n)]
        done = subprocess.run(
            [llm_python(peer), "-c", LLM_BUILDER, mode, str(n)], input="\n".join(prompts),
            env=home.env, cwd=home.work, capture_output=True, text=True,
        )  # fmt: skip
        if done.returncode:
            raise RuntimeError(f"llm build failed: {done.stderr[-1500:]}")

    return build


# -- Codex and opencode -------------------------------------------------------------


def codex_setup(peer: Peer, home: Home, url: str) -> None:
    home.env["CODEX_HOME"] = str(home.root / "codex")
    (home.root / "codex").mkdir()
    (home.root / "codex" / "config.toml").write_text(
        'model = "fake-model"\nmodel_provider = "fake"\n\n[model_providers.fake]\n'
        f'name = "fake"\nbase_url = "{url}"\nwire_api = "responses"\n'
    )


def opencode_setup(peer: Peer, home: Home, url: str) -> None:
    for kind in ("CONFIG", "DATA", "CACHE", "STATE"):
        home.env[f"XDG_{kind}_HOME"] = str(home.root / "oc" / kind.lower())
    home.env["OPENCODE_DISABLE_MODELS_FETCH"] = "1"
    home.env["OPENCODE_DISABLE_AUTOUPDATE"] = "1"
    config = home.root / "oc" / "config" / "opencode"
    config.mkdir(parents=True)
    provider = {
        "npm": "@ai-sdk/openai-compatible", "name": "fake",
        "options": {"baseURL": url, "apiKey": "sk-fake"},
        "models": {"fake-model": {"name": "fake model"}},
    }  # fmt: skip
    (config / "opencode.json").write_text(json.dumps({
        "provider": {"fake": provider}, "model": "fake/fake-model", "autoupdate": False,
        "share": "disabled",
    }))  # fmt: skip


def peers() -> list[Peer]:
    codex, llm, opencode = (shutil.which(name) for name in ("codex", "llm", "opencode"))
    return [
        Peer(
            "gitsessions",
            sys.executable,
            gs_setup,
            gs_turn,
            gs_resume,
            listing=lambda h: gs(h, "list"),
            search=lambda h: gs(h, "search", NEEDLE),
            store=lambda h: disk_bytes(h.root / "gs"),
            cheap_long=gs_build_long,
            cheap_many=gs_build_many,
        ),
        Peer(
            "codex",
            codex,
            codex_setup,
            lambda h, t: [codex or "codex", "exec", "--skip-git-repo-check", t],
            lambda h, t: [codex or "codex", "exec", "--skip-git-repo-check", "resume", "--last", t],
            store=lambda h: disk_bytes(h.root / "codex", skip=("skills", "config.toml")),
            why_no_list="no command lists sessions (only its TUI's resume picker)",
            why_no_search="no command searches sessions",
        ),
        Peer(
            "llm",
            llm,
            llm_setup,
            lambda h, t: [llm or "llm", "-m", "fake", t],
            lambda h, t: [llm or "llm", "-c", t],
            listing=lambda h: [llm or "llm", "logs", "list", "-n", "0", "--short"],
            search=lambda h: [llm or "llm", "logs", "list", "-q", NEEDLE, "-n", "0", "--short"],
            store=lambda h: disk_bytes(h.root / "llm", skip=("extra-openai-models.yaml",)),
        ),
        Peer(
            "opencode",
            opencode,
            opencode_setup,
            lambda h, t: [opencode or "opencode", "run", "-m", "fake/fake-model", t],
            lambda h, t: [opencode or "opencode", "run", "-m", "fake/fake-model", "-c", t],
            listing=lambda h: [opencode or "opencode", "session", "list"],
            store=lambda h: disk_bytes(h.root / "oc" / "data", skip=("log", "bin")),
            why_no_search="no command searches sessions",
        ),
    ]


def _fix_llm(peer: Peer) -> None:
    if peer.name == "llm" and peer.binary:
        peer.cheap_long = llm_builder(peer, "long")
        peer.cheap_many = llm_builder(peer, "many")


# -- the run ------------------------------------------------------------------------


class NotMeasured(Exception):
    """A case a peer cannot run here; its message is the cell's text."""


def new_home(peer: Peer, work: Path, case: str, url: str) -> Home:
    root = work / peer.name / case
    (root / "work").mkdir(parents=True)
    home = Home(root, root / "work", {**base_env(), "HOME": str(root / "home")})
    (root / "home").mkdir()
    peer.setup(peer, home, url)
    return home


def build_turns(peer: Peer, home: Home, turns: int) -> None:
    """A session of `turns` turns through the peer's own turn commands, as processes."""
    run_plain(peer.fresh(home, prompt(0)), home)
    for i in range(1, turns):
        run_plain(peer.resume(home, prompt(i)), home)


def prepare(peer: Peer, work: Path, url: str, args: argparse.Namespace) -> dict[str, Any]:
    """Every case's home and command for `peer` (or why not), and its store sizes."""
    cases: dict[str, Any] = {}
    home = new_home(peer, work, "fresh", url)
    cases["fresh"] = (peer.fresh(home, "say ok"), home)
    for label, n in (("short", SHORT), ("long", args.long)):
        home = new_home(peer, work, label, url)
        turns = (n + 1) // 2
        if peer.cheap_long is not None:
            peer.cheap_long(home, n)
        elif peer.name in args.slow_builds or n == SHORT:
            build_turns(peer, home, turns)
        else:
            cases[label] = NotMeasured(f"not built: {turns} `{peer.name}` turn processes "
                                       "(--slow-builds " + peer.name + ")")  # fmt: skip
            continue
        cases[label] = (peer.resume(home, "go on"), home)
    many: Home | None = None
    wanted = peer.listing is not None or peer.search is not None
    if wanted and (peer.cheap_many is not None or peer.name in args.slow_builds):
        many = new_home(peer, work, "many", url)
        if peer.cheap_many is not None:
            peer.cheap_many(many, args.sessions)
        else:
            for i in range(args.sessions):
                run_plain(peer.fresh(many, prompt(i)), many)
    for label, command, why in (
        ("list", peer.listing, peer.why_no_list),
        ("search", peer.search, peer.why_no_search),
    ):
        if command is None:
            cases[label] = NotMeasured(why)
        elif many is None:
            cases[label] = NotMeasured(f"not built: {args.sessions:,} `{peer.name}` sessions, "
                                       f"a process each (--slow-builds {peer.name})")  # fmt: skip
        else:
            cases[label] = (command(many), many)
    if peer.name != "opencode" or peer.name in args.slow_builds:
        home = new_home(peer, work, "asleft", url)
        if peer.name == "llm" and peer.cheap_long is not None:
            peer.cheap_long(home, 2 * args.turns)
        else:
            build_turns(peer, home, args.turns)
        raw = sum(len(prompt(i).encode()) + len(REPLY.encode()) for i in range(args.turns))
        cases["store"] = {"bytes": settled(peer, home), "raw": raw}
    else:
        cases["store"] = NotMeasured(f"not built: {args.turns} `opencode run` processes "
                                     "(--slow-builds " + peer.name + ")")  # fmt: skip
    return cases


def settled(peer: Peer, home: Home, limit: float = 60.0) -> int:
    """The store's bytes once they stop changing (two readings a second apart agree, at
    most `limit` seconds): "as left" includes what the last command left running (the
    packing gitsessions starts in the background after a turn)."""
    last, waited = peer.store(home), 0.0
    while waited < limit:
        time.sleep(1.0)
        waited += 1.0
        now = peer.store(home)
        if now == last:
            return now
        last = now
    return last


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--long", type=int, default=1_000, help="messages of the long session")
    parser.add_argument("--sessions", type=int, default=1_000, help="sessions listed, searched")
    parser.add_argument("--turns", type=int, default=100, help="turns of the store session")
    parser.add_argument("--slow-builds", default="", metavar="PEERS",
                        help="codex,opencode: build their sessions by running turns")  # fmt: skip
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "peers.json")
    args = parser.parse_args()
    args.slow_builds = [name for name in args.slow_builds.split(",") if name]
    found = peers()
    for peer in found:
        _fix_llm(peer)
    present = [p for p in found if p.binary]
    missing = {p.name: "not on PATH" for p in found if not p.binary}
    timed: dict[tuple[str, str], tuple[list[str], Home]] = {}
    cells: dict[str, dict[str, Any]] = {p.name: {} for p in found}
    with tempfile.TemporaryDirectory(prefix="gitsessions-peers-") as tmp, FakeOpenAI() as server:
        server.responder = lambda request: REPLY
        work = Path(tmp)
        for peer in present:
            print(f"building {peer.name} ...", file=sys.stderr, flush=True)
            try:
                cases = prepare(peer, work, server.base_url, args)
            except (RuntimeError, OSError) as error:
                missing[peer.name] = f"failed to set up: {str(error).splitlines()[-1][:200]}"
                continue
            for label, case in cases.items():
                if isinstance(case, NotMeasured):
                    cells[peer.name][label] = {"not_measured": str(case)}
                elif isinstance(case, dict):
                    cells[peer.name][label] = case
                else:
                    timed[peer.name, label] = case
        for key, (cmd, home) in timed.items():  # one unmeasured run each: caches, first runs
            seconds, status, rss, error = measured(cmd, home.env, home.work)
            if status:
                cells[key[0]][key[1]] = {"not_measured": f"exit {status}: {error[-300:]}"}
        timed = {k: v for k, v in timed.items() if k[1] not in cells[k[0]]}
        runs: dict[tuple[str, str], list[tuple[float, float]]] = {key: [] for key in timed}
        for rep in range(args.reps):
            print(f"round {rep + 1}/{args.reps}", file=sys.stderr, flush=True)
            for key, (cmd, home) in timed.items():
                seconds, status, rss, error = measured(cmd, home.env, home.work)
                if status:
                    raise RuntimeError(f"{key} failed: {error[-1000:]}")
                runs[key].append((seconds, rss))
    for (name, label), values in runs.items():
        cells[name][label] = {
            "median_s": statistics.median(v[0] for v in values),
            "rss_mb": statistics.median(v[1] for v in values),
            "seconds": [round(v[0], 4) for v in values],
        }
    result = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": platform.platform(),
        "load": os.getloadavg(),
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "peers": {p.name: {"binary": p.binary, "version": version(p)} for p in present},
        "missing": missing,
        "cells": cells,
    }
    table = render(cells, missing, args)
    result["table"] = table
    print(table)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")


def version(peer: Peer) -> str:
    if peer.name == "gitsessions":
        done = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True)  # fmt: skip
        return done.stdout.strip()
    assert peer.binary is not None
    done = subprocess.run([peer.binary, "--version"], capture_output=True, text=True, timeout=60)
    return (done.stdout or done.stderr).strip().splitlines()[-1] if done.returncode == 0 else "?"


def render(
    cells: dict[str, dict[str, Any]], missing: dict[str, str], args: argparse.Namespace
) -> str:
    """The markdown table: one row a measure, one column a peer, ratios to gitsessions."""
    ours = cells["gitsessions"]
    hits = sum(1 for i in range(args.sessions) if NEEDLE in prompt(i))

    def timing(name: str, label: str) -> str:
        cell = cells[name].get(label, {})
        if "median_s" not in cell:
            return cell.get("not_measured", "-")
        text = f"{cell['median_s']:.3f} s"
        base = ours.get(label, {}).get("median_s")
        return (
            text
            if name == "gitsessions" or not base
            else f"{text} ({cell['median_s'] / base:.1f}x)"
        )

    def growth(name: str, key: str, unit: str) -> str:
        short, long = cells[name].get("short", {}), cells[name].get("long", {})
        fmt = "{:.3f}" if unit == "s" else "{:.0f}"
        if key in short and key not in long:  # the long session not built: the short's alone
            return f"{long.get('not_measured', '-')}; N={SHORT}: {fmt.format(short[key])} {unit}"
        if key not in short or key not in long:
            return long.get("not_measured") or short.get("not_measured") or "-"
        a, b = short[key], long[key]
        return f"{b / a:.2f}x ({fmt.format(a)} -> {fmt.format(b)} {unit})"

    def store(name: str) -> str:
        cell = cells[name].get("store", {})
        if "bytes" not in cell:
            return cell.get("not_measured", "-")
        return f"{cell['bytes'] / cell['raw']:.0f}x ({cell['bytes'] / 1e6:.2f} MB)"

    rows = [
        ("fresh turn", lambda n: timing(n, "fresh")),
        (f"turn N+1, N={args.long:,} vs N={SHORT}", lambda n: growth(n, "median_s", "s")),
        (
            f"peak RSS of that turn, N={args.long:,} vs N={SHORT}",
            lambda n: growth(n, "rss_mb", "MB"),
        ),
        (f"list {args.sessions:,} sessions", lambda n: timing(n, "list")),
        (
            f"search ({args.sessions:,} sessions, {hits} with the word)",
            lambda n: timing(n, "search"),
        ),
        (f"store on disk / raw text, {args.turns} turns, as left", store),
    ]
    names = list(cells)
    lines = ["| measured | " + " | ".join(names) + " |", "| --- " * (len(names) + 1) + "|"]
    for title, cell in rows:
        values = [f"missing ({missing[n]})" if n in missing else cell(n) for n in names]
        lines.append(f"| {title} | " + " | ".join(values) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
