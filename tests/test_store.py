"""The store's contract: layout, commits and trailers, compare-and-swap, forks, purge."""

import json
import subprocess
from pathlib import Path

import pytest

from gitsessions.store import maintenance
from gitsessions.store.background import wait_for_maintenance
from gitsessions.store.chunks import FANOUT
from gitsessions.store.errors import ConcurrentUpdate, SessionExists
from gitsessions.store.sessions import Change, SessionStore
from gitsessions.store.trailers import parse_trailers
from gitsessions.values.clock import now_iso
from gitsessions.values.ids import new_id
from gitsessions.values.records import new_header
from tests.conftest import fsck, git


def count_objects(home: Path) -> int:
    out = git(home / "store.git", "cat-file", "--batch-all-objects", "--batch-check").stdout
    return len(out.splitlines())


def test_layout_readable_with_stock_git(store, home, make_session):
    head = make_session(turns=2)
    branch = f"refs/heads/sessions/{head.id}"
    files = git(home / "store.git", "ls-tree", "-r", "--name-only", branch).stdout.split()
    assert files == [
        "compactions.json",
        "context-inline.json",
        "context.json",
        "pins.json",
        "plan.json",
        "session.json",
        "transcript/0000000000.jsonl",  # create: the system prompt
        "transcript/0000000001.jsonl",  # turn 1
        "transcript/0000000003.jsonl",  # turn 2
    ]
    header = json.loads(git(home / "store.git", "show", f"{branch}:session.json").stdout)
    assert header["id"] == head.id
    assert header["format"] == "gitsessions.header/2"
    context = json.loads(git(home / "store.git", "show", f"{branch}:context.json").stdout)
    assert context == {"context": [{"from": 0, "to": 5}], "format": "gitsessions.context/2"}
    assert header["counts"] == {"messages": 5, "context_messages": 5, "compactions": 0}
    log = git(home / "store.git", "log", "--format=%B%x00", branch).stdout
    assert f"Session: {head.id}\nEvent: turn" in log
    assert log.count("Event: ") == 3
    fsck(home)


