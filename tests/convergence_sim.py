"""A seeded simulation of three machines sharing one sync remote, and the checks of
convergence (issue 21, item 5): `tests/test_convergence.py` runs it short,
`bench/convergence.py` long.

Three homes (each its own `GITSESSIONS_HOME`) and one bare git repository. Each round one
home does random work through the real store and services (a new session, turns,
renames, forks, deletes, manual compactions) and homes sync in a random order (push or
pull, sometimes with `push --prune`); some rounds two homes sync at the same moment, each
in its own thread (sync runs stock git in child processes, so the two really overlap on
the remote), and with `busy` the first of them sometimes works meanwhile (a turn holds
the session's lease, as a running agent does: the pull leaves that session `busy`).
Every message written is logged. At the end each home pulls and pushes, twice, then
pulls once more; `check` says what does not hold:

- `same sessions`: every home holds the same live sessions at the same heads;
- `no message lost`: every logged message is in some transcript in every home (those
  written into a session deleted somewhere, or held by one when it was deleted, are
  exempt: a delete is on purpose);
- `one fork per divergence`: no two forks a pull made hold the same diverged line, and
  every home holds the same pull forks;
- `tombstones win`: no home holds a session deleted in any home;
- `second pull changes nothing`: the last pull of every home reports every session
  unchanged and moves no ref;
- `git fsck clean`: stock `git fsck --strict` finds nothing wrong in any store or the
  remote.
Nothing here knows how sync resolves a divergence: the checks read only the homes.

The seed fixes the work and the order of the syncs; which of two concurrent syncs
reaches the remote first is the machine's, so two runs of one seed can end differently.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gitsessions.services.compaction.compaction_policy import Policy
from gitsessions.services.compaction.compactor import compact_session
from gitsessions.services.compaction.continuation import SummaryRequest, SummaryResult
from gitsessions.services.sessions import manage
from gitsessions.services.sync.pull import pull
from gitsessions.services.sync.push import push
from gitsessions.services.sync.remotes import add_remote
from gitsessions.store import tombstones
from gitsessions.store.lease import Lease
from gitsessions.store.sessions import Change, SessionStore
from gitsessions.values.clock import now_iso
from gitsessions.values.errors import GitsessionsError
from gitsessions.values.ids import new_id
from gitsessions.values.records import new_header

REPO = Path(__file__).resolve().parent.parent
HOMES = ("a", "b", "c")
POLICY = Policy(max_context_tokens=400, keep_recent_tool_results=1, target=0.5)
WORK = ("new", "turn", "turn", "turn", "rename", "fork", "delete", "compact")
STILL = ("unchanged", "deleted here")  # pull results that change nothing here


def _count(messages: Any) -> int:
    return sum(len(str(m.get("content") or "")) for m in messages) // 4 + 10


def _summarize(_request: SummaryRequest) -> SummaryResult:
    return SummaryResult("what happened so far", "fake", prompt_tokens=1, completion_tokens=1)


@contextmanager
def opened(home: Path) -> Iterator[SessionStore]:
    """A store of `home` for one operation (each thread opens its own)."""
    store = SessionStore(home, background_maintenance=False)
    try:
        yield store
    finally:
        store.close()


@dataclass
class Run:
    """What one simulation did and what its homes hold at the end."""

    seed: int
    rounds: int
    remote: Path
    homes: dict[str, Path]
    written: list[tuple[str, str]] = field(default_factory=list)  # (session, text)
    deleted: set[str] = field(default_factory=set)
    deleted_texts: set[str] = field(default_factory=set)  # what those held when deleted
    order: dict[str, int] = field(default_factory=dict)  # session -> when work first saw it
    pull_fork_ids: set[str] = field(default_factory=set)  # the forks pulls made
    counts: dict[str, int] = field(default_factory=dict)  # what was done, by kind
    pull_forks: int = 0  # "forked" outcomes of every pull
    last_pulls: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    last_moved: dict[str, bool] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)  # sync calls that raised
    cli: bool = False  # syncs run `gitsessions push|pull` as child processes
    busy: bool = False  # a home may work (a turn under the session's lease) while it syncs
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self, kind: str) -> None:
        with self.lock:
            self.counts[kind] = self.counts.get(kind, 0) + 1


def _turn(run: Run, store: SessionStore, sid: str, tag: str) -> None:
    """One turn, holding the session's lease as a running agent does."""
    msgs = [
        {"role": "user", "content": f"{tag} asks " + "x" * 200},
        {"role": "assistant", "content": f"{tag} answers " + "y" * 200},
    ]
    with Lease(store.home, sid):
        head = store.head(sid)
        context = store.read(head, "context") + msgs
        store.commit(head, Change(context=context, append=msgs), event="turn", subject="turn")
    with run.lock:
        run.written += [(sid, str(m["content"])) for m in msgs]


