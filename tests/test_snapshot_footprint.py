"""A light touch on the project: snapshot refs packed, snapshot objects packed, doctor
and gc; real project repositories, stock git."""

import os
import subprocess
from pathlib import Path

from gitsessions.services.code import footprint, snapshots, snapshotter
from gitsessions.values.ids import new_id
from tests.conftest import run_gitsessions
from tests.project_helpers import fsck_project, make_project, pgit, user_state


def sessions(root: Path, count: int) -> list[tuple[str, str]]:
    """`count` one-turn sessions' snapshots, as a turn's Snapshotter takes them."""
    made = []
    for _ in range(count):
        sid = new_id()
        taker = snapshotter.Snapshotter(root, os.environ, sid)
        commit = taker(f"gitsessions snapshot: session {sid[:8]} turn 1.0")
        assert commit is not None, taker.notes
        made.append((sid, commit))
    return made


def loose_object(root: Path, sha: str) -> bool:
    return (root / ".git" / "objects" / sha[:2] / sha[2:]).exists()


def loose_ref(root: Path, sid: str) -> bool:
    return (root / ".git" / "refs" / "gitsessions" / "snapshots" / sid).exists()


def in_project(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_gitsessions(*args, cwd=root)


def test_snapshot_refs_and_objects_are_packed_as_sessions_come(tmp_path):
    root = make_project(tmp_path / "project")
    before = user_state(root)
    heads = pgit(root, "for-each-ref", "refs/heads", "refs/tags")
    made = sessions(root, footprint.LOOSE_REFS_AT + 3)
    first, commit = made[0]
    assert not loose_ref(root, first) and not loose_object(root, commit)
    assert f"{commit} refs/gitsessions/snapshots/{first}" in (root / ".git/packed-refs").read_text()
    assert len(footprint.loose_refs(snapshots.find_project(root, os.environ), os.environ)) == 3
    for sid, sha in made:  # every ref still names its snapshot, whole
        assert pgit(root, "rev-parse", f"refs/gitsessions/snapshots/{sid}").strip() == sha
    assert pgit(root, "for-each-ref", "refs/heads", "refs/tags") == heads
    assert user_state(root) == before
    fsck_project(root)


def test_a_long_session_packs_its_objects_too(tmp_path):
    root = make_project(tmp_path / "project")
    sid = new_id()
    taker = snapshotter.Snapshotter(root, os.environ, sid)
    commits = []
    for turn in range(footprint.TIDY_AFTER):
        (root / "notes.txt").write_text(f"turn {turn}\n")
        commit = taker(f"gitsessions snapshot: session {sid[:8]} turn {turn}.1")
        assert commit is not None, taker.notes
        commits.append(commit)
    assert not any(loose_object(root, c) for c in commits)
    assert not loose_ref(root, sid)
    fsck_project(root)


def test_a_concurrent_git_holding_packed_refs_loses_nothing(tmp_path):
    root = make_project(tmp_path / "project")
    lock = root / ".git" / "packed-refs.lock"
    lock.write_text("")  # another git command is rewriting packed-refs
    made = sessions(root, footprint.LOOSE_REFS_AT + 1)
    assert all(loose_ref(root, sid) for sid, _ in made)  # pack-refs gave way
    assert lock.read_text() == ""  # and left the other command's lock alone
    lock.unlink()
    made += sessions(root, 1)
    assert not any(loose_ref(root, sid) for sid, _ in made)
    for sid, sha in made:
        assert pgit(root, "rev-parse", f"refs/gitsessions/snapshots/{sid}").strip() == sha
    fsck_project(root)


def test_gc_packs_what_is_loose_and_doctor_reports_a_pile(tmp_path, home):
    root = make_project(tmp_path / "project")
    project = snapshots.find_project(root, os.environ)
    assert project is not None
    piled = []
    for _ in range(2 * footprint.LOOSE_REFS_AT):  # as an older gitsessions left them
        sid = new_id()
        piled.append((sid, snapshotter.take(project, os.environ, sid, "gitsessions snapshot: x")))
    found = in_project(root, "doctor")
    assert found.returncode == 1
    assert f"found loose {root} {2 * footprint.LOOSE_REFS_AT} loose snapshot refs" in " ".join(
        found.stdout.split()
    )
    fixed = in_project(root, "doctor", "--repair")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert not any(loose_ref(root, sid) for sid, _ in piled)
    few = sessions(root, 2)
    assert all(loose_ref(root, sid) for sid, _ in few)
    assert in_project(root, "doctor").returncode == 0  # a few loose refs are no finding
    done = in_project(root, "gc")
    assert done.returncode == 0, done.stderr
    assert "packed 2 loose code snapshot refs" in done.stderr
    assert not any(loose_ref(root, sid) or loose_object(root, c) for sid, c in few)
    fsck_project(root)