def test_canonical_json_is_sorted_and_stable(store, home, make_session):
    head = make_session(turns=1)
    raw = git(home / "store.git", "show", f"{head.branch}:session.json").stdout
    assert raw == json.dumps(json.loads(raw), sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def test_transcript_lines_are_written_once_in_a_bounded_tree(store, home):
    sid = new_id()
    head = store.create(new_header(sid, now_iso()), Change())
    sent: list[str] = []
    blobs_seen: dict[str, str] = {}
    for n in range(FANOUT * FANOUT + 3):  # deep enough for three levels
        batch = [{"role": "user", "content": f"m{n}.{i}"} for i in range(n % 3 + 1)]
        sent += [m["content"] for m in batch]
        head = store.commit(head, Change(append=batch), event="turn", subject=f"turn {n}")
    listing = git(home / "store.git", "ls-tree", "-r", "-t", head.branch, "transcript").stdout
    for line in listing.splitlines():
        meta, path = line.split("\t")
        blobs_seen[path] = meta.split()[2]
    chunks_ = [p for p in blobs_seen if p.endswith(".jsonl")]
    assert len(chunks_) == FANOUT * FANOUT + 3  # one chunk per commit, none rewritten
    assert {p.count("/") for p in chunks_} == {3}  # transcript/<dir>/<dir>/<chunk>
    for path, blob in blobs_seen.items():
        if not path.endswith(".jsonl"):
            entries = git(home / "store.git", "ls-tree", blob).stdout.splitlines()
            assert len(entries) <= FANOUT
    # the first chunk's blob is the one the first commit wrote
    first = git(home / "store.git", "rev-list", "--max-parents=0", head.branch).stdout.strip()
    second = git(home / "store.git", "rev-list", "--reverse", head.branch).stdout.split()[1]
    assert first
    early = git(home / "store.git", "ls-tree", "-r", second, "transcript").stdout.split()[2]
    assert early == blobs_seen[chunks_[0]]
    everything = store.transcript(head)
    assert [m["content"] for m in everything] == sent
    assert store.transcript(head, 100, 123) == everything[100:123]
    assert store.transcript(head, len(sent) - 2) == everything[-2:]
    fsck(home)


def test_lost_race_raises_and_overwrites_nothing(store, make_session):
    base = make_session(turns=1)
    winner = store.commit(
        base,
        Change(append=[{"role": "user", "content": "first"}]),
        event="turn",
        subject="turn 2: first",
    )
    with pytest.raises(ConcurrentUpdate):
        store.commit(
            base,
            Change(append=[{"role": "user", "content": "second"}]),
            event="turn",
            subject="turn 2: second",
        )
    assert store.head(base.id).commit == winner.commit
    assert store.transcript(store.head(base.id))[-1]["content"] == "first"


def test_create_refuses_existing_id(store, make_session):
    head = make_session(turns=0)
    with pytest.raises(SessionExists):
        store.create(new_header(head.id, now_iso()), Change())


def test_fork_copies_nothing(store, home, make_session):
    parent = make_session(turns=30)
    maintenance.repack(store.git)
    before = count_objects(home)
    fork = store.fork(parent, new_id(), title=None, created_at=now_iso())
    added = count_objects(home) - before
    assert added == 3  # session.json blob, root tree, fork commit
    assert fork.header["parent_id"] == parent.id
    assert fork.header["fork_point"] == parent.commit.decode()
    assert store.transcript(fork) == store.transcript(parent)
    assert store.read(fork, "context") == store.read(parent, "context")
    _subject, trailers = parse_trailers(next(store.history(fork))[1].message)
    assert trailers["Event"] == "fork"
    assert trailers["Parent-Session"] == parent.id
    assert trailers["Fork-Point"] == parent.commit.decode()
    fsck(home)


@pytest.mark.parametrize("packed", [False, True], ids=["small packs", "packed"])
def test_delete_purges_only_unshared_objects(store, home, make_session, packed):
    keep = make_session(turns=2, tag="kept-4f1d")
    doomed = make_session(turns=2, tag="doomed-9c2e")
    fork = store.fork(doomed, new_id(), title="child", created_at=now_iso())
    child = store.commit(
        fork,
        Change(append=[{"role": "user", "content": "child-only-77aa"}]),
        event="turn",
        subject="turn",
    )
    if packed:  # one deltified pack: the deleted sessions' objects are bases of others
        maintenance.repack(store.git)
        make_session(turns=1, tag="after-pack")  # and a few small packs beside it
    store.delete(store.head(doomed.id))
    # the fork still has the parent's history (shared objects stay)
    assert any("doomed-9c2e" in m.get("content", "") for m in store.transcript(child))
    assert store.head(keep.id).commit == keep.commit
    fsck(home)
    # now delete the fork too: nothing of the doomed session survives on disk
    store.delete(store.head(child.id))
    raw = b"".join(p.read_bytes() for p in (home / "store.git").rglob("*") if p.is_file())
    dump = subprocess.run(
        ["git", "--git-dir", str(home / "store.git"), "cat-file", "--batch-all-objects", "--batch"],
        capture_output=True,
    ).stdout
    assert b"doomed-9c2e" not in dump and b"child-only-77aa" not in dump
    assert b"kept-4f1d" in dump
    for idx in (home / "store.git" / "objects" / "pack").glob("*.idx"):
        git(home / "store.git", "verify-pack", str(idx))  # checksums, offsets, deltas
    assert b"doomed-9c2e" not in raw  # not even compressed-away copies (packs are zlib)
    fsck(home)


def test_gc_packs_with_deltas(store, home, make_session):
    head = make_session(turns=60)
    stats = maintenance.repack(store.git)
    assert stats["objects"] == count_objects(home)
    assert not list((home / "store.git" / "objects").glob("??/*"))  # no loose objects left
    verify = git(
        home / "store.git",
        "verify-pack",
        "-v",
        *map(str, (home / "store.git" / "objects" / "pack").glob("*.idx")),
    ).stdout
    assert "chain length" in verify  # deltified, not a pack of full objects
    assert store.transcript(store.head(head.id))[-1]["content"].startswith("answer 59")
    fsck(home)


def test_maintenance_packs_loose_objects(store, home, monkeypatch, make_session):
    from dulwich.objects import Blob

    monkeypatch.setattr(maintenance, "AUTOPACK_LOOSE", -1)
    head = make_session(turns=3)
    for n in range(3):  # a write of one object leaves it loose (turns write packs)
        store.git.add_objects([Blob.from_string(b"single %d" % n)])
    assert maintenance.needs_maintenance(store.git)
    assert maintenance.run_maintenance(store.git)["loose_packed"] == 3
    assert list((home / "store.git" / "objects" / "pack").glob("*.pack"))
    assert not list((home / "store.git" / "objects").glob("??/*"))
    assert store.transcript(store.head(head.id))[-1]["content"].startswith("answer 2")
    fsck(home)


def test_writers_hand_maintenance_to_a_background_process(store, home, make_session):
    heads = [make_session(turns=0) for _ in range(maintenance.AUTOPACK_REFS + 4)]
    wait_for_maintenance(home / "store.git")  # the process a commit started
    packed = (home / "store.git" / "packed-refs").read_text()
    assert sum(h.id in packed for h in heads) > maintenance.AUTOPACK_REFS
    assert maintenance.loose_refs(store.git) < maintenance.AUTOPACK_REFS
    assert set(store.ids()) == {h.id for h in heads}


def test_store_files_are_private(cli, home, make_session):
    make_session(turns=1)
    cli("list")
    for path in [home, *home.rglob("*")]:
        mode = path.stat().st_mode & 0o777
        assert mode & 0o077 == 0, (path, oct(mode))


def test_stale_locks_are_cleared(store, home, make_session):
    head = make_session(turns=1)
    lock = home / "store.git" / "refs" / "heads" / "sessions" / f"{head.id}.lock"
    lock.write_text("")
    import os
    import time

    old = time.time() - 3600
    os.utime(lock, (old, old))
    head = store.commit(
        head,
        Change(append=[{"role": "user", "content": "after crash"}]),
        event="turn",
        subject="turn",
    )
    assert not lock.exists()
    assert store.transcript(head)[-1]["content"] == "after crash"


def test_no_reflogs_left_after_delete(store, home, make_session):
    head = make_session(turns=1)
    store.delete(head)
    assert not list((home / "store.git").glob("logs/**/*"))[:1] or not any(
        p.is_file() for p in (home / "store.git" / "logs").rglob("*")
    )
    fsck(home)


def test_sessions_survive_reopen(home, make_session, store):
    head = make_session(turns=3)
    again = SessionStore(home)
    assert again.transcript(again.head(head.id)) == store.transcript(head)
    again.close()


def test_maintenance_packs_loose_refs(store, home, monkeypatch, make_session):
    monkeypatch.setattr(maintenance, "AUTOPACK_REFS", 2)
    heads = [make_session(turns=0) for _ in range(4)]
    maintenance.run_maintenance(store.git)
    packed = (home / "store.git" / "packed-refs").read_text()
    assert sum(h.id in packed for h in heads) >= 3
    assert set(store.ids()) == {h.id for h in heads}


def test_a_stored_integer_too_long_for_python_reads_as_corrupt() -> None:
    from gitsessions.store.errors import StoreCorrupt
    from gitsessions.store.layout import decode_lines

    with pytest.raises(StoreCorrupt, match=r"000001\.jsonl: Exceeds the limit"):
        decode_lines(b'{"n": ' + b"1" * 5000 + b"}\n", "000001.jsonl")


def test_a_long_batch_is_split_into_chunks_of_at_most_256_lines(store, home):
    batch = [{"role": "user", "content": f"m{i}"} for i in range(600)]
    head = store.create(new_header(new_id(), now_iso()), Change(append=batch, context=batch))
    names = git(home / "store.git", "ls-tree", "-r", "--name-only", head.branch).stdout.split()
    assert [n for n in names if n.startswith("transcript/")] == [
        "transcript/0000000000.jsonl",
        "transcript/0000000256.jsonl",
        "transcript/0000000512.jsonl",
    ]
    assert store.transcript(head) == batch
    assert store.read(head, "context") == batch
    fsck(home)


def test_a_fork_of_a_diverged_line_counts_what_that_line_spent_since_the_merge_base(store):
    from gitsessions.values.records import add_usage, empty_usage

    head = store.create(new_header(new_id(), now_iso(), title="t"), Change(context=[]))
    spent = add_usage(empty_usage(), "m", 100, 10, 0.5)
    base = store.commit(head, Change(usage=spent), event="turn", subject="turn 1")
    spent = add_usage(add_usage(spent, "m", 40, 4, 0.25), "other", 1, 1, 0.0)
    tip = store.commit(base, Change(usage=spent), event="turn", subject="turn 2")
    plain = store.fork(tip, new_id(), title=None, created_at=now_iso())
    assert store.read(plain, "usage") == empty_usage()  # a fork starts at zero
    pulled = store.fork(tip, new_id(), title=None, created_at=now_iso(), fork_point=base.commit)
    usage = store.read(pulled, "usage")
    assert (usage["prompt_tokens"], usage["completion_tokens"], usage["requests"]) == (41, 5, 2)
    assert usage["cost_usd"] == 0.25
    assert set(usage["by_model"]) == {"m", "other"}
    assert usage["by_model"]["m"]["prompt_tokens"] == 40