def work(run: Run, rng: random.Random, name: str, step: int) -> None:
    """One random piece of work in home `name`."""
    tag = f"s{run.seed}-r{step}-{name}"
    with opened(run.homes[name]) as store:
        new = [sid for sid in store.ids() if sid not in run.order]
        titles = {sid: str(store.head(sid).header.get("title")) for sid in new}
        for sid in sorted(new, key=lambda sid: (titles[sid], sid)):  # ids are random
            run.order[sid] = len(run.order)  # pick by when work first saw them, by title
        ids = sorted(store.ids(), key=run.order.__getitem__)
        kind = rng.choice(WORK) if ids else "new"
        sid = rng.choice(ids) if ids else ""
        if kind == "new":
            system = {"role": "system", "content": "You are a coding agent."}
            head = store.create(
                new_header(new_id(), now_iso(), title=f"session {tag}"),
                Change(context=[system], append=[system]),
            )
            _turn(run, store, head.id, tag)
        elif kind == "turn":
            _turn(run, store, sid, tag)
        elif kind == "rename":
            manage.rename(store, sid, f"renamed {tag}")
        elif kind == "fork":
            fork = manage.fork(store, sid)
            _turn(run, store, fork.id, tag)
        elif kind == "delete":
            run.deleted_texts.update(
                str(m.get("content")) for m in store.transcript(store.head(sid))
            )
            manage.delete(store, sid)
            run.deleted.add(sid)
        else:
            try:
                compact_session(
                    store, store.head(sid), policy=POLICY, summarize=_summarize,
                    count=_count, cost=lambda *_: 0.0, trigger="manual",
                )  # fmt: skip
            except GitsessionsError:
                kind = "compact (nothing to do)"
        run.count(kind)


def sync_once(run: Run, name: str, how: str) -> list[dict[str, Any]]:
    """One push or pull of home `name`: its outcomes (a raised error is recorded)."""
    if run.cli:
        return _sync_cli(run, name, how)
    try:
        with opened(run.homes[name]) as store:
            if how == "pull":
                report = pull(store, "origin")
            else:
                report = push(store, "origin", None, prune=how == "push --prune")
    except GitsessionsError as error:  # a lost race on the remote is one error line
        with run.lock:
            run.errors.append(f"{name} {how}: {error}")
        return []
    return _record(run, how, [o.as_dict() for o in report.sessions])


def _record(run: Run, how: str, outcomes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    with run.lock:
        run.pull_forks += sum(o["result"] == "forked" for o in outcomes)
        run.pull_fork_ids.update(o["fork"] for o in outcomes if o["result"] == "forked")
    run.count(how)
    for outcome in outcomes:
        if outcome["result"] in ("busy", "refused", "behind", "diverged"):
            run.count(f"{how}: {outcome['result']}")
    return outcomes


def _sync_cli(run: Run, name: str, how: str) -> list[dict[str, Any]]:
    """`sync_once` through the real CLI in a child process (`--json`)."""
    args = (
        ["pull"] if how == "pull" else ["push", "--all", *(["--prune"] if "prune" in how else [])]
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "GITSESSIONS_"))}
    done = subprocess.run(
        [sys.executable, "-m", "gitsessions", "--home", str(run.homes[name]), *args, "--json"],
        capture_output=True, text=True, env=env, timeout=300, check=False, cwd=REPO,
    )  # fmt: skip
    try:
        report = json.loads(done.stdout)
    except ValueError:
        with run.lock:
            run.errors.append(f"{name} {how}: exit {done.returncode}: {done.stderr[-300:]}")
        return []
    return _record(run, how, report["sessions"])


