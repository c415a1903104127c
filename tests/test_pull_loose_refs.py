"""A pull writes what changed as loose ref files (issue 46) when they are few beside
`packed-refs` (100,000 lines at 50,000 sessions: `tracking.LOOSE_PER_PACKED`): the
branches it creates, the remote-tracking refs that moved; `packed-refs` stays as it is
unless a packed remote-tracking ref goes. Stock git reads the same refs, maintenance
packs them later, and a pull killed as it links in its first branch loses nothing."""

import json
import os
import shutil
import signal
from pathlib import Path

import pytest

from gitsessions.store import refs as store_refs
from gitsessions.store.refnames import is_session_branch, of_layout
from gitsessions.store.refpack import pack_refs, packed_lock, read_packed
from gitsessions.store.refs import ref_name
from gitsessions.store.repo import GitStore
from gitsessions.store.tracking import LOOSE_PER_PACKED
from gitsessions.values.ids import is_session_id, new_id
from tests.conftest import Cli, fsck, git
from tests.test_hostile_remote import bare
from tests.test_killed_pull import _arriving, _killed_at_rename
from tests.test_sync import make, refs, results, summary, swapped

SESSIONS = "refs/heads/sessions/"
TRACKING = "refs/remotes/origin/sessions/"


def _pushed(cli: Cli, writer: Path, origin: Path, count: int, tag: str) -> list[str]:
    made = [make(writer, tag=f"{tag} {n}") for n in range(count)]
    cli("--home", str(writer), "push", "--all")
    return made


def _pulled(cli: Cli, home: Path, tmp_path: Path, tag: str) -> tuple[Path, Path, list[str]]:
    """Three sessions another home pushed to `origin`, pulled here: (writer, origin, ids)."""
    writer, origin = tmp_path / "writer", bare(tmp_path / "origin.git")
    cli("--home", str(writer), "remote", "add", "origin", str(origin))
    came = _pushed(cli, writer, origin, 3, tag)
    cli("remote", "add", "origin", str(origin))
    assert results(summary(cli, home, "pull")) == dict.fromkeys(came, "created")
    return writer, origin, came


def _files(folder: Path) -> list[str]:
    """The loose ref files in `folder` (none when it is not there)."""
    return os.listdir(folder) if folder.is_dir() else []


def _pack(home: Path, ballast: int = 0) -> None:
    """Every loose ref packed, and `ballast` refs more (another remote's tracking refs,
    at a commit here): a `packed-refs` as long as a big store's, beside a few sessions."""
    store = home / "store.git"
    git_store = GitStore(store)
    try:
        pack_refs(git_store)
        if ballast:
            with packed_lock(store) as commit:
                packed = read_packed(store / "packed-refs")
                sha = next(s for n, s in packed.items() if n.startswith(SESSIONS.encode()))
                more = {
                    b"refs/remotes/ballast/sessions/" + new_id().encode(): sha
                    for _ in range(ballast)
                }
                commit({**packed, **more})
    finally:
        git_store.close()


def test_a_pull_of_new_sessions_leaves_packed_refs_as_it_is(cli: Cli, home: Path, tmp_path: Path):
    writer, origin, first = _pulled(cli, home, tmp_path, "first")
    store = home / "store.git"
    _pack(home, ballast=8 * LOOSE_PER_PACKED)
    packed = store / "packed-refs"
    before, inode = packed.read_bytes(), packed.stat().st_ino
    assert not _files(store / SESSIONS)  # every branch packed

    stale = store / "gitsessions" / "newref-999999999"  # a killed pull's (no such pid)
    stale.write_bytes(b"0" * 40 + b"\n")
    second = _pushed(cli, writer, origin, 2, "second")
    assert results(summary(cli, home, "pull")) == {
        **dict.fromkeys(first, "unchanged"),
        **dict.fromkeys(second, "created"),
    }
    assert packed.read_bytes() == before and packed.stat().st_ino == inode
    assert sorted(_files(store / SESSIONS)) == sorted(second)
    assert sorted(_files(store / TRACKING)) == sorted(second)  # only what moved
    assert not [n for n in os.listdir(store / "gitsessions") if n.startswith("newref-")]
    assert not (store / "packed-refs.lock").exists()
    seen = refs(store)  # stock git reads loose over packed
    theirs = refs(origin, SESSIONS)
    for sid in first + second:
        assert seen[SESSIONS + sid] == seen[TRACKING + sid] == theirs[SESSIONS + sid]
    assert set(store_refs.session_ids(store)) == {*first, *second}
    _pack(home)  # maintenance packs them: the same refs
    assert refs(store) == seen and not _files(store / SESSIONS)
    fsck(home)


