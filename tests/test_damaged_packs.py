"""A damaged pack never hangs or blows up (store/packrecords.py): packs written by hand
(header, records with their type/size varints, offset and reference deltas, zlib data,
a version-2 index) into a real store, so that a session's `session.json` resolves to
the crafted object. `show`, `log`, `info`, `list` and `doctor` run one after another
in a process under a 1 GiB address-space limit that peaks under 200 MB, with no
traceback: the first three say one `error:` line naming the object and `gitsessions
doctor` and exit non-zero; `list` marks the session's row unreadable (naming
`gitsessions doctor`) and lists the rest, as for any damaged session; `doctor` names
the object, its file and the session."""

import hashlib
import json
import os
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from gitsessions.store.errors import StoreCorrupt, StoreError
from gitsessions.store.packrecords import MAX_CHAIN, MAX_OBJECT_BYTES
from gitsessions.store.sessions import Change, SessionStore
from gitsessions.values.clock import now_iso
from gitsessions.values.ids import new_id
from gitsessions.values.records import new_header
from tests.conftest import REPO, loosen

OFS_DELTA, REF_DELTA, BLOB = 6, 7, 3
LIMIT = 1 << 30  # address space of the commands' process: Python runs, a blow-up fails fast
PEAK = 200 << 20

RUN = """
import gc, json, resource, sys, traceback
resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))
from typer.testing import CliRunner
from gitsessions.cli.app import main
done = []
for args in json.loads(sys.argv[1]):
    sys.argv = ["gitsessions", *args]
    with CliRunner().isolation() as (out, err, _):
        try:
            main()
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else int(stop.code is not None)
        except BaseException:  # as the process would: a traceback
            traceback.print_exc()
            code = 1
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
        said = [out.getvalue().decode(), err.getvalue().decode()]
    gc.unfreeze()  # `cli.lazy.started` freezes what a process keeps for its life
    with open("/proc/self/status") as status:  # this process's own peak (ru_maxrss
        # keeps the parent's from before exec: a pytest of the whole suite is 300 MB)
        peak = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) * 1024
    done.append([code, *said, peak])
print(json.dumps(done))
"""


def _size_header(kind: int, size: int) -> bytes:
    byte = (kind << 4) | (size & 15)
    size >>= 4
    out = bytearray()
    while size:
        out.append(byte | 0x80)
        byte = size & 0x7F
        size >>= 7
    out.append(byte)
    return bytes(out)


def _ofs(back: int) -> bytes:
    out = bytearray([back & 0x7F])
    back >>= 7
    while back:
        back -= 1
        out.insert(0, 0x80 | (back & 0x7F))
        back >>= 7
    return bytes(out)


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n >> 7 else 0))
        n >>= 7
        if not n:
            return bytes(out)


# (binary id, type, base: None, the index of an earlier record (OFS), or a binary id
# (REF), payload, declared size or None, zlib data or None)
Record = tuple[bytes, int, "int | bytes | None", bytes, "int | None", "bytes | None"]


def write_pack(pack_dir: Path, records: list[Record]) -> None:
    """A pack of `records` and its version-2 index, written by hand (git's index-pack
    refuses most of these)."""
    data = bytearray(b"PACK" + struct.pack(">II", 2, len(records)))
    entries, offsets = [], []
    for sha, kind, base, payload, declared, compressed in records:
        at = len(data)
        offsets.append(at)
        record = bytearray(_size_header(kind, len(payload) if declared is None else declared))
        if kind == OFS_DELTA:
            assert isinstance(base, int) or base is None
            record += _ofs(0 if base is None else at - offsets[base])
        elif kind == REF_DELTA:
            assert isinstance(base, bytes)
            record += base
        record += zlib.compress(payload) if compressed is None else compressed
        entries.append((sha, at, zlib.crc32(bytes(record))))
        data += record
    checksum = hashlib.sha1(data).digest()
    data += checksum
    entries.sort()
    idx = bytearray(b"\377tOc" + struct.pack(">I", 2))
    total = 0
    for first in range(256):
        total += sum(1 for sha, _at, _crc in entries if sha[0] == first)
        idx += struct.pack(">I", total)
    idx += b"".join(sha for sha, _at, _crc in entries)
    idx += b"".join(struct.pack(">I", crc) for _sha, _at, crc in entries)
    idx += b"".join(struct.pack(">I", at) for _sha, at, _crc in entries)
    idx += checksum
    idx += hashlib.sha1(idx).digest()
    name = pack_dir / f"pack-{checksum.hex()}"
    name.with_suffix(".pack").write_bytes(bytes(data))
    name.with_suffix(".idx").write_bytes(bytes(idx))


