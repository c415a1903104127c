"""A remote's tombstones flood (issue 42): ids the remote never had, by the ten thousand.
Before: a pull recorded them one fsynced write each (200,000 ids: 96 s instead of
1.5 s), and a later push carried every one of them on to another remote. Now a pull
records at most `MAX_LEARNED` of them, in one write, says the rest in one line, and a
push forwards an id no session here ever had only to a remote that asks for it (one
holding a branch of that id)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gitsessions.services.sync.deletions import MAX_LEARNED
from gitsessions.values.ids import new_id
from tests.conftest import REPO, Cli
from tests.test_hostile_remote import bare, deleted_file, plumb, tombstone
from tests.test_sync import make, results, summary

SESSIONS = "refs/heads/sessions/"


def _listed(repo: Path) -> set[str]:
    """The ids a bare repository's tombstone commit lists."""
    tip = plumb(repo, "rev-parse", "--verify", "-q", "refs/gitsessions/tombstones")
    return set(plumb(repo, "show", f"{tip}:deleted").split()) if tip else set()


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
def test_a_tombstone_flood_is_capped_and_written_once(cli: Cli, home: Path, tmp_path: Path):
    writer = tmp_path / "writer"
    kept = make(writer, tag="kept")
    origin = bare(tmp_path / "origin.git")
    cli("--home", str(writer), "remote", "add", "origin", str(origin))
    cli("--home", str(writer), "push", "--all")
    flood = sorted(new_id() for _ in range(MAX_LEARNED + 500))
    tombstone(origin, flood)
    make(home, tag="mine")  # the store exists before the traced pull
    cli("remote", "add", "origin", str(origin))
    deleted = home / "store.git" / "gitsessions" / "deleted"
    trace = tmp_path / "strace.out"

    pulled = subprocess.run(
        ["strace", "-f", "-qq", "-o", str(trace), "-P", str(deleted),
         "-e", "trace=write,pwrite64,writev,fsync,fdatasync",
         sys.executable, "-m", "gitsessions", "--home", str(home), "pull"],
        capture_output=True, text=True, cwd=REPO, env=dict(os.environ), timeout=600,
    )  # fmt: skip
    assert pulled.returncode == 0, pulled.stderr
    lines = [line for line in trace.read_text().splitlines() if "(" in line]  # no signals
    calls = [line.split("(", 1)[0].split()[-1] for line in lines]
    assert sorted(calls) == ["fsync", "write"], calls[:10]  # one write, one fsync
    assert len(deleted_file(home)) == MAX_LEARNED
    said = [line for line in pulled.stderr.splitlines() if "deleted ids" in line]
    assert len(said) == 1 and "500" in said[0] and "origin" in said[0], pulled.stderr
    assert f"{kept[:8]}\tcreated" in pulled.stdout

    report = summary(cli, home, "pull")  # the next pull takes the rest
    assert report["tombstones_deferred"] == 0
    assert deleted_file(home) == set(flood)


def test_a_push_forwards_only_the_tombstones_a_remote_asks_for(
    cli: Cli, home: Path, tmp_path: Path
):
    """An id this home learned from one remote's tombstones, of a session it never had,
    goes to another remote only when that remote holds a branch of it; an id of a
    session this home had (deleted here, or by a pull) always goes."""
    writer = tmp_path / "writer"
    held = make(writer, tag="held by the mirror")  # the mirror holds it; origin deleted it
    mirror = bare(tmp_path / "mirror.git")
    cli("--home", str(writer), "remote", "add", "mirror", str(mirror))
    cli("--home", str(writer), "push", "mirror", "--all")
    origin = bare(tmp_path / "origin.git")
    cli("--home", str(writer), "remote", "add", "origin", str(origin))
    cli("--home", str(writer), "push", "origin", "--all")
    shared = make(home, tag="shared")  # pushed by this home, deleted on origin by another
    cli("remote", "add", "origin", str(origin))
    cli("push", "origin", "--all")
    never = [new_id() for _ in range(5)]  # sessions no home here ever had
    tombstone(origin, [*never, held, shared])
    gone = make(home, tag="deleted here")
    cli("delete", gone, "--yes")

    assert results(summary(cli, home, "pull", "origin"))[shared] == "deleted"
    assert {*never, held, shared, gone} <= deleted_file(home)
    cli("remote", "add", "mirror", str(mirror))
    cli("push", "mirror", "--all")
    assert _listed(mirror) == {held, shared, gone}  # not the five never seen here
    fresh = tmp_path / "fresh"
    cli("--home", str(fresh), "remote", "add", "mirror", str(mirror))
    assert results(summary(cli, fresh, "pull")) == {held: "deleted here"}
