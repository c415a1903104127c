"""Convergence under concurrency (issue 21, item 5): three homes and one remote, random
work and random sync order, two homes syncing at once (one of them sometimes working
meanwhile, under the session's lease); at the end every home holds the
same sessions, no message is lost, one divergence makes one fork, tombstones win and a
second pull changes nothing (tests/convergence_sim.py says how each is checked; the long
run is bench/convergence.py)."""

from pathlib import Path

import pytest

from gitsessions.store.sessions import SessionStore
from gitsessions.values.clock import now_iso
from gitsessions.values.ids import new_id
from tests.conftest import git
from tests.convergence_sim import Run, check, holding, opened, simulate, sync_once, work
from tests.test_sync import contents, make, say

SEEDS = (7, 8, 9)  # each with divergences (2 or 3 pull forks), deletes and concurrent pairs
ROUNDS = 18
CHECKS = (
    "same sessions",
    "no message lost",
    "one fork per divergence",
    "tombstones travel",
    "tombstones win",
    "second pull changes nothing",
    "git fsck clean",
)


@pytest.fixture(scope="module")
def runs() -> dict[int, Run]:
    return {}


def _run(runs: dict[int, Run], tmp_path_factory: pytest.TempPathFactory, seed: int) -> Run:
    if seed not in runs:  # one simulation per seed, whatever checks read it
        runs[seed] = simulate(tmp_path_factory.mktemp(f"seed-{seed}"), seed, ROUNDS, busy=True)
    return runs[seed]


@pytest.mark.parametrize("name", CHECKS)
@pytest.mark.parametrize("seed", SEEDS)
def test_three_homes_converge(runs, tmp_path_factory, seed: int, name: str) -> None:
    run = _run(runs, tmp_path_factory, seed)
    assert run.counts.get("turn", 0) and run.counts.get("pull", 0) and run.counts.get("push", 0)
    assert not run.errors
    if name == "one fork per divergence":
        assert run.pull_forks > 0  # the seed made divergences for the check to judge
    if name.startswith("tombstones"):
        assert run.deleted
    assert check(run)[name] == []


def _three(tmp_path: Path) -> Run:
    """Three empty homes on one bare remote, as the simulation starts them."""
    return simulate(tmp_path, seed=0, rounds=0)


def test_one_divergence_makes_one_fork_and_every_home_ends_with_both_lines(
    tmp_path: Path,
) -> None:
    run = _three(tmp_path)
    a, b, c = (run.homes[n] for n in ("a", "b", "c"))
    sid = make(a, tag="base")
    sync_once(run, "a", "push")
    for name in ("b", "c"):
        sync_once(run, name, "pull")
    say(a, sid, "on a")
    say(b, sid, "on b")
    say(c, sid, "on c")  # three lines of one session
    sync_once(run, "a", "push")  # the remote takes a's line first
    for name in ("b", "c"):
        assert sync_once(run, name, "push") == [
            {"id": sid, "result": "diverged", "detail": "run gitsessions pull"}
        ]
    for _ in range(2):  # every home pulls and pushes, twice: pulls twice, in all
        for name in ("a", "b", "c"):
            sync_once(run, name, "pull")
            sync_once(run, name, "push")
    assert run.pull_forks == 2  # b's line and c's line, once each
    held = [holding(home) for home in (a, b, c)]
    assert held[0].heads == held[1].heads == held[2].heads  # same ids, same heads
    assert len(held[0].heads) == 3
    texts = {t for transcript in held[0].transcripts.values() for t in transcript}
    assert {"on a", "on b", "on c", "reply to on b", "reply to on c"} <= texts
    assert "on a" in contents(b, sid) and "on a" in contents(c, sid)  # the remote's line
    forks = {f: held[0].headers[f] for f in run.pull_fork_ids}
    assert {h["parent_id"] for h in forks.values()} == {sid}
    for name in ("a", "b", "c"):  # and one more pull changes nothing anywhere
        assert {o["result"] for o in sync_once(run, name, "pull")} == {"unchanged"}
    assert [holding(home).heads for home in (a, b, c)] == [h.heads for h in held]


