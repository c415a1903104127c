"""A pull killed at its `packed-refs` rename (issue 42): the `packed-refs.lock` it left
once stopped every later pull, push and sync until `doctor --repair`, and `doctor`
called the sessions that pull was creating lost. Now the next command sets the stale
lock aside (its writer's `flock` is free: the writer is gone) and goes on, and `doctor`
says those sessions were being created."""

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from gitsessions.cli.app import app
from gitsessions.services.sessions.search import SearchIndex
from gitsessions.store.arrivals import CHUNK_BYTES
from gitsessions.store.catalog import PROMPT_CHARS
from gitsessions.store.repo import GitStore
from gitsessions.store.sessions import Change, SessionStore
from gitsessions.store.storelock import PACKED_WRITER, flocked
from gitsessions.store.tracking import update_refs_if_equal
from tests.conftest import REPO, Cli, git
from tests.test_hostile_remote import bare
from tests.test_sync import make, refs, results, summary

SESSIONS = "refs/heads/sessions/"


def _killed_at_rename(
    home: Path, lock: Path, *args: str, calls: str = "rename,renameat,renameat2"
) -> subprocess.CompletedProcess[str]:
    """`gitsessions ARGS` killed as it renames `lock` into place (or makes another of
    `calls` on that path first: strace's injection, limited to it)."""
    return subprocess.run(
        ["strace", "-f", "-qq", "-o", "/dev/null", "-P", str(lock), "-e", f"trace={calls}",
         "-e", f"inject={calls}:signal=KILL:when=1",
         sys.executable, "-m", "gitsessions", "--home", str(home), *args],
        capture_output=True, text=True, cwd=REPO, env=dict(os.environ), timeout=300,
    )  # fmt: skip


def _arriving(cli: Cli, home: Path, tmp_path: Path, count: int) -> tuple[list[str], str]:
    """`count` sessions pushed by another home to a remote this home has added, and one
    session of this home's own: their ids."""
    writer = tmp_path / "writer"
    arriving = [make(writer, tag=f"arriving {n}") for n in range(count)]
    origin = bare(tmp_path / "origin.git")
    cli("--home", str(writer), "remote", "add", "origin", str(origin))
    cli("--home", str(writer), "push", "--all")
    mine = make(home, tag="mine")
    cli("remote", "add", "origin", str(origin))
    return arriving, mine


@pytest.mark.skipif(
    shutil.which("strace") is None, reason="strace is not installed: apt-get install strace"
)
def test_a_pull_killed_at_its_packed_refs_rename_stops_nothing_after_it(
    cli: Cli, home: Path, tmp_path: Path
):
    arriving, mine = _arriving(cli, home, tmp_path, 3)
    store = home / "store.git"
    lock = store / "packed-refs.lock"

    killed = _killed_at_rename(home, lock, "pull")
    assert killed.returncode in (-signal.SIGKILL, 128 + signal.SIGKILL), killed.stderr
    assert lock.exists() and set(refs(store, SESSIONS)) == {SESSIONS + mine}

    found = json.loads(cli("doctor", "--json", code=1).stdout)["findings"]
    kinds = {(f["kind"], f["subject"]) for f in found}
    assert {("unfinished", sid) for sid in arriving} <= kinds, found
    assert not [f for f in found if f["kind"] == "lost"], found
    assert ("lock", "store.git/packed-refs.lock") in kinds
    details = [f["detail"] for f in found if f["kind"] == "unfinished"]
    assert all("being created by a pull" in d for d in details)

    # the next pull sets the stale lock aside and brings them: no `doctor --repair`
    assert results(summary(cli, home, "pull")) == dict.fromkeys(arriving, "created")
    assert not lock.exists()
    assert results(summary(cli, home, "push", "--all"))[mine] == "new"
    cli("sync")
    assert json.loads(cli("doctor", "--json").stdout)["healthy"]


