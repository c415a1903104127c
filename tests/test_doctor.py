"""`gitsessions doctor [--repair]` finds what fsck does not, and repairs it; a damaged
session is reported by id and never breaks `list`, `search` or `gc` for the others."""

import json
import os
import sqlite3
import time
from pathlib import Path

from tests.conftest import Cli, git, loosen, run_gitsessions


def _doctor(cli: Cli, *args: str, code: int) -> dict:
    return json.loads(cli("doctor", "--json", *args, code=code).stdout)


def _kinds(report: dict) -> set[tuple[str, str]]:
    return {(f["kind"], f["subject"]) for f in report["findings"]}


def test_a_healthy_store_has_nothing_to_report(cli, make_session):
    make_session(turns=2)
    report = _doctor(cli, code=0)
    assert report["healthy"] and report["findings"] == []
    assert report["sessions"] == 1 and report["commits"] == 4  # 3, and main's README


def test_lost_and_lagging_branches_are_found_and_restored(cli, home, make_session):
    lost = make_session(turns=2)
    behind = make_session(turns=3)
    store_path = home / "store.git"
    git(store_path, "update-ref", "-d", f"refs/heads/sessions/{lost.id}")
    git(store_path, "update-ref", f"refs/heads/sessions/{behind.id}", f"{behind.commit.decode()}~2")
    assert lost.id not in cli("list").stdout  # what fsck never notices
    report = _doctor(cli, code=1)
    assert _kinds(report) == {("lost", lost.id), ("behind", behind.id)}
    repaired = _doctor(cli, "--repair", code=0)
    assert all(f["repaired"] for f in repaired["findings"])
    assert git(store_path, "rev-parse", f"refs/heads/sessions/{lost.id}").stdout.strip() == (
        lost.commit.decode()
    )
    assert git(store_path, "rev-parse", f"refs/heads/sessions/{behind.id}").stdout.strip() == (
        behind.commit.decode()
    )
    assert _doctor(cli, code=0)["findings"] == []


def test_a_deleted_session_is_never_brought_back(cli, store, make_session):
    parent = make_session(turns=2)
    child = cli.json("fork", parent.id)["id"]
    cli("delete", child, "--yes")  # the fork's commit is purged; the parent's stay
    cli("delete", parent.id, "--yes")
    report = _doctor(cli, "--repair", code=0)
    assert not [f for f in report["findings"] if f["kind"] in ("lost", "behind")]
    assert store.ids() == {}


def test_stale_locks_dead_leases_and_stale_cache_rows(cli, home, make_session):
    kept = make_session(turns=1)
    gone = make_session(turns=1)
    cli("list")  # fills index.sqlite
    with sqlite3.connect(home / "index.sqlite") as db:
        db.execute(
            "INSERT INTO headers (id, head, header, listed) VALUES (?, ?, ?, ?)",
            ("f" * 32, "0" * 40, "{}", "{}"),
        )
    lock = home / "store.git" / "packed-refs.lock"
    lock.write_text("")
    old = time.time() - 3600
    os.utime(lock, (old, old))
    leases = home / "leases"
    leases.mkdir(exist_ok=True)
    (leases / f"{gone.id}.lock").write_text("999999999")  # a pid that cannot exist
    report = _doctor(cli, code=1)
    assert {
        ("lock", "store.git/packed-refs.lock"),
        ("lease", gone.id),
        ("cache", "index.sqlite"),
    } <= _kinds(report)
    _doctor(cli, "--repair", code=0)
    assert not lock.exists() and not (leases / f"{gone.id}.lock").exists()
    assert kept.id[:8] in cli("list").stdout


def _corrupt_tree_of(home: Path, head) -> tuple[Path, bytes]:
    """Overwrite the loose object of the session's root tree with garbage; returns the
    file and what it held."""
    loosen(home / "store.git")
    tree = head.tree.decode()
    path = home / "store.git" / "objects" / tree[:2] / tree[2:]
    path.chmod(0o600)
    saved = path.read_bytes()
    path.write_bytes(b"garbage, not zlib")
    return path, saved


def test_a_broken_session_is_reported_and_spares_the_others(cli, home, make_session):
    good = make_session(turns=2, tag="findme-good")
    bad = make_session(turns=2, tag="findme-bad")
    damaged, saved = _corrupt_tree_of(home, bad)
    listed = cli.json("list")
    by_id = {row["id"]: row for row in listed}
    assert good.id in by_id and bad.id in by_id
    assert "doctor" in by_id[bad.id]["title"]
    hits = cli.json("search", "findme-good")
    assert {h["session"] for h in hits} == {good.id}
    gc = cli("gc")
    assert bad.id[:8] in gc.stderr and "nothing was packed or purged" in gc.stderr
    report = _doctor(cli, code=1)
    assert ("broken", bad.id) in _kinds(report)
    assert cli("info", good.id).stdout
    result = cli("info", bad.id, code=1)
    assert "gitsessions doctor" in result.stderr
    damaged.write_bytes(saved)  # so the fixture's closing fsck sees a valid store
    assert _doctor(cli, code=0)["findings"] == []


def test_garbage_in_a_ref_file_is_one_line_and_repairable(home, make_session):
    head = make_session(turns=1)
    ref = home / "store.git" / "refs" / "heads" / "sessions" / head.id
    ref.write_text("not a sha\n")
    env = {**os.environ, "GITSESSIONS_HOME": str(home)}
    listed = run_gitsessions("list", env=env)  # the others would be listed: exit 0
    assert listed.returncode == 0 and head.id not in listed.stdout
    assert "Traceback" not in listed.stderr
    warning = listed.stderr.strip().splitlines()[0]
    assert f"refs/heads/sessions/{head.id} is damaged" in warning
    assert warning.endswith("run `gitsessions doctor`")
    shown = run_gitsessions("show", head.id, env=env)  # naming it: the one-line error
    assert shown.returncode == 1 and len(shown.stderr.strip().splitlines()) == 1
    assert str(ref) in shown.stderr and "gitsessions doctor" in shown.stderr
    repaired = run_gitsessions("doctor", "--repair", env=env)
    assert repaired.returncode == 0, repaired.stdout + repaired.stderr
    assert head.id[:8] in run_gitsessions("list", env=env).stdout


def test_a_bad_packed_refs_line_is_one_line_and_repairable(home, make_session):
    head = make_session(turns=1)
    store_path = home / "store.git"
    git(store_path, "pack-refs", "--all")
    packed = store_path / "packed-refs"
    packed.write_text(packed.read_text() + "zzzz refs/heads/sessions/broken\n")
    env = {**os.environ, "GITSESSIONS_HOME": str(home)}
    listed = run_gitsessions("list", env=env)  # the good line's session is listed
    assert listed.returncode == 0 and "Traceback" not in listed.stderr
    assert head.id in listed.stdout
    assert len(listed.stderr.strip().splitlines()) == 1
    assert "packed-refs line" in listed.stderr and "gitsessions doctor" in listed.stderr
    assert run_gitsessions("doctor", "--repair", env=env).returncode == 0
    assert head.id[:8] in run_gitsessions("list", env=env).stdout
