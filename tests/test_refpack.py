"""Ref packing never loses a session: a kill at any unlink, rename or write of `gc`
leaves every branch readable at its head, and readers never see an older head.

Before the fix, dulwich's `add_packed_refs` deleted the loose ref files before it
wrote `packed-refs`: a kill at the first unlink dropped every loose session."""

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from gitsessions.store import maintenance
from gitsessions.store.errors import StoreCorrupt
from gitsessions.store.refpack import _well_formed, delete_ref, pack_refs, read_packed
from gitsessions.store.sessions import Change, SessionStore, ref_name
from gitsessions.values.clock import now_iso
from gitsessions.values.ids import new_id
from gitsessions.values.records import new_header
from tests.conftest import REPO, fsck, git

LOOSE = 30


def _make_store(home: Path, count: int) -> dict[str, bytes]:
    store = SessionStore(home, background_maintenance=False)
    heads = {}
    for n in range(count):
        sid = new_id()
        head = store.create(
            new_header(sid, now_iso(), title=f"s{n}"),
            Change(append=[{"role": "user", "content": f"m{n}"}]),
        )
        heads[sid] = head.commit
    store.close()
    return heads


def _refs_by_git(home: Path) -> dict[str, bytes]:
    out = git(
        home / "store.git",
        "for-each-ref",
        "--format=%(objectname) %(refname)",
        "refs/heads/sessions/",
    ).stdout
    refs = {}
    for line in out.splitlines():
        sha, name = line.split(" ")
        refs[name.rsplit("/", 1)[1]] = sha.encode()
    return refs