def test_a_packed_tracking_ref_that_goes_rewrites_packed_refs(cli: Cli, home: Path, tmp_path: Path):
    """The remote drops a branch: its remote-tracking ref goes, from `packed-refs` when
    it is packed (the one case a pull writes it), else its loose file alone."""
    writer, origin, (one, two, three) = _pulled(cli, home, tmp_path, "s")
    store = home / "store.git"
    _pack(home, ballast=8 * LOOSE_PER_PACKED)
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


def test_a_small_store_takes_one_packed_refs_write(cli: Cli, home: Path, tmp_path: Path):
    """Beside a short `packed-refs` (a first pull), one write of it costs less than a
    file (and an fsync) a ref: the branches and tracking refs go there."""
    *_, came = _pulled(cli, home, tmp_path, "s")
    store = home / "store.git"
    packed = read_packed(store / "packed-refs")
    for sid in came:
        assert (SESSIONS + sid).encode() in packed and (TRACKING + sid).encode() in packed
    assert not _files(store / SESSIONS)


@pytest.mark.skipif(
    shutil.which("strace") is None, reason="strace is not installed: apt-get install strace"
)
def test_a_pull_killed_linking_its_first_branch_loses_nothing(cli: Cli, home: Path, tmp_path: Path):
    """Killed as it links in the first branch it creates (loose: a long `packed-refs`),
    a pull has named what it was creating in `packed-refs.lock`: `doctor` calls those
    sessions unfinished, not lost; the next pull sets the lock aside and creates each
    once."""
    arriving, mine = _arriving(cli, home, tmp_path, 3)
    store = home / "store.git"
    _pack(home, ballast=8 * LOOSE_PER_PACKED)
    before = (store / "packed-refs").read_bytes()
    first = store / SESSIONS / min(arriving)
    killed = _killed_at_rename(home, first, "pull", calls="link,linkat")
    assert killed.returncode in (-signal.SIGKILL, 128 + signal.SIGKILL), killed.stderr
    assert set(refs(store, SESSIONS)) == {SESSIONS + mine}
    assert (store / "packed-refs").read_bytes() == before

    found = json.loads(cli("doctor", "--json", code=1).stdout)["findings"]
    kinds = {(f["kind"], f["subject"]) for f in found}
    assert {("unfinished", sid) for sid in arriving} <= kinds, found
    assert not [f for f in found if f["kind"] == "lost"], found

    assert results(summary(cli, home, "pull")) == dict.fromkeys(arriving, "created")
    assert not (store / "packed-refs.lock").exists()
    assert not [n for n in os.listdir(store / "gitsessions") if n.startswith("newref-")]
    assert sorted(_files(store / SESSIONS)) == sorted(arriving)
    ids = json.loads(cli("list", "--json").stdout)
    listed = [row["id"] for row in (ids if isinstance(ids, list) else ids["sessions"])]
    assert sorted(listed) == sorted([*arriving, mine])  # each once
    assert json.loads(cli("doctor", "--json").stdout)["healthy"]
    fsck(home)


def test_loose_writes_move_branches_by_compare_and_swap(home: Path):
    """`update_refs_if_equal` beside a long `packed-refs`: a branch moves only from the
    value it was seen at (its loose file replaced whole), a create only where nothing
    is, the tracking refs that moved written, and `packed-refs` left as it is."""
    one, two, three = make(home, tag="one"), make(home, tag="two"), make(home, tag="three")
    _pack(home, ballast=8 * LOOSE_PER_PACKED)
    store_path = home / "store.git"
    before = (store_path / "packed-refs").read_bytes()
    moved, heads, older, fresh = swapped(home, one, two, three)
    assert moved == {ref_name(one), ref_name(fresh)}
    assert (store_path / "packed-refs").read_bytes() == before
    assert (store_path / SESSIONS / one).read_bytes() == older + b"\n"
    now = refs(store_path)
    assert now[SESSIONS + one] == older.decode()
    assert now[SESSIONS + two] == heads[two].decode()
    assert now[SESSIONS + three] == heads[three].decode()
    assert now[SESSIONS + fresh] == heads[two].decode()
    assert now[TRACKING + two] == heads[two].decode()
    fsck(home)