def _zeros(prefix: bytes, mib: int) -> bytes:
    """A valid zlib stream of `prefix` then `mib` MiB of zeros, about 1 KB a MiB: one
    MiB compressed once after a full flush (which resets the compressor, so every MiB
    compresses to the same bytes) and repeated, an empty final block, and the Adler-32
    of the whole (zeros leave its low half as it is and add `n * low` to its high half).
    Compressing 1 GiB took seconds of CPU."""
    squeeze = zlib.compressobj(9)
    head = squeeze.compress(prefix) + squeeze.flush(zlib.Z_FULL_FLUSH)
    piece = squeeze.compress(bytes(1 << 20)) + squeeze.flush(zlib.Z_FULL_FLUSH)
    check = zlib.adler32(prefix)
    low, high = check & 0xFFFF, (check >> 16) + (mib << 20) * (check & 0xFFFF)
    return head + piece * mib + b"\x03\x00" + struct.pack(">I", (high % 65521) << 16 | low)


def _bomb() -> bytes:
    """zlib data of 256 MiB of zeros (about 250 KB)."""
    return _zeros(b"", 256)


def crafted(case: str, target: bytes) -> list[list[Record]]:
    """The packs of one case; `target` (binary) is the object the session reads."""
    other = hashlib.sha1(b"another object").digest()
    base = b'{"a": "base"}\n' * 8
    if case == "ref-delta cycle":
        return [[(target, REF_DELTA, other, b"\0\0", None, None),
                 (other, REF_DELTA, target, b"\0\0", None, None)]]  # fmt: skip
    if case == "ref-delta cycle across packs":
        return [[(target, REF_DELTA, other, b"\0\0", None, None)],
                [(other, REF_DELTA, target, b"\0\0", None, None)]]  # fmt: skip
    if case == "offset delta on itself":
        return [[(target, OFS_DELTA, None, b"\0\0", None, None)]]
    if case == "delta claiming 4 GiB":
        delta = _varint(len(base)) + _varint(4 << 30) + b"\x05hello"
        return [[(other, BLOB, None, base, None, None), (target, OFS_DELTA, 0, delta, None, None)]]
    if case == "zlib bomb":
        return [[(target, BLOB, None, b"", 256 << 20, _bomb())]]
    if case in ("loose zlib bomb", "loose stream past its size"):
        return []  # `damaged_store` writes it loose
    if case == "stream past its size":  # the header declares 20 bytes, the stream 256 MiB
        return [[(target, BLOB, None, b"", 20, _bomb())]]
    if case == "stream short of its size":
        return [[(target, BLOB, None, b"", 1000, zlib.compress(b'{"a": 1}'))]]
    raise AssertionError(case)


CASES = [
    "ref-delta cycle",
    "ref-delta cycle across packs",
    "offset delta on itself",
    "delta claiming 4 GiB",
    "zlib bomb",
    "loose zlib bomb",
    "loose stream past its size",
]


def _loose_bomb() -> bytes:
    """A loose blob declaring 1 GiB of zeros (about 1 MB of zlib): dulwich allocates and
    inflates what a loose object's header declares."""
    return _zeros(b"blob %d\0" % (1 << 30), 1 << 10)


def _loose_stream_past_its_size() -> bytes:
    """A loose blob whose header declares 20 bytes over 512 MiB of zeros (about 500 KB
    of zlib): dulwich inflates the whole stream."""
    return _zeros(b"blob 20\0", 1 << 9)