def _killed_gc(home: Path, syscall: str, when: int) -> bool:
    """Run `gc` with the `when`th `syscall` of any of its processes killed; True when a
    kill landed: in gitsessions itself, or in the stock git it runs (`gc` then ends in
    one line naming git)."""
    env = {**os.environ, "GITSESSIONS_HOME": str(home)}
    result = subprocess.run(
        [
            "strace", "-f", "-qq", "-o", "/dev/null",
            "-e", f"inject={syscall}:signal=KILL:when={when}",
            sys.executable, "-m", "gitsessions", "gc",
        ],
        capture_output=True, text=True, env=env, cwd=REPO, timeout=120,
    )  # fmt: skip
    if result.returncode in (-signal.SIGKILL, 128 + signal.SIGKILL, 137):
        return True
    lines = result.stderr.strip().splitlines()
    return result.returncode == 1 and len(lines) == 1 and "git " in lines[0]


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
@pytest.mark.parametrize(
    ("syscall", "points"),
    [("unlink", [1, LOOSE // 2]), ("rename", [1, 2]), ("write", [1, 20])],
)
def test_a_gc_killed_anywhere_keeps_every_session(tmp_path, syscall, points):
    template = tmp_path / "template"
    heads = _make_store(template, LOOSE)
    killed = 0
    for when in points:
        home = tmp_path / f"{syscall}-{when}"
        shutil.copytree(template, home, symlinks=True)
        killed += _killed_gc(home, syscall, when)
        assert _refs_by_git(home) == heads, (syscall, when)
        again = subprocess.run(
            [sys.executable, "-m", "gitsessions", "list", "--json"],
            capture_output=True, text=True, cwd=REPO,
            env={**os.environ, "GITSESSIONS_HOME": str(home)},
        )  # fmt: skip
        assert again.returncode == 0, again.stderr
        fsck(home)
    assert killed, "no injection point was reached"


def test_pack_refs_packs_then_removes_loose_files(home):
    heads = _make_store(home, 5)
    store = SessionStore(home, background_maintenance=False)
    assert pack_refs(store.git) == 6  # the 5 sessions and main
    packed = read_packed(home / "store.git" / "packed-refs")
    assert {ref_name(s): c for s, c in heads.items()}.items() <= packed.items()
    assert maintenance.loose_refs(store.git) == 0
    assert {s: c for s, c in store.ids().items()} == heads
    store.close()


def test_a_ref_busy_while_packing_stays_loose_and_moves_on(home):
    heads = _make_store(home, 3)
    store = SessionStore(home, background_maintenance=False)
    sid = next(iter(heads))
    name = ref_name(sid)
    with store.git.ref_locked(name):  # a writer is in the middle of moving it
        pack_refs(store.git)
    assert (home / "store.git" / os.fsdecode(name)).exists()  # kept loose: it was busy
    assert maintenance.loose_refs(store.git) == 1
    head = store.commit(
        store.head(sid),
        Change(append=[{"role": "user", "content": "later"}]),
        event="turn",
        subject="turn",
    )
    pack_refs(store.git)
    assert store.head(sid).commit == head.commit
    assert store.ids()[sid] == head.commit
    store.close()


def test_delete_leaves_packed_refs_first(home):
    heads = _make_store(home, 2)
    store = SessionStore(home, background_maintenance=False)
    pack_refs(store.git)
    sid, commit = next(iter(heads.items()))
    with store.git.ref_locked(ref_name(sid)):
        assert not delete_ref(store.git.path, ref_name(sid), b"0" * 40)  # wrong old value
        assert delete_ref(store.git.path, ref_name(sid), commit)
    assert ref_name(sid) not in read_packed(home / "store.git" / "packed-refs")
    assert sid not in store.ids()
    store.close()


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
def test_objects_reach_the_disk_before_the_ref_that_names_them(home):
    """Durability: every object file of a commit is fsynced before the branch moves."""
    heads = _make_store(home, 1)
    sid = next(iter(heads))
    trace = home.parent / "trace.txt"
    env = {**os.environ, "GITSESSIONS_HOME": str(home)}
    done = subprocess.run(
        [
            "strace", "-f", "-qq", "-o", str(trace), "-e", "trace=fsync,fdatasync,rename,openat",
            sys.executable, "-m", "gitsessions", "rename", sid, "durable",
        ],
        capture_output=True, text=True, env=env, cwd=REPO, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = trace.read_text().splitlines()
    ref_moved = next(
        i for i, line in enumerate(lines) if "rename(" in line and f"sessions/{sid}.lock" in line
    )
    object_writes = [
        i for i, line in enumerate(lines) if "openat(" in line and "/objects/" in line and
        "O_CREAT" in line
    ]  # fmt: skip
    fsyncs = [i for i, line in enumerate(lines) if "fsync(" in line]
    assert object_writes, "the commit wrote no loose object?"
    assert all(i < ref_moved for i in object_writes)
    assert len([i for i in fsyncs if i < ref_moved]) >= len(object_writes)


def test_readers_never_see_an_older_head_while_refs_are_packed(home):
    """A writer commits, a packer packs refs over and over, a reader reads the head:
    every read is the head committed before it began, or a newer one."""
    import threading

    heads = _make_store(home, 20)
    sid = next(iter(heads))
    store = SessionStore(home, background_maintenance=False)
    committed: list[bytes] = [heads[sid]]
    stop = threading.Event()
    reads: list[tuple[int, bytes]] = []

    def write() -> None:
        writer = SessionStore(home, background_maintenance=False)
        head = writer.head(sid)
        for n in range(60):
            msg = {"role": "user", "content": f"w{n}"}
            head = writer.commit(head, Change(append=[msg]), event="turn", subject="turn")
            committed.append(head.commit)
        writer.close()
        stop.set()

    def pack() -> None:
        packer = SessionStore(home, background_maintenance=False)
        while not stop.is_set():
            pack_refs(packer.git)
        packer.close()

    def read() -> None:
        reader = SessionStore(home, background_maintenance=False)
        while not stop.is_set():
            known = len(committed)  # the newest head acknowledged before this read
            reads.append((known, reader.ids()[sid]))
        reader.close()

    threads = [threading.Thread(target=f) for f in (write, pack, read)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    # a read may see a head committed after it began (not yet acknowledged), never older
    stale = [(k, seen) for k, seen in reads if seen not in committed[k - 1 :]]
    assert reads and not stale, stale[:3]
    assert store.head(sid).commit == committed[-1]
    store.close()


def _line_by_line(data: bytes) -> dict[bytes, bytes] | int:
    """packed-refs read as git's format says, a line at a time: the refs, or the number
    of the first line that is not one."""
    refs: dict[bytes, bytes] = {}
    for number, line in enumerate(data.splitlines(), 1):
        if not line or line[:1] in (b"#", b"^"):
            continue
        sha, sep, name = line.partition(b" ")
        if not sep or len(sha) != 40 or sha.strip(b"0123456789abcdef") or name[:5] != b"refs/":
            return number
        refs[name] = sha
    return refs


def test_packed_refs_are_read_whole_as_line_by_line(tmp_path: Path) -> None:
    """`read_packed` reads a healthy file in two scans: the same refs, in the same order,
    as a reading line by line, and the same bad line named in any other file."""
    a, b, c = (bytes([ch]) * 40 for ch in b"abc")
    good = [
        b"# pack-refs with: sorted \n" + a + b" refs/heads/sessions/x\n^" + b + b"\n",
        a + b" refs/a\n\n" + b + b" refs/b with space\n" + c + b" refs/a",  # no final newline
        a + b" refs/a\r\n" + b + b" refs/b\r" + c + b" refs/c\n",  # other line ends
        a + b" refs/odd\x0bname\x85\n",
        b"",
        b"\n^" + a + b"\n" + b + b" refs/b\n\n",  # the first line empty, then a peel
        b"^" + a + b"\n" + b + b" refs/b",
    ]
    bad = [
        a + b"  refs/two-spaces\n",
        a + b"a refs/long\n",
        a.upper() + b" refs/upper\n",
        a + b" ref/x\n",
        a + b" refs/a\n   \n",
        a + b" refs/a\n" + a + b"\n",
        a + b" refs/a\r\ngarbage\r\n",
        b"garbage",
    ]
    for n, data in enumerate(good + bad):
        path = tmp_path / f"packed-refs-{n}"
        path.write_bytes(data)
        expected = _line_by_line(data)
        if isinstance(expected, int):
            with pytest.raises(StoreCorrupt, match=f"line {expected} is not a ref line"):
                read_packed(path)
        else:
            found = read_packed(path)
            assert list(found.items()) == list(expected.items()) and data in good
    assert read_packed(tmp_path / "packed-refs-1") == {b"refs/a": c, b"refs/b with space": b}
    # read in two scans unless a name comes twice or a line ends otherwise than in `\n`
    fast = [_well_formed(data) for data in good]
    assert [found is not None for found in fast] == [True, False, False, True, True, True, True]
    assert all(
        found == _line_by_line(data) for found, data in zip(fast, good, strict=True) if found
    )
    assert all(_well_formed(data) is None for data in bad)
