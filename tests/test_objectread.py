"""The dulwich-free reader (store/objectread.py, store/reader.py) reads what stock git
reads, and keeps reading while real processes write and repack the store."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gitsessions.store import maintenance, objectread
from gitsessions.store.errors import ObjectMissing, StoreCorrupt
from gitsessions.store.objectread import ObjectReader, apply_delta, apply_delta_py
from gitsessions.store.reader import SessionReader
from gitsessions.store.sessions import Change, SessionStore
from tests.conftest import REPO, git

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


@pytest.mark.parametrize("deltas", ["compiled", "python"])
def test_every_object_reads_as_stock_git_reads_it(store, home, make_session, monkeypatch, deltas):
    """Loose objects, a deltified pack (chains of offset deltas), a pack indexed in
    git's version 1 format, and reference deltas (`pack-objects` without offsets); the
    deltas applied by dulwich's compiled code and by the Python fallback."""
    if deltas == "python":
        monkeypatch.setattr(objectread, "apply_delta", apply_delta_py)
    else:  # from the first delta on (the first 16 KiB of them are Python's otherwise)
        monkeypatch.setattr(objectread, "_python_left", [0])
        assert objectread._compiled() is not None  # the extension is built here
    _grow(store, make_session)
    maintenance.repack(store.git)
    _grow(store, make_session, sessions=1)  # and some loose objects beside the pack
    path = home / "store.git"
    verify = git(path, "verify-pack", "-v", *map(str, (path / "objects" / "pack").glob("*.idx")))
    assert "chain length = 2" in verify.stdout  # deltas on deltas are read here
    expected = _stock_objects(path)
    reader = ObjectReader(path)
    assert {sha: reader.raw(sha) for sha in expected} == expected
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
        assert {sha: ObjectReader(copy).raw(sha) for sha in expected} == expected


def test_refs_and_sessions_read_as_the_store_reads_them(store, home, make_session):
    ids = _grow(store, make_session)
    maintenance.repack(store.git)  # packs the refs too
    store.commit(store.head(ids[0]), Change(plan=["one"]), event="plan", subject="plan")
    reader = SessionReader.open(home)
    assert reader is not None
    shown = git(home / "store.git", "show-ref").stdout.split("\n")
    refs = dict(reversed(line.split(" ")) for line in shown if "/sessions/" in line)
    assert {f"refs/heads/sessions/{k}": v.decode() for k, v in reader.ids().items()} == refs
    for sid in ids:
        head, mine = store.head(sid), reader.head(sid)
        assert mine == head
        assert reader.records(mine) == store.records(head)
        assert reader.read(mine, "context") == store.read(head, "context")
        assert reader.read(mine, "plan") == store.read(head, "plan")
        assert [c.message for _i, c in reader.history(mine)] == [
            git(home / "store.git", "log", "--format=%B", "-1", sha.decode()).stdout.rstrip("\n")
            .encode() + b"\n" for sha in git(home / "store.git", "rev-list", "--first-parent",
                                             head.commit.decode()).stdout.encode().split()
        ]  # fmt: skip


@pytest.mark.parametrize("version", [1, 2])
def test_each_stored_format_reads_as_the_store_reads_it(home, version):
    """The committed fixtures of format 1 and 2 (flat transcript segments, a context by
    value, usage in a file; chunks, a context by reference), read by both."""
    from tests.test_store_formats import unpack

    path = unpack(version, home)
    reader = SessionReader(home, ObjectReader(path))  # `open` wants a format-2 config
    store = SessionStore(home)
    assert reader.ids() == store.ids() and len(reader.ids()) == 3
    for sid in reader.ids():
        head = reader.head(sid)
        assert head == store.head(sid) and head.version == version
        assert reader.records(head) == store.records(head)
        for what in ("context", "compactions", "plan", "pins", "usage"):
            assert reader.read(head, what) == store.read(head, what), what
        assert [c for c, _ in reader.history(head)] == [c for c, _ in store.history(head)]


def test_missing_and_damaged_objects_say_so(store, home, make_session, monkeypatch):
    head = make_session(turns=1)
    reader = ObjectReader(home / "store.git")
    with pytest.raises(ObjectMissing):
        reader.raw(b"0" * 40)
    with pytest.raises(StoreCorrupt):
        reader.raw(b"not an id")
    damaged = home / "damaged.git"  # a copy: the store itself stays valid (fsck)
    shutil.copytree(home / "store.git", damaged)
    sha = head.tree.decode()
    loose = damaged / "objects" / sha[:2] / sha[2:]
    loose.chmod(0o600)
    loose.write_bytes(b"not zlib at all")
    with pytest.raises(StoreCorrupt, match="cannot be read"):
        ObjectReader(damaged).raw(head.tree)
    monkeypatch.setattr(objectread, "_python_left", [0])  # `apply_delta` compiled
    for apply in (apply_delta, apply_delta_py):
        with pytest.raises(ValueError):
            apply(b"abc", b"\x04\x01a")  # a base of the wrong size
        with pytest.raises(ValueError):
            apply(b"abc", b"\x03\x05\x90\x05")  # a result of the wrong size
        assert apply(b"abcdef", b"\x06\x05\x91\x01\x03\x02xy") == b"bcdxy"


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
    maintenance.pack_loose(store.git)
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
steps = (maintenance.repack, maintenance.pack_loose, maintenance.consolidate)
for n in range(rounds):
    head = store.head(sid)
    msgs = [{"role": "user", "content": f"more-{n}-{i} " + "y" * 500} for i in range(5)]
    store.commit(head, Change(append=msgs, context=msgs), event="turn", subject=f"turn {n}")
    steps[n % 3](store.git)
    if n % 9 == 4 and doomed:  # a purge rewrites the packs that held what it drops
        store.delete(store.head(doomed.pop()))
print(rounds, flush=True)
"""


def test_reading_goes_on_while_another_process_writes_and_repacks(store, home, make_session):
    """One long-lived reader (its packs listed once, then removed under it) and fresh
    ones read a still session and a moving one while a real process commits and runs
    `gc`'s repack, `pack_loose` and `consolidate` over and over, and deletes other
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