def damaged_store(tmp_path: Path, case: str) -> tuple[Path, str, str]:
    """A real store with one session whose `session.json` is the crafted object:
    `(home, session id, that object's hex id)`."""
    home = tmp_path / "damaged"  # not the test's own home: fsck would fail at its end
    store = SessionStore(home, background_maintenance=False)
    sid = new_id()
    system = {"role": "system", "content": "You are a helpful coding agent."}
    head = store.create(new_header(sid, now_iso(), title="t"), Change(context=[system],
                        append=[system]))  # fmt: skip
    msgs = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]
    head = store.commit(head, Change(context=[system, *msgs], append=msgs), event="turn",
                        subject="turn 1: q")  # fmt: skip
    target = store.git.raw(head.tree)[1]
    at = target.index(b"session.json\0") + len(b"session.json\0")
    sha = target[at : at + 20]
    store.close()
    loosen(home / "store.git")
    objects = home / "store.git" / "objects"
    loose = objects / sha.hex()[:2] / sha.hex()[2:]
    assert loose.exists() and not list((objects / "pack").glob("*.pack"))
    loose.unlink()
    for records in crafted(case, sha):
        write_pack(objects / "pack", records)
    if case == "loose zlib bomb":
        loose.parent.mkdir(exist_ok=True)
        loose.write_bytes(_loose_bomb())
    if case == "loose stream past its size":
        loose.parent.mkdir(exist_ok=True)
        loose.write_bytes(_loose_stream_past_its_size())
    return home, sid, sha.hex()


