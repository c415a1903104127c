"""A pull fetches into a quarantine (`store/incoming.py`, issue 46): a repository of no
refs but the commits offered, the store its alternate, so stock git's walks do not cover
every ref of the store. What came is moved into the store and the quarantine removed;
one a killed pull left is removed by the next pull, one a live fetch holds is not."""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from gitsessions.store import incoming
from tests.conftest import REPO, Cli, git
from tests.test_hostile_remote import bare
from tests.test_sync import make, refs, results, summary

SESSIONS = "refs/heads/sessions/"


def _remote_of(cli: Cli, home: Path, tmp_path: Path, count: int) -> list[str]:
    """`count` sessions another home pushed to a remote this home has added."""
    writer = tmp_path / "writer"
    made = [make(writer, tag=f"arriving {n}") for n in range(count)]
    origin = bare(tmp_path / "origin.git")
    cli("--home", str(writer), "remote", "add", "origin", str(origin))
    cli("--home", str(writer), "push", "--all")
    cli("remote", "add", "origin", str(origin))
    return made


def _leftovers(store: Path) -> list[str]:
    places = [store / "gitsessions", store / "locks"]
    return sorted(
        name
        for place in places
        if place.is_dir()
        for name in os.listdir(place)
        if name.startswith(incoming.PREFIX)
    )


def _killed_in_quarantine(store: Path) -> subprocess.CompletedProcess[str]:
    """A process killed while it holds a quarantine of the store (as a pull killed
    mid-fetch leaves it)."""
    code = (
        "import os, signal, sys\n"
        "from pathlib import Path\n"
        "from gitsessions.store import incoming\n"
        "with incoming.quarantine(Path(sys.argv[1])) as stage:\n"
        "    (stage / 'objects' / 'pack' / 'tmp_pack_half').write_bytes(b'half')\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code, str(store)], capture_output=True, text=True, cwd=REPO,
        timeout=120,
    )  # fmt: skip


def test_a_pull_leaves_no_quarantine_and_its_objects_are_in_the_store(
    cli: Cli, home: Path, tmp_path: Path
):
    made = _remote_of(cli, home, tmp_path, 3)
    store = home / "store.git"

    report = summary(cli, home, "pull")

    assert results(report) == {sid: "created" for sid in made}
    assert set(refs(store, SESSIONS)) == {SESSIONS + sid for sid in made}
    assert _leftovers(store) == []
    checked = git(store, "fsck", "--connectivity-only", "--no-progress", check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert not (store / "objects" / "info" / "alternates").exists()
    for sid in made:
        assert cli("show", sid, "--json").stdout.count(f"arriving {made.index(sid)}") > 0


def test_a_quarantine_a_killed_pull_left_is_removed_by_the_next_pull(
    cli: Cli, home: Path, tmp_path: Path
):
    made = _remote_of(cli, home, tmp_path, 2)
    store = home / "store.git"
    cli("list")  # the store exists

    killed = _killed_in_quarantine(store)
    assert killed.returncode in (-signal.SIGKILL, 128 + signal.SIGKILL), killed.stderr
    left = _leftovers(store)
    assert len(left) == 2 and left[0] == left[1], left  # its directory and its flock file

    report = summary(cli, home, "pull")

    assert results(report) == {sid: "created" for sid in made}
    assert _leftovers(store) == []


def test_a_quarantine_a_live_fetch_holds_is_left_alone(cli: Cli, home: Path, tmp_path: Path):
    made = _remote_of(cli, home, tmp_path, 1)
    store = home / "store.git"
    cli("list")

    with incoming.quarantine(store) as live:
        report = summary(cli, home, "pull")
        assert live.is_dir() and (live / "objects" / "info" / "alternates").is_file()
        assert _leftovers(store) == [live.name, live.name]

    assert results(report) == {made[0]: "created"}
    assert _leftovers(store) == []


def test_a_quarantine_offers_the_tips_alone_and_reads_the_store_through_its_alternate(
    home: Path, tmp_path: Path, cli: Cli
):
    made = make(home, tag="here")
    store = home / "store.git"
    head = refs(store, SESSIONS)[SESSIONS + made]

    with incoming.quarantine(store, [head.encode()]) as stage:
        listed = git(stage, "for-each-ref", "--format=%(objectname)").stdout.split()
        assert listed == [head]
        assert git(stage, "cat-file", "-t", head).stdout.strip() == "commit"
        assert git(stage, "count-objects").stdout.startswith("0 objects")
        assert incoming.admit(stage, store) == 0  # nothing came: nothing moves

    assert _leftovers(store) == []


def test_gc_removes_a_killed_pulls_quarantine_and_its_flock_file(cli: Cli, home: Path):
    make(home, tag="kept")
    store = home / "store.git"
    killed = _killed_in_quarantine(store)
    assert killed.returncode in (-signal.SIGKILL, 128 + signal.SIGKILL), killed.stderr
    assert len(_leftovers(store)) == 2

    cli("gc")

    assert _leftovers(store) == []


def _objects_of_packs(store: Path, names: set[str]) -> int:
    """How many objects the packs `names` (of the store's pack directory) hold."""
    total = 0
    for name in names:
        idx = store / "objects" / "pack" / name
        with idx.open("rb") as data:
            shown = subprocess.run(
                ["git", "show-index"], stdin=data, capture_output=True, check=True
            ).stdout.splitlines()
        total += len(shown)
    return total


def test_a_fork_of_a_session_here_comes_without_the_history_this_home_has(
    cli: Cli, home: Path, tmp_path: Path
):
    writer = tmp_path / "writer"
    parent = make(writer, turns=6, tag="parent")
    origin = bare(tmp_path / "origin.git")
    cli("--home", str(writer), "remote", "add", "origin", str(origin))
    cli("--home", str(writer), "push", "--all")
    cli("remote", "add", "origin", str(origin))
    assert results(summary(cli, home, "pull")) == {parent: "created"}
    store = home / "store.git"
    history = len(git(store, "rev-list", "--objects", "--all").stdout.splitlines())
    fork = json.loads(cli("--home", str(writer), "fork", parent, "--json").stdout)["id"]
    cli("--home", str(writer), "push", "--all")
    packs = {p.name for p in (store / "objects" / "pack").glob("pack-*.idx")}

    assert results(summary(cli, home, "pull"))[fork] == "created"

    came = {p.name for p in (store / "objects" / "pack").glob("pack-*.idx")} - packs
    assert came and _objects_of_packs(store, came) < history // 2, (came, history)
    assert _leftovers(store) == []