def _refs(home: Path) -> str:
    return subprocess.run(
        ["git", "--git-dir", str(home / "store.git"), "for-each-ref", "refs/heads/"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip


def simulate(root: Path, seed: int, rounds: int, cli: bool = False, busy: bool = False) -> Run:
    """`rounds` rounds of random work and random syncs under `root`, then the final
    pulls and pushes; `cli`: every sync is a `gitsessions` child process (concurrent
    pairs are then two processes), else a call in this process (pairs: two threads)."""
    rng = random.Random(seed)
    remote = root / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    homes = {name: root / f"home-{name}" for name in HOMES}
    run = Run(seed, rounds, remote, homes, cli=cli, busy=busy)
    for path in run.homes.values():
        with opened(path) as store:
            add_remote(store, "origin", str(remote), root)
    for step in range(rounds):
        for name in rng.sample(HOMES, rng.randint(1, 2)):
            work(run, rng, name, step)
        syncs = [
            (name, rng.choice(("pull", "pull", "push", "push", "push --prune")))
            for name in rng.sample(HOMES, rng.randint(0, 3))
        ]
        if len(syncs) >= 2 and rng.random() < 0.4:  # two homes at the same moment
            threads = [threading.Thread(target=sync_once, args=(run, *s)) for s in syncs[:2]]
            if run.busy and rng.random() < 0.5:  # and the first of them works meanwhile
                side = random.Random(rng.random())
                threads.append(threading.Thread(target=work, args=(run, side, syncs[0][0], step)))
                run.count("work during a sync")
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            run.count("concurrent pair")
            syncs = syncs[2:]
        for name, how in syncs:
            sync_once(run, name, how)
    for _ in range(2):
        for name in HOMES:
            sync_once(run, name, "pull")
            sync_once(run, name, "push")
    for name in HOMES:
        before = _refs(run.homes[name])
        run.last_pulls[name] = sync_once(run, name, "pull")
        run.last_moved[name] = _refs(run.homes[name]) != before
    return run


@dataclass(frozen=True)
class Holding:
    """What one home holds: each live session's head, transcript and header."""

    heads: dict[str, str]
    transcripts: dict[str, list[str]]
    headers: dict[str, dict[str, Any]]


def holding(home: Path) -> Holding:
    with opened(home) as store:
        heads, transcripts, headers = {}, {}, {}
        for sid in sorted(store.ids()):
            head = store.head(sid)
            heads[sid] = head.commit.decode()
            transcripts[sid] = [str(m.get("content")) for m in store.transcript(head)]
            headers[sid] = dict(head.header)
    return Holding(heads, transcripts, headers)


def check(run: Run) -> dict[str, list[str]]:
    """Each check's failures (an empty list: it holds)."""
    held = {name: holding(path) for name, path in run.homes.items()}
    failures: dict[str, list[str]] = {
        "same sessions": [],
        "no message lost": [],
        "one fork per divergence": [],
        "tombstones travel": [],
        "tombstones win": [],
        "second pull changes nothing": [],
        "git fsck clean": [],
    }
    live = {name: {s: h for s, h in hold.heads.items() if s not in run.deleted}
            for name, hold in held.items()}  # fmt: skip
    for name in HOMES[1:]:
        for sid in sorted(set(live[name]) | set(live[HOMES[0]])):
            mine, theirs = live[HOMES[0]].get(sid), live[name].get(sid)
            if mine != theirs:
                seen = f"{HOMES[0]} {(mine or 'absent')[:8]}, {name} {(theirs or 'absent')[:8]}"
                failures["same sessions"].append(f"{sid[:8]}: {seen}")
    for name, hold in held.items():
        texts = {t for transcript in hold.transcripts.values() for t in transcript}
        lost = [
            text
            for sid, text in run.written
            if sid not in run.deleted and text not in run.deleted_texts and text not in texts
        ]
        failures["no message lost"] += [f"{name}: {text.split()[0]}" for text in lost]
    forks = run.pull_fork_ids - run.deleted
    for name, hold in held.items():
        lines: dict[str, str] = {}
        for sid in sorted(forks & set(hold.heads)):
            line = _fork_source(run.homes[name], hold.heads[sid])
            if line in lines:
                failures["one fork per divergence"].append(
                    f"{name}: {lines[line][:8]} and {sid[:8]} hold one line"
                )
            lines[line] = sid
        for sid in sorted(forks - set(hold.heads)):
            failures["one fork per divergence"].append(f"{name} lacks the pull's fork {sid[:8]}")
        known = tombstones.deleted(run.homes[name] / "store.git")
        for sid in sorted(run.deleted - set(hold.heads) - known):
            failures["tombstones travel"].append(f"{name} does not know {sid[:8]} is deleted")
        for sid in sorted(run.deleted & set(hold.heads)):
            failures["tombstones win"].append(f"{name} still holds {sid[:8]}")
        moved = [o for o in run.last_pulls[name] if o["result"] not in STILL]
        failures["second pull changes nothing"] += [f"{name}: {o}" for o in moved]
        if run.last_moved[name]:
            failures["second pull changes nothing"].append(f"{name}: a ref moved")
    for where in [*(path / "store.git" for path in run.homes.values()), run.remote]:
        done = subprocess.run(
            ["git", "--git-dir", str(where), "fsck", "--strict", "--no-progress"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        if done.returncode != 0 or "error" in done.stderr.lower():
            failures["git fsck clean"].append(f"{where.parent.name}: {done.stderr[-200:]}")
    on_remote = _remote_tombstones(run.remote)
    for sid in sorted(run.deleted - on_remote):
        failures["tombstones travel"].append(f"the remote does not list {sid[:8]}")
    return failures


def _remote_tombstones(remote: Path) -> set[str]:
    shown = subprocess.run(
        ["git", "--git-dir", str(remote), "show", "refs/gitsessions/tombstones:deleted"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    return set(shown.stdout.split()) if shown.returncode == 0 else set()


def _fork_source(home: Path, head: str) -> str:
    """The commit a fork's first commit was made on (its parent's line), found from the
    fork's head by walking back to the commit whose trailer names `Event: fork`."""
    log = subprocess.run(
        ["git", "--git-dir", str(home / "store.git"), "log", "--format=%H %P%x00%B%x01", head],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    for entry in log.split("\x01"):
        ids, _, body = entry.strip().partition("\x00")
        if "Event: fork" in body:
            parts = ids.split()
            return parts[1] if len(parts) > 1 else parts[0]
    return head
