"""Few files per turn (issue 24, item 2): a commit's objects go to disk as one pack with
its index (`store/packwrite.py`), before the ref that names them; background maintenance
merges the small packs geometrically (`piles.geometric_rollup`, `maintenance.merge_packs`)
and drops nothing. Checked with stock git (`count-objects`, `fsck --strict`, `cat-file`)."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from dulwich.objects import Blob

from gitsessions.store import maintenance, piles
from gitsessions.store.background import maintenance_quiet, wait_for_maintenance
from gitsessions.store.sessions import Change, SessionStore
from tests.conftest import REPO, fsck, git
from tests.test_faults import fill, needs_root, tmpfs


def counts(store_git: Path) -> dict[str, int]:
    """`git count-objects -v`, as numbers."""
    out = git(store_git, "count-objects", "-v").stdout
    return {k: int(v) for k, v in (line.split(": ") for line in out.splitlines())}


def pack_files(store_git: Path) -> set[str]:
    return set(os.listdir(store_git / "objects" / "pack"))


def turn(store: SessionStore, head, n: int, text: str = "answer"):
    msgs = [{"role": "user", "content": f"question {n}"}, {"role": "assistant", "content": text}]
    return store.commit(head, Change(append=msgs), event="turn", subject=f"turn {n}")


def test_a_turn_adds_one_pack_with_its_index_and_no_loose_object(home, make_session):
    store = SessionStore(home, background_maintenance=False)
    head = make_session(turns=1)
    store_git = home / "store.git"
    before, files = counts(store_git), pack_files(store_git)
    head = turn(store, store.head(head.id), 1)
    after, added = counts(store_git), pack_files(store_git) - files
    assert after["count"] == before["count"] == 0  # no loose object, ever
    assert after["packs"] == before["packs"] + 1
    assert {name.rsplit(".", 1)[1] for name in added} == {"pack", "idx"} and len(added) == 2
    assert after["in-pack"] > before["in-pack"] + 3  # blobs, trees and the commit
    git(store_git, "cat-file", "-e", head.commit.decode())
    fsck(home)
    store.close()


def test_one_or_two_objects_stay_loose(store, home):
    """One or two objects are as many files as a pack and its index; loose they need
    no index of a kilobyte beside them."""
    store_git = home / "store.git"
    files = pack_files(store_git)
    blobs = [Blob.from_string(b"alone"), Blob.from_string(b"together")]
    store.git.add_objects(blobs)
    for blob in blobs:
        assert (store_git / "objects" / blob.id[:2].decode() / blob.id[2:].decode()).exists()
    assert pack_files(store_git) == files
    store.git.add_objects([*blobs, Blob.from_string(b"a third")])  # three: a pack
    assert len(pack_files(store_git) - files) == 2


def test_an_object_too_big_writes_nothing_of_its_commit(store, home, monkeypatch):
    from gitsessions.store import repo

    monkeypatch.setattr(repo, "MAX_OBJECT_BYTES", 1000)
    store_git = home / "store.git"
    files, before = pack_files(store_git), counts(store_git)
    small, big = Blob.from_string(b"small"), Blob.from_string(b"x" * 1001)
    with pytest.raises(repo.StoreError, match="nothing was written"):
        store.git.add_objects([small, big])
    assert pack_files(store_git) == files and counts(store_git) == before


@needs_root
def test_a_full_disk_leaves_no_temporary_file_and_a_clear_error(tmp_path):
    with tmpfs(tmp_path / "full", "2m") as home:
        store = SessionStore(home, background_maintenance=False)
        head = turn(store, store.create(_header(), Change()), 0)
        store_git = home / "store.git"
        files = pack_files(store_git)
        filler = fill(home, 4096)
        noise = os.urandom(300_000).hex()  # does not compress: cannot fit
        with pytest.raises(OSError, match="No space left"):
            turn(store, head, 1, noise)
        assert pack_files(store_git) == files  # no tmp_*, no pack without its index
        assert counts(store_git)["count"] == 0
        assert store.head(head.id).commit == head.commit
        filler.unlink()
        assert turn(store, head, 1, "fits now").commit != head.commit
        store.close()
        assert git(store_git, "fsck", "--strict", check=False).returncode == 0


def _header() -> dict:
    from gitsessions.values.clock import now_iso
    from gitsessions.values.ids import new_id
    from gitsessions.values.records import new_header

    return new_header(new_id(), now_iso())


def test_the_geometric_rollup_merges_the_small_packs_and_what_they_outgrow():
    rollup = piles.geometric_rollup
    assert rollup({}) == [] and rollup({"a": 5}) == []
    assert rollup({"a": 1, "b": 2, "c": 4, "d": 8}) == []  # a progression already
    assert rollup({"a": 6, "b": 6, "c": 6, "big": 100}) == ["a", "b", "c"]
    # the small ones together outgrow the next: it is merged too, the largest stays
    assert rollup({"a": 6, "b": 6, "c": 6, "mid": 30, "big": 1000}) == ["a", "b", "c", "mid"]
    assert rollup({"a": 10, "b": 11}) == ["a", "b"]


def test_many_turns_then_background_maintenance_leave_few_packs(store, home, make_session):
    """Each commit writes a pack; after each the writer starts background maintenance
    once more than AUTOPACK_PACKS would be merged: the packs stay few, nothing is lost."""
    store_git = home / "store.git"
    heads = [make_session(turns=30, tag=f"s{n}") for n in range(2)]
    wait_for_maintenance(store_git)
    commits = 2 * 31 + 1  # and main's README commit
    packs = counts(store_git)["packs"]
    assert packs < commits // 4, packs
    assert piles.packs_to_merge(store_git) <= maintenance.AUTOPACK_PACKS
    assert counts(store_git)["count"] == 0
    for n, head in enumerate(heads):
        assert store.transcript(store.head(head.id))[-1]["content"] == f"answer 29 s{n}"
    fsck(home)


def test_merging_keeps_every_object_of_the_merged_packs(home):
    """Objects no ref names yet (a writer between its objects and its ref) survive a
    merge, as do loose ones; the merged packs are gone and the new one is deltified."""
    store = SessionStore(home, background_maintenance=False)
    store_git = home / "store.git"
    orphans = [Blob.from_string(b"not referenced %d" % n) for n in range(3)]
    store.git.add_objects(orphans)  # one pack
    loose = Blob.from_string(b"loose, not referenced")
    store.git.add_objects([loose])
    head = store.create(_header(), Change())
    for n in range(12):
        head = turn(store, head, n)
    with maintenance_quiet(store_git):  # no background merge meanwhile
        every = set(git(store_git, "cat-file", "--batch-all-objects",
                        "--batch-check=%(objectname)").stdout.split())  # fmt: skip
        before = counts(store_git)["packs"]
        merged, packed = maintenance.merge_packs(store.git)
    assert merged == before and packed == 1  # all alike in size: one roll-up
    after = set(git(store_git, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)")
                .stdout.split())  # fmt: skip
    assert after == every
    assert counts(store_git)["packs"] == 1 and counts(store_git)["count"] == 0
    verify = git(store_git, "verify-pack", "-v", *map(str, store_git.glob("objects/pack/*.idx")))
    assert "chain length" in verify.stdout
    assert store.transcript(store.head(head.id))[-2]["content"] == "question 11"
    fsck(home)
    store.close()


def test_delete_purges_a_session_spread_over_many_small_packs(home):
    store = SessionStore(home, background_maintenance=False)
    store_git = home / "store.git"
    keep, doomed = (store.create(_header(), Change()) for _ in range(2))
    for n in range(3):
        keep = turn(store, keep, n, "answer kept-51c0")
    for n in range(6):
        doomed = turn(store, doomed, n, "answer doomed-7e3b")
    assert counts(store_git)["packs"] > 6
    store.delete(store.head(doomed.id))
    dump = subprocess.run(
        ["git", "--git-dir", str(store_git), "cat-file", "--batch-all-objects", "--batch"],
        capture_output=True,
    ).stdout
    assert b"doomed-7e3b" not in dump and b"kept-51c0" in dump
    assert store.transcript(store.head(keep.id))[-1]["content"] == "answer kept-51c0"
    fsck(home)
    store.close()


WRITER = """
import sys
from gitsessions.store.sessions import Change, SessionStore
from gitsessions.values.records import new_header
store = SessionStore(__import__("pathlib").Path(sys.argv[1]), background_maintenance=False)
head = store.head(sys.argv[2])
msgs = [{"role": "user", "content": "traced"}, {"role": "assistant", "content": "ok"}]
store.commit(head, Change(append=msgs), event="turn", subject="traced")
store.close()
"""


@pytest.mark.skipif(not shutil.which("strace"), reason="strace is not installed")
def test_the_pack_and_its_index_are_on_disk_before_the_ref_moves(home, make_session):
    """A commit as its own process, its file syscalls traced: the pack is fsynced then
    renamed into place, then its index, and only then is the branch renamed."""
    head = make_session(turns=1)
    wait_for_maintenance(home / "store.git")
    trace = home.parent / "trace"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    subprocess.run(
        ["strace", "-f", "-y", "-o", str(trace), "-e", "trace=fsync,rename,renameat,renameat2",
         sys.executable, "-c", WRITER, str(home), head.id],
        env=env, check=True, capture_output=True,
    )  # fmt: skip
    lines = [line for line in trace.read_text().splitlines() if "= 0" in line]

    def first(pattern: str) -> int:
        found = [i for i, line in enumerate(lines) if re.search(pattern, line)]
        assert found, (pattern, lines)
        return found[0]

    pack_sync = first(r"fsync\(\d+<[^>]*/objects/pack/tmp_pack_")
    pack_in = first(r"rename.*tmp_pack_.*objects/pack/pack-[0-9a-f]{40}\.pack")
    index_sync = first(r"fsync\(\d+<[^>]*/objects/pack/tmp_idx_")
    index_in = first(r"rename.*tmp_idx_.*objects/pack/pack-[0-9a-f]{40}\.idx")
    ref_in = first(rf"rename.*refs/heads/sessions/{head.id}\"")
    assert pack_sync < pack_in < index_sync < index_in < ref_in
    fsck(home)