@pytest.mark.skipif(
    shutil.which("strace") is None, reason="strace is not installed: apt-get install strace"
)
def test_a_push_or_sync_after_a_killed_pull_goes_on(cli: Cli, home: Path, tmp_path: Path):
    """Not only a pull: the first command after the kill that writes `packed-refs` (here
    a push, whose remote-tracking refs it writes) recovers, and `doctor --repair`
    then creates what the pull was creating, as the pull would have."""
    writer = tmp_path / "writer"
    arriving = make(writer, tag="arriving")
    origin = bare(tmp_path / "origin.git")
    cli("--home", str(writer), "remote", "add", "origin", str(origin))
    cli("--home", str(writer), "push", "--all")
    mine = make(home, tag="mine")
    cli("remote", "add", "origin", str(origin))
    lock = home / "store.git" / "packed-refs.lock"
    killed = _killed_at_rename(home, lock, "pull")
    assert killed.returncode in (-signal.SIGKILL, 128 + signal.SIGKILL), killed.stderr

    assert results(summary(cli, home, "push", "--all")) == {mine: "new"}
    assert not lock.exists()
    repaired = json.loads(cli("doctor", "--repair", "--json").stdout)
    assert ("unfinished", arriving) in {(f["kind"], f["subject"]) for f in repaired["findings"]}
    assert SESSIONS + arriving in refs(home / "store.git", SESSIONS)
    assert json.loads(cli("doctor", "--json").stdout)["healthy"]


def _waiting_on(path: Path) -> bool:
    """Whether a `flock` waits for `path` (a blocked request in /proc/locks)."""
    inode = f":{os.stat(path).st_ino} "
    return any(
        "->" in line and inode in line for line in Path("/proc/locks").read_text().splitlines()
    )


def test_doctor_waits_for_a_write_under_way_and_never_calls_its_sessions_lost(cli: Cli, home: Path):
    """A pull records a head, then writes the branch under the writers' `flock`: a
    doctor in between once called that session lost (and `--repair` raced the pull).
    Here the test is the writer: it holds the `flock`, the session's head recorded
    and its branch not yet there, until doctor waits for it."""
    sid = make(home, tag="being created")
    store = home / "store.git"
    head = refs(store, SESSIONS)[SESSIONS + sid]
    git(store, "update-ref", "-d", SESSIONS + sid)  # recorded, not yet written
    done: list[str] = []

    def run_doctor() -> None:
        # exit 1 when it finds something: the runner itself, not `cli`'s exit check
        done.append(cli.runner.invoke(app, ["doctor", "--json"], catch_exceptions=False).stdout)

    with flocked(store, PACKED_WRITER):
        doctor = threading.Thread(target=run_doctor)
        doctor.start()
        while doctor.is_alive() and not _waiting_on(store / "locks" / PACKED_WRITER):
            doctor.join(0.05)  # until doctor waits for the writer (or ends: the bug)
        git(store, "update-ref", SESSIONS + sid, head)  # the write lands
    doctor.join()
    found = json.loads(done[0])["findings"]
    assert not [f for f in found if f["subject"] == sid], found


def _rows(home: Path) -> list[tuple[str, ...]]:
    """The listing cache's rows, sorted."""
    with sqlite3.connect(home / "index.sqlite") as db:
        return sorted(db.execute("SELECT * FROM headers"))


def _listed(cli: Cli) -> tuple[list[str], str]:
    out = cli("list", "--json", "--include-archived").stdout
    return [row["id"] for row in json.loads(out)], out


def test_a_pull_fills_the_listing_cache_as_a_listing_would(cli: Cli, home: Path, tmp_path: Path):
    """The rows a pull writes for the sessions it brings (their headers and first prompts,
    read in batches as they came) are the rows a listing reads from the store itself, so
    the first `list` after a pull reads no session again."""
    writer = tmp_path / "writer"
    arriving = [make(writer, turns=0, tag="empty"), *(make(writer, tag=f"t{n}") for n in range(3))]
    origin = bare(tmp_path / "origin.git")
    cli("--home", str(writer), "remote", "add", "origin", str(origin))
    cli("--home", str(writer), "push", "--all")
    cli("remote", "add", "origin", str(origin))
    assert results(summary(cli, home, "pull")) == dict.fromkeys(arriving, "created")
    store = home / "store.git"
    pulled = _rows(home)
    heads = {sid: sha for (sid, sha, *_rest) in pulled}
    assert heads == {sid: refs(store, SESSIONS)[SESSIONS + sid] for sid in arriving}
    assert {row[3] for row in pulled} == {"", "t0 question 0", "t1 question 0", "t2 question 0"}
    ids, shown = _listed(cli)
    assert sorted(ids) == sorted(arriving) and _rows(home) == pulled  # nothing read again
    (home / "index.sqlite").unlink()
    assert _listed(cli)[1] == shown and _rows(home) == pulled  # as a listing builds them