def test_work_and_syncs_are_what_the_seed_says(tmp_path: Path) -> None:
    """The checks mean something only if the work happened: a run does every kind of
    work it draws and writes each message it logs into the home that did it."""
    run = _three(tmp_path)
    import random

    rng = random.Random(5)
    for step in range(12):
        work(run, rng, "a", step)
    with opened(run.homes["a"]) as store:
        assert isinstance(store, SessionStore)
        texts = {t for s in store.ids() for t in contents(run.homes["a"], s)}
    assert {text for sid, text in run.written if sid not in run.deleted} <= texts
    assert {"new", "turn"} <= set(run.counts)


def test_a_home_an_older_pull_left_diverged_converges_at_its_next_pull(tmp_path: Path) -> None:
    """An older pull kept this home's line under the id and forked the remote's; every
    pull after it said "its diverged line was forked before" and the id stayed diverged.
    Now the next pull makes this home's line a fork too and the id takes the remote's."""
    run = _three(tmp_path)
    a, b = run.homes["a"], run.homes["b"]
    sid = make(a, tag="base")
    sync_once(run, "a", "push")
    sync_once(run, "b", "pull")
    say(a, sid, "on a")
    say(b, sid, "on b")
    sync_once(run, "a", "push")
    theirs = git(b / "store.git", "ls-remote", str(run.remote), f"refs/heads/sessions/{sid}")
    sha = theirs.stdout.split()[0]
    git(b / "store.git", "fetch", "-q", str(run.remote), f"{sha}:refs/older/{sid}")
    with opened(b) as store:  # what the older pull wrote: a fork of the remote's line
        remote_line = store.head_at(sid, sha.encode())
        store.fork(remote_line, new_id(), title="base (from origin)", created_at=now_iso())
    git(b / "store.git", "update-ref", "-d", f"refs/older/{sid}")
    pushed = {o["id"]: o["result"] for o in sync_once(run, "b", "push")}
    assert pushed[sid] == "diverged"  # and the older fork went as a new session
    pulled = {o["id"]: o for o in sync_once(run, "b", "pull")}
    assert pulled[sid]["result"] == "forked"
    sync_once(run, "b", "push")
    sync_once(run, "a", "pull")
    assert holding(a).heads == holding(b).heads
    assert "on b" in contents(a, pulled[sid]["fork"]) and "on a" in contents(b, sid)


def test_a_turn_written_while_a_pull_forks_stays_and_the_next_pull_converges(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer that ignores the lease commits between the pull's fork and its move of
    the branch: the compare-and-swap refuses, the turn stays on the id, and the next
    pull forks the newer line; every home still ends the same, nothing lost."""
    from gitsessions.services.sessions import writer

    run = _three(tmp_path)
    a, b = run.homes["a"], run.homes["b"]
    sid = make(a, tag="base")
    sync_once(run, "a", "push")
    sync_once(run, "b", "pull")
    say(a, sid, "on a")
    say(b, sid, "on b")
    sync_once(run, "a", "push")
    real = writer.fork

    def fork_then_write(*args, **kwargs):  # type: ignore[no-untyped-def]
        made = real(*args, **kwargs)
        say(b, sid, "typed meanwhile")  # a real commit by another writer
        return made

    monkeypatch.setattr(writer, "fork", fork_then_write)
    first = {o["id"]: o for o in sync_once(run, "b", "pull")}[sid]
    monkeypatch.setattr(writer, "fork", real)
    assert first["result"] == "forked" and "changed here meanwhile" in first["detail"]
    assert "typed meanwhile" in contents(b, sid) and "on a" not in contents(b, sid)
    second = {o["id"]: o for o in sync_once(run, "b", "pull")}[sid]
    assert second["result"] == "forked" and second["detail"] == "diverged: this home's line"
    assert "typed meanwhile" in contents(b, second["fork"])
    sync_once(run, "b", "push")
    sync_once(run, "a", "pull")
    assert holding(a).heads == holding(b).heads  # the first fork too: a prefix, kept
    assert contents(a, sid) == contents(b, sid) and "on a" in contents(b, sid)
