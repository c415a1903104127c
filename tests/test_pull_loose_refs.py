"""A pull writes what changed as loose ref files (issue 46): the branches it creates, the
remote-tracking refs that moved; `packed-refs` (100,000 lines at 50,000 sessions) stays
as it is unless a packed remote-tracking ref goes. Stock git reads the same refs, and
maintenance packs them later."""

import os
from pathlib import Path

from gitsessions.store import refs as store_refs
from gitsessions.store.refnames import is_session_branch, of_layout
from gitsessions.store.refpack import pack_refs
from gitsessions.store.repo import GitStore
from gitsessions.values.ids import is_session_id
from tests.conftest import Cli, fsck, git
from tests.test_hostile_remote import bare
from tests.test_sync import make, refs, results, summary

SESSIONS = "refs/heads/sessions/"
TRACKING = "refs/remotes/origin/sessions/"


def _pushed(cli: Cli, writer: Path, origin: Path, count: int, tag: str) -> list[str]:
    made = [make(writer, tag=f"{tag} {n}") for n in range(count)]
    cli("--home", str(writer), "push", "--all")
    return made


def _pack(home: Path) -> None:
    git_store = GitStore(home / "store.git")
    try:
        pack_refs(git_store)
    finally:
        git_store.close()


def test_a_pull_of_new_sessions_leaves_packed_refs_as_it_is(cli: Cli, home: Path, tmp_path: Path):
    writer, origin = tmp_path / "writer", bare(tmp_path / "origin.git")
    cli("--home", str(writer), "remote", "add", "origin", str(origin))
    first = _pushed(cli, writer, origin, 3, "first")
    cli("remote", "add", "origin", str(origin))
    assert results(summary(cli, home, "pull")) == dict.fromkeys(first, "created")
    store = home / "store.git"
    _pack(home)
    packed = store / "packed-refs"
    before, inode = packed.read_bytes(), packed.stat().st_ino
    assert not list((store / SESSIONS).iterdir())  # every branch packed

    second = _pushed(cli, writer, origin, 2, "second")
    assert results(summary(cli, home, "pull")) == {
        **dict.fromkeys(first, "unchanged"),
        **dict.fromkeys(second, "created"),
    }
    assert packed.read_bytes() == before and packed.stat().st_ino == inode
    assert sorted(os.listdir(store / SESSIONS)) == sorted(second)
    assert sorted(os.listdir(store / TRACKING)) == sorted(second)  # only what moved
    assert not [n for n in os.listdir(store / "gitsessions") if n.startswith("newref-")]
    assert not (store / "packed-refs.lock").exists()
    seen = refs(store)  # stock git reads loose over packed
    theirs = refs(origin, SESSIONS)
    for sid in first + second:
        assert seen[SESSIONS + sid] == seen[TRACKING + sid] == theirs[SESSIONS + sid]
    assert set(store_refs.session_ids(store)) == {*first, *second}
    _pack(home)  # maintenance packs them: the same refs
    assert refs(store) == seen and not os.listdir(store / SESSIONS)
    fsck(home)


def test_a_packed_tracking_ref_that_goes_rewrites_packed_refs(cli: Cli, home: Path, tmp_path: Path):
    """The remote drops a branch: its remote-tracking ref goes, from `packed-refs` when
    it is packed (the one case a pull writes it), else its loose file alone."""
    writer, origin = tmp_path / "writer", bare(tmp_path / "origin.git")
    cli("--home", str(writer), "remote", "add", "origin", str(origin))
    one, two, three = _pushed(cli, writer, origin, 3, "s")
    cli("remote", "add", "origin", str(origin))
    summary(cli, home, "pull")
    store = home / "store.git"
    _pack(home)
    packed = store / "packed-refs"
    inode = packed.stat().st_ino
    assert (TRACKING + one).encode() in packed.read_bytes()

    git(origin, "update-ref", "-d", SESSIONS + one)
    summary(cli, home, "pull")
    assert packed.stat().st_ino != inode  # rewritten: the packed tracking ref went
    assert (TRACKING + one).encode() not in packed.read_bytes()
    assert TRACKING + one not in refs(store) and SESSIONS + one in refs(store)

    four = _pushed(cli, writer, origin, 1, "four")[0]
    summary(cli, home, "pull")  # four's tracking ref loose
    assert (store / TRACKING / four).is_file()
    inode = packed.stat().st_ino
    git(origin, "update-ref", "-d", SESSIONS + four)
    summary(cli, home, "pull")
    assert packed.stat().st_ino == inode  # a loose one goes alone
    assert not (store / TRACKING / four).exists()
    theirs = {TRACKING + n[len(SESSIONS) :] for n in refs(origin, SESSIONS)}
    assert set(refs(store, TRACKING)) == theirs  # `one` again: the writer pushed it back
    assert {TRACKING + two, TRACKING + three} <= theirs and TRACKING + four not in theirs
    fsck(home)


def test_fast_checks_decide_as_the_patterns_do(tmp_path: Path):
    """`is_session_branch` and `session_ids` (slices and `translate`, no regex) decide
    as `of_layout` and `is_session_id` do."""
    sid = "0123456789abcdef0123456789abcdef"
    names = [
        SESSIONS + sid,
        SESSIONS + sid.upper(),
        SESSIONS + sid[:-1],
        SESSIONS + sid + "0",
        SESSIONS + sid[:-1] + "g",
        SESSIONS + sid[:-1] + "\u00e9",
        "refs/heads/session/" + sid + "0",
        "refs/gitsessions/tombstones",
        "refs/heads/main",
    ]
    for name in (n.encode() for n in names):
        assert is_session_branch(name) == (of_layout(name) and name.startswith(SESSIONS.encode()))
    store = tmp_path / "store.git"
    (store / SESSIONS).mkdir(parents=True)
    sha, newer = b"1" * 40, b"2" * 40
    lines = [sha + b" " + name.encode() for name in names if name.isascii()]
    (store / "packed-refs").write_bytes(b"# pack-refs with: sorted \n" + b"\n".join(lines) + b"\n")
    (store / SESSIONS / sid).write_bytes(newer + b"\n")  # shadows the packed line
    (store / SESSIONS / "main").write_bytes(newer + b"\n")
    expected = {
        k.decode(): v
        for k, v in store_refs.session_refs(store).items()
        if is_session_id(k.decode())
    }
    assert store_refs.session_ids(store) == expected == {sid: newer}