@pytest.mark.skipif(
    shutil.which("strace") is None, reason="strace is not installed: apt-get install strace"
)
def test_a_pull_killed_after_filling_the_cache_is_finished_by_the_next(
    cli: Cli, home: Path, tmp_path: Path
):
    """Killed as it renames `packed-refs` into place, a pull has written the cache's rows
    (and search's) of the sessions it was creating but no branch: `list` and `search`
    show none of them, the next pull creates them, and each is listed once, as a cache
    built anew lists it, and found by a search that reads none of them."""
    arriving, mine = _arriving(cli, home, tmp_path, 4)
    killed = _killed_at_rename(home, home / "store.git" / "packed-refs.lock", "pull")
    assert killed.returncode in (-signal.SIGKILL, 128 + signal.SIGKILL), killed.stderr
    assert {row[0] for row in _rows(home)} == {*arriving}  # filled before any branch
    assert _searched(home) == {*arriving}
    assert _listed(cli)[0] == [mine]
    # the search reads `mine` alone (never indexed) and drops the rows with no branch
    assert _found(home, "arriving") == (set(), 1) and _searched(home) == {mine}

    assert results(summary(cli, home, "pull")) == dict.fromkeys(arriving, "created")
    ids, shown = _listed(cli)
    assert len(ids) == len(set(ids)) and set(ids) == {mine, *arriving}
    (home / "index.sqlite").unlink()
    assert _listed(cli)[1] == shown
    assert _found(home, "arriving") == ({*arriving}, 0)


def _searched(home: Path) -> set[str]:
    """The sessions search's index holds."""
    with sqlite3.connect(home / "search.sqlite") as db:
        return {row[0] for row in db.execute("SELECT session FROM meta")}


def _found(home: Path, word: str) -> tuple[set[str], int]:
    """The sessions a search for `word` finds, and how many it read."""
    store = SessionStore(home)
    try:
        index = SearchIndex(store)
        return {hit.session for hit in index.search(word)}, index.read
    finally:
        store.close()


def test_a_branch_a_writer_creates_while_a_pull_creates_it_stays_the_writers(home: Path):
    """A pull creates branches without their flocks; a writer here that held one (about
    to create that branch) while the pull wrote `packed-refs` is waited for after the
    write, its loose value stands, and the pull reports the branch as not created."""
    sid = make(home, tag="theirs")
    mine = make(home, tag="mine")
    store = home / "store.git"
    theirs = refs(store, SESSIONS)[SESSIONS + sid]
    ours = refs(store, SESSIONS)[SESSIONS + mine]
    git(store, "update-ref", "-d", SESSIONS + sid)
    ref = (SESSIONS + sid).encode()
    gitstore = GitStore(store)
    lock_file = store / "locks" / (SESSIONS + sid).replace("/", "%")
    moved: list[set[bytes]] = []

    def pull() -> None:
        with gitstore.locked():
            moved.append(update_refs_if_equal(gitstore, {ref: (None, theirs.encode())}))

    try:
        with flocked(store, lock_file.name):  # the writer: it holds the branch's flock
            puller = threading.Thread(target=pull)
            puller.start()
            while puller.is_alive() and not _waiting_on(lock_file):
                puller.join(0.05)  # until the pull, its write done, waits for the writer
            (store / SESSIONS / sid).write_text(ours + "\n")  # the writer's create lands
        puller.join()
    finally:
        gitstore.close()
    assert moved == [set()]
    assert refs(store, SESSIONS)[SESSIONS + sid] == ours


def test_a_first_chunk_too_large_to_read_in_a_pull_is_left_to_the_listing(
    cli: Cli, home: Path, tmp_path: Path
):
    """A pull reads no first chunk over `CHUNK_BYTES` (what a remote sends is never held
    whole): it writes no row for that session, and the listing reads it as before."""
    writer = tmp_path / "writer"
    big = make(writer, turns=0, tag="big", redact=False)
    store = SessionStore(writer, redact=False, background_maintenance=False)
    try:
        prompt = "word " * (CHUNK_BYTES // 4)
        head = store.head(big)
        user = {"role": "user", "content": prompt}
        store.commit(head, Change(context=[user], append=[user]), event="turn", subject="t")
    finally:
        store.close()
    small = make(writer, tag="small")
    origin = bare(tmp_path / "origin.git")
    cli("--home", str(writer), "remote", "add", "origin", str(origin))
    cli("--home", str(writer), "push", "--all")
    cli("remote", "add", "origin", str(origin))
    assert results(summary(cli, home, "pull")) == {big: "created", small: "created"}
    assert [row[0] for row in _rows(home)] == [small]
    ids, _shown = _listed(cli)
    assert sorted(ids) == sorted([big, small])
    rows = {row[0]: row[3] for row in _rows(home)}
    assert rows[big] == " ".join(prompt.split())[:PROMPT_CHARS]
