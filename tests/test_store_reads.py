"""The store's one reader (store/reader.py over dulwich's object store, store/repo.py)
reads what stock git reads, and keeps reading while real processes write and repack the
store."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gitsessions.store import maintenance
from gitsessions.store.errors import ObjectMissing, StoreCorrupt
from gitsessions.store.reader import SessionReader
from gitsessions.store.repo import GitStore
from gitsessions.store.sessions import SessionStore
from tests.conftest import REPO, git, loosen

TYPES = {"commit": 1, "tree": 2, "blob": 3, "tag": 4}


def _stock_objects(store_path: Path) -> dict[bytes, tuple[int, bytes]]:
    """Every object as `git cat-file --batch` gives it."""
    names = git(store_path, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)")
    done = subprocess.run(
        ["git", "--git-dir", str(store_path), "cat-file", "--batch"],
        input=names.stdout.encode(), capture_output=True, check=True,
    )  # fmt: skip
    out, data = {}, done.stdout
    while data:
        header, _nl, data = data.partition(b"\n")
        sha, kind, size = header.split()
        out[sha] = (TYPES[kind.decode()], data[: int(size)])
        data = data[int(size) + 1 :]
    return out


def _grow(store: SessionStore, make_session, sessions: int = 3, turns: int = 6) -> list[str]:
    return [make_session(turns=turns, tag="x" * n).id for n in range(sessions)]


def test_every_object_reads_as_stock_git_reads_it(store, home, make_session):
    """Loose objects, a deltified pack (chains of offset deltas), a pack indexed in
    git's version 1 format, and reference deltas (`pack-objects` without offsets)."""
    _grow(store, make_session)
    maintenance.repack(store.git)
    _grow(store, make_session, sessions=1)  # and some loose objects beside the pack
    path = home / "store.git"
    verify = git(path, "verify-pack", "-v", *map(str, (path / "objects" / "pack").glob("*.idx")))
    assert "chain length = 2" in verify.stdout  # deltas on deltas are read here
    expected = _stock_objects(path)
    reader = GitStore(path)
    assert {sha: reader.raw(sha) for sha in expected} == expected
    reader.close()
    # the same pack with a version-1 index, and all of it as reference deltas
    for args in (["--index-version=1"], []):
        copy = home / f"copy{len(args)}.git"
        shutil.copytree(path, copy)
        packs = copy / "objects" / "pack"
        for pack in packs.glob("*.pack"):
            pack.with_suffix(".idx").unlink()
            git(copy, "index-pack", *args, str(pack))
        if not args:  # rewrite as REF_DELTA records: `pack-objects` without --delta-base-offset
            names = git(copy, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)")
            old = list(packs.iterdir())
            command = ["git", "--git-dir", str(copy), "pack-objects", str(home / "new")]
            subprocess.run(command, input=names.stdout, text=True, capture_output=True, check=True)
            for file in old:
                file.unlink()
            for file in home.glob("new-*"):
                file.rename(packs / file.name.replace("new-", "pack-"))
            git(copy, "prune-packed")
            assert not list((copy / "objects").glob("??/*"))  # every object in the pack
            verify = git(copy, "verify-pack", "-v", *map(str, packs.glob("*.idx"))).stdout
            assert "chain length = 1" in verify
        copied = GitStore(copy)
        assert {sha: copied.raw(sha) for sha in expected} == expected
        copied.close()


def test_missing_and_damaged_objects_say_so(store, home, make_session):
    head = make_session(turns=1)
    reader = GitStore(home / "store.git")
    with pytest.raises(ObjectMissing):
        reader.raw(b"0" * 40)
    with pytest.raises(StoreCorrupt):
        reader.raw(b"not an id")
    reader.close()
    damaged = home / "damaged.git"  # a copy: the store itself stays valid (fsck)
    shutil.copytree(home / "store.git", damaged)
    loosen(damaged)
    sha = head.tree.decode()
    loose = damaged / "objects" / sha[:2] / sha[2:]
    loose.chmod(0o600)
    loose.write_bytes(b"not zlib at all")
    copied = GitStore(damaged)
    with pytest.raises(StoreCorrupt, match="cannot be read"):
        copied.raw(head.tree)
    copied.close()


def test_a_reader_whose_packs_were_replaced_lists_them_again(store, home, make_session):
    """A reader keeps the packs it opened (removed since, they still read) and lists the
    pack directory again when an object is in neither them nor a loose file."""
    first = make_session(turns=2)
    maintenance.repack(store.git)
    reader = SessionReader.open(home)
    assert reader is not None
    assert reader.head(first.id) == first  # the pack of this moment, opened and kept
    (old,) = (home / "store.git" / "objects" / "pack").glob("*.idx")
    second = make_session(turns=2)
    maintenance.repack(store.git)  # one new pack: the old one is deleted
    maintenance.merge_packs(store.git)
    assert not old.exists()
    assert reader.records(reader.head(first.id)) == store.records(first)
    assert reader.records(reader.head(second.id)) == store.records(second)  # listed again
    with pytest.raises(ObjectMissing):
        reader.git.raw(b"1" * 40)


REPACKER = """
import sys
from pathlib import Path
from gitsessions.store import maintenance
from gitsessions.store.sessions import Change, SessionStore

home, sid, rounds, doomed = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4:]
store = SessionStore(home, background_maintenance=False)
steps = (maintenance.repack, maintenance.merge_packs, maintenance.merge_packs)
for n in range(rounds):
    head = store.head(sid)
    msgs = [{"role": "user", "content": f"more-{n}-{i} " + "y" * 500} for i in range(5)]
    store.commit(head, Change(append=msgs, context=msgs), event="turn", subject=f"turn {n}")
    steps[n % len(steps)](store.git)
    if n % 9 == 4 and doomed:  # a purge rewrites the packs that held what it drops
        store.delete(store.head(doomed.pop()))
print(rounds, flush=True)
"""


def test_reading_goes_on_while_another_process_writes_and_repacks(store, home, make_session):
    """One long-lived reader (its packs listed once, then removed under it) and fresh
    ones read a still session and a moving one while a real process commits (a pack
    each) and runs `gc`'s repack and the geometric `merge_packs` over and over, and
    deletes other
    sessions (their objects purged: the packs holding them rewritten)."""
    still, moving, *doomed = _grow(store, make_session, sessions=6)
    maintenance.repack(store.git)
    expected = store.records(store.head(still))
    env = dict(os.environ, PYTHONPATH=str(REPO))
    writer = subprocess.Popen(
        [sys.executable, "-c", REPACKER, str(home), moving, "45", *doomed],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    kept = SessionReader.open(home)
    assert kept is not None
    reads = 0
    try:
        while writer.poll() is None or reads < 3:
            fresh = SessionReader.open(home)
            assert fresh is not None
            for reader in (kept, fresh):
                assert reader.records(reader.head(still)) == expected
                head = reader.head(moving)  # the ref read once: a consistent state
                records = reader.records(head)
                assert len(records) == head.counts["messages"]
                assert reader.read(head, "context")[-1] == records[-1]["message"]
                assert sum(1 for _ in reader.history(head)) >= 1
            fresh.close()
            reads += 1
    finally:
        out, err = writer.communicate(timeout=300)
    assert writer.returncode == 0, err
    assert out.strip() == "45"
    assert reads >= 3
    assert len(list((home / "store.git" / "objects" / "pack").glob("*.idx"))) >= 1
    assert set(kept.ids()) == {still, moving}  # every doomed session was deleted
