"""Retention of code snapshots: prune, a deleted session's, doctor, gc, the budget; real
project repositories, the real CLI against the fake model server."""

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from gitsessions.services.code import retention, snapshots, snapshotter
from gitsessions.store.sessions import SessionStore
from gitsessions.values.errors import BadUsage
from tests.conftest import exec_args, run_gitsessions
from tests.project_helpers import fsck_project, make_project, pgit, trailers, write_turn


def in_project(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The CLI run from inside the project (what `snapshot prune`, doctor and gc see)."""
    return run_gitsessions(*args, cwd=root)


def chain(root: Path, sid: str) -> list[str]:
    project = snapshots.find_project(root, os.environ)
    assert project is not None
    found = {c.session: c for c in retention.chains(project, os.environ)[0]}
    return found[sid].snapshots if sid in found else []


def exists(root: Path, sha: str) -> bool:
    return subprocess.run(["git", "-C", str(root), "cat-file", "-e", sha]).returncode == 0


def three_turns(server, root: Path) -> str:  # type: ignore[no-untyped-def]
    sid = write_turn(server, root, "a.txt", "one\n", snapshot=True)
    write_turn(server, root, "b.txt", "two\n", sid, snapshot=True)
    write_turn(server, root, "c.txt", "three\n", sid, snapshot=True)
    return sid


def test_prune_keeps_every_turn_by_default_and_keep_n_the_last_turns(server, tmp_path, home):
    root = make_project(tmp_path / "project")
    sid = three_turns(server, root)
    named = [s for s in trailers(home, sid, "Code-Snapshot") if s]
    held = chain(root, sid)
    assert set(named) <= set(held) and len(held) > len(set(named))  # a prompt's, unnamed
    dry = in_project(root, "snapshot", "prune", "--json")
    assert dry.returncode == 0, dry.stderr
    assert json.loads(dry.stdout)["dropped_count"] == 0  # every turn can still rewind
    assert chain(root, sid) == held
    # --keep 1: turn 3's snapshot, and the one turn 3 started from (turn 2's)
    newest, turn2 = list(dict.fromkeys(named))[:2]
    would = in_project(root, "snapshot", "prune", "--keep", "1", "--dry-run", "--json")
    plan = json.loads(would.stdout)
    assert plan["dry_run"] and plan["dropped_count"] > 0 and chain(root, sid) == held
    done = in_project(root, "snapshot", "prune", "--keep", "1")
    assert done.returncode == 0, done.stderr
    assert f"dropped {plan['dropped_count']} snapshot" in done.stderr
    left = chain(root, sid)
    assert left == [newest, turn2]
    dropped = [s for s in held if s not in left]
    assert set(dropped) == set(plan["dropped"][sid])
    pgit(root, "gc", "-q", "--prune=now")
    assert all(exists(root, s) for s in left)
    assert not any(exists(root, s) for s in dropped)
    fsck_project(root)
    # a turn after the prune chains on what is left; a second prune changes nothing
    write_turn(server, root, "d.txt", "four\n", sid, snapshot=True)
    assert chain(root, sid)[-2:] == [newest, turn2] and len(chain(root, sid)) > 2
    again = in_project(root, "snapshot", "prune", "--keep", "2", "--json")
    assert json.loads(again.stdout)["dropped_count"] == 0
    # turn 1's code was pruned: a rewind to it says so, and changes nothing
    back = run_gitsessions("rewind", sid, "--to", "turn:1", "--code")
    assert back.returncode != 0
    assert "is not in the project" in back.stderr and "snapshot prune" in back.stderr
    assert (root / "c.txt").read_text() == "three\n"
    # turn 3's is kept: a rewind to turn 2 works
    assert run_gitsessions("rewind", sid, "--to", "turn:2", "--code").returncode == 0
    assert not (root / "c.txt").exists() and (root / "b.txt").read_text() == "two\n"


def test_older_than_drops_even_named_snapshots_and_deletes_an_empty_ref(server, tmp_path, home):
    root = make_project(tmp_path / "project")
    sid = write_turn(server, root, "a.txt", "one\n", snapshot=True)
    project = snapshots.find_project(root, os.environ)
    assert project is not None
    store = SessionStore(home)
    try:
        young = retention.prune(store, project, os.environ, older_than=3600, dry_run=True)
        assert young.dropped_count == 0
        later = time.time() + 7200
        old = retention.prune(store, project, os.environ, older_than=3600, now=later)
    finally:
        store.close()
    assert old.refs_deleted == [sid]
    assert pgit(root, "for-each-ref", "refs/gitsessions/") == ""
    assert retention.parse_age("2w") == 14 * 86400 and retention.parse_age("12h") == 43200
    with pytest.raises(BadUsage):
        retention.parse_age("soon")


def words(done: subprocess.CompletedProcess[str]) -> str:
    return " ".join(done.stdout.split())


def left_behind(server, root: Path) -> tuple[str, str]:  # type: ignore[no-untyped-def]
    """A session deleted here whose snapshot ref is back in the project (as an older
    gitsessions, or a `pull --code`, leaves it): its id and the ref's value."""
    sid = write_turn(server, root, "a.txt", "one\n", snapshot=True)
    ref = f"refs/gitsessions/snapshots/{sid}"
    value = pgit(root, "rev-parse", ref).strip()
    gone = run_gitsessions("delete", sid, "--yes")
    assert gone.returncode == 0, gone.stderr
    assert f"deleted {sid} and its code snapshots" in gone.stderr
    assert pgit(root, "for-each-ref", ref) == ""
    pgit(root, "update-ref", ref, value)
    return sid, ref


def test_doctor_reports_the_snapshot_ref_of_a_deleted_session_and_repair_drops_it(
    server, tmp_path, home
):
    root = make_project(tmp_path / "project")
    keep = write_turn(server, root, "k.txt", "kept\n", snapshot=True)
    sid, ref = left_behind(server, root)
    found = in_project(root, "doctor")
    assert found.returncode == 1
    assert f"found snapshots {root}: {sid} {ref} of a deleted session holds" in words(found)
    assert keep not in found.stdout
    fixed = in_project(root, "doctor", "--repair")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert f"repaired snapshots {root}: {sid}" in words(fixed)
    assert pgit(root, "for-each-ref", ref) == ""
    assert pgit(root, "for-each-ref", f"refs/gitsessions/snapshots/{keep}") != ""
    assert in_project(root, "doctor").returncode == 0
    fsck_project(root)


def test_gc_drops_the_snapshots_of_deleted_sessions(server, tmp_path, home):
    root = make_project(tmp_path / "project")
    keep = write_turn(server, root, "k.txt", "kept\n", snapshot=True)
    _sid, ref = left_behind(server, root)
    done = in_project(root, "gc")
    assert done.returncode == 0, done.stderr
    assert "code snapshot" in done.stderr and "of deleted sessions (1 ref deleted)" in done.stderr
    assert pgit(root, "for-each-ref", ref) == ""
    assert pgit(root, "for-each-ref", f"refs/gitsessions/snapshots/{keep}") != ""


def test_refs_of_sessions_this_home_never_had_are_left_unless_orphans(server, tmp_path, home):
    root = make_project(tmp_path / "project")
    sid = write_turn(server, root, "a.txt", "one\n", snapshot=True)
    stranger = "0" * 31 + "1"  # another home's session, in the same project
    project = snapshots.find_project(root, os.environ)
    assert project is not None
    (root / "theirs.txt").write_text("their work\n")
    snapshotter.take(project, os.environ, stranger, "gitsessions snapshot: session 00000000")
    plain = in_project(root, "snapshot", "prune", "--json")
    assert json.loads(plain.stdout)["skipped"] == [stranger]
    assert in_project(root, "doctor").returncode == 0  # maybe another home's: no finding
    orphans = in_project(root, "snapshot", "prune", "--orphans", "--json")
    result = json.loads(orphans.stdout)
    assert result["refs_deleted"] == [stranger]
    assert pgit(root, "for-each-ref", f"refs/gitsessions/snapshots/{sid}") != ""


def test_one_warning_when_the_snapshots_pass_the_budget(server, tmp_path, home):
    root = make_project(tmp_path / "project")
    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text("[snapshots]\nbudget_bytes = 1\n")
    server.reply(
        content=None,
        tool_calls=[{"name": "write_file", "arguments": {"path": "a.txt", "content": "1\n"}}],
    )
    server.reply(
        content=None,
        tool_calls=[{"name": "write_file", "arguments": {"path": "b.txt", "content": "2\n"}}],
    )
    server.reply(content="done")
    done = run_gitsessions(*exec_args(server, root), "write", "--auto-approve")
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("warning: code snapshots take ") == 1
    assert "over the budget of 1 bytes ([snapshots] budget_bytes)" in done.stderr
    (home / "config.toml").write_text("[snapshots]\nbudget_bytes = 0\n")  # no budget
    server.reply(
        content=None,
        tool_calls=[{"name": "write_file", "arguments": {"path": "c.txt", "content": "3\n"}}],
    )
    server.reply(content="done")
    quiet = run_gitsessions(*exec_args(server, root), "write more", "--auto-approve")
    assert quiet.returncode == 0 and "budget" not in quiet.stderr


def test_budget_bytes_is_read_and_checked():
    from gitsessions.services.settings.config import (
        DEFAULT_BUDGET_BYTES,
        resolve_snapshot_settings,
    )
    from gitsessions.services.settings.config_file import ConfigError

    assert resolve_snapshot_settings(False, {}).budget_bytes == DEFAULT_BUDGET_BYTES == 1 << 30
    table = {"snapshots": {"budget_bytes": 5000}}
    assert resolve_snapshot_settings(False, table).budget_bytes == 5000
    for bad in (-1, "1 GiB", True):
        with pytest.raises(ConfigError, match="budget_bytes must be a whole number"):
            resolve_snapshot_settings(False, {"snapshots": {"budget_bytes": bad}})