def run(home: Path, *commands: tuple[str, ...]) -> list[tuple[int, str, str, int]]:
    """Each command of `commands` run by `gitsessions`'s entry point in turn, in one
    process under the address-space limit: (exit code, stdout, stderr, the process's
    peak RSS in bytes so far) each. One process for them all: each command's start-up
    (half a second) was most of these tests' time, and a peak under `PEAK` after all
    of them bounds each."""
    env = {**os.environ, "GITSESSIONS_HOME": str(home)}
    done = subprocess.run(
        [sys.executable, "-c", RUN.format(limit=LIMIT), json.dumps(commands)],
        capture_output=True, text=True, env=env, cwd=REPO, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0 and not done.stderr, done.stderr
    return [(code, out, err, peak) for code, out, err, peak in json.loads(done.stdout)]


@pytest.mark.parametrize("case", CASES)
def test_a_damaged_pack_gives_one_line_and_doctor_names_it(tmp_path, case):
    home, sid, sha = damaged_store(tmp_path, case)
    reads = [("show", sid[:8]), ("log", sid[:8]), ("info", sid[:8])]
    *read, listed, as_json, doctor = run(home, *reads, ("list",), ("list", "--json"), ("doctor",))
    for args, (code, out, err, peak) in zip(reads, read, strict=True):
        assert "Traceback" not in err and "Error" not in err.replace("error:", ""), (args, err)
        errors = [line for line in err.splitlines() if line.startswith("error:")]
        assert len(errors) == 1 and "gitsessions doctor" in errors[0], (args, err)
        assert sha[:12] in errors[0], (args, err)
        assert code != 0, (args, out, err)
        assert peak < PEAK, (args, peak)
    # `list` lists the others, this one's row marked (as any damaged session's)
    code, out, err, peak = listed
    assert code == 0 and "Traceback" not in err and peak < PEAK, err
    assert out.startswith(sid) and "(unreadable: run gitsessions doctor)" in out, out
    code, out, err, peak = as_json
    assert sha[:12] in out and "gitsessions doctor" in out and peak < PEAK, out
    code, out, err, peak = doctor
    assert code != 0 and "Traceback" not in err, err
    assert peak < PEAK, peak
    broken = [line for line in out.splitlines() if sha[:12] in line]
    assert broken and sid[:8] in broken[0], out
    assert "session.json" in broken[0], out


def test_the_crafted_zeros_are_one_valid_zlib_stream() -> None:
    """`_zeros` (the bombs' data) inflates to its prefix and zeros, checksum and end
    included (zlib checks the Adler-32 at the end of the stream)."""
    prefix = b"blob 20\0"
    inflate = zlib.decompressobj()
    data = inflate.decompress(_zeros(prefix, 3)) + inflate.flush()
    assert inflate.eof and not inflate.unused_data
    assert data == prefix + bytes(3 << 20)
    assert len(_zeros(prefix, 1024)) < 1100 << 10  # about 1 MB: a bomb


def test_the_store_writes_no_object_it_would_not_read_back(store):
    from dulwich.objects import Blob

    blob = Blob.from_string(b"x" * (MAX_OBJECT_BYTES + 1))
    with pytest.raises(StoreError, match="64 MiB"):
        store.git.add_objects([blob])
    assert not store.git.has(blob.id)


def test_a_healthy_pack_resolves_through_the_check(tmp_path):
    """The crafted writer makes readable packs too: a blob and an offset delta on it
    (so a test above fails for the damage, not for the writer)."""
    home, _sid, sha = damaged_store(tmp_path, "offset delta on itself")
    objects = home / "store.git" / "objects" / "pack"
    for file in objects.iterdir():
        file.unlink()
    store = SessionStore(home, background_maintenance=False)
    header = b'{"format": 2}'  # any content: only `raw` is asked here
    base = b"0123456789" * 4
    delta = _varint(len(base)) + _varint(len(header)) + bytes([len(header)]) + header
    write_pack(objects, [(hashlib.sha1(b"b").digest(), BLOB, None, base, None, None),
                         (bytes.fromhex(sha), OFS_DELTA, 0, delta, None, None)])  # fmt: skip
    store.git.rescan()
    assert store.git.raw(sha.encode()) == (BLOB, header)
    store.close()


def test_a_chain_longer_than_the_bound_is_refused_and_one_within_it_reads(tmp_path):
    """1,001 offset deltas on one blob: refused by the chain's length, from the headers;
    the 1,000th of them reads (the bound is the one docs/reliability.md names)."""
    home, _sid, _sha = damaged_store(tmp_path, "offset delta on itself")
    objects = home / "store.git" / "objects" / "pack"
    for file in objects.iterdir():
        file.unlink()
    content = b"the same forty bytes, again and again.\n"
    delta = _varint(len(content)) * 2 + bytes([len(content)]) + content
    ids = [hashlib.sha1(b"%d" % n).digest() for n in range(MAX_CHAIN + 2)]
    records: list[Record] = [(ids[0], BLOB, None, content, None, None)]
    records += [(ids[n], OFS_DELTA, n - 1, delta, None, None) for n in range(1, len(ids))]
    write_pack(objects, records)
    store = SessionStore(home, background_maintenance=False)
    store.git.rescan()
    assert store.git.raw(ids[MAX_CHAIN].hex().encode()) == (BLOB, content)
    with pytest.raises(StoreCorrupt, match=r"longer than 1000.*gitsessions doctor"):
        store.git.raw(ids[MAX_CHAIN + 1].hex().encode())
    store.close()


@pytest.mark.parametrize("case", ["stream past its size", "stream short of its size"])
def test_doctor_names_an_object_whose_stream_does_not_inflate_to_its_size(tmp_path, case):
    """Issue 43, item 7: a record whose zlib stream inflates far past the size its header
    declares (dulwich stops at that size and never looks further), or short of it, passed
    the header checks: `doctor` said nothing wrong. It inflates each record bounded and
    names the object, its path and the session that reaches it."""
    home, sid, sha = damaged_store(tmp_path, case)
    [(code, out, err, peak)] = run(home, ("doctor",))
    assert code != 0 and "Traceback" not in err, (out, err)
    assert peak < PEAK, peak
    broken = [line for line in out.splitlines() if sha[:12] in line]
    assert broken and sid in broken[0] and "session.json" in broken[0], out
    assert "its zlib stream inflates" in broken[0], out
