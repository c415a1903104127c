"""Git objects read from the files of `store.git` without dulwich: what `show`, `log`
and `info` need (dulwich's repository costs a reading command a quarter of its start).

Objects come back raw (`(type number, content)`) and commits and trees parse into the
small read-only values below, which the store's readers use whatever reads the bytes
(`GitStore.raw`, dulwich, for a writer; `ObjectReader` here for a reader).

Invariants:
- Read-only: nothing here writes, locks or deletes.
- An object that exists when a read starts is found while the store is packed or
  repacked meanwhile: the packs (their `.idx`) are listed first, the loose file is tried
  next, and the pack directory is listed again when both missed. Our maintenance (as
  git's) renames a new pack into place before it deletes what the pack replaces (loose
  objects, old packs), so one of the three looks finds it. A pack is opened (its index
  and its data, whose checksums must agree) in one go and kept open: deleted after that,
  it still reads; deleted or replaced between the listing and the opening, it is
  dropped and the directory listed again.
- An object gone for good (purged with a deleted session) raises `ObjectMissing`; one
  that cannot be read raises `StoreCorrupt`, with the messages `GitStore` gives.
- Objects are not hashed on read (neither dulwich nor `git cat-file` does).
"""

import mmap
import os
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitsessions.store.errors import ObjectMissing, StoreCorrupt
from gitsessions.store.refpack import current
from gitsessions.store.refs import session_refs

if TYPE_CHECKING:  # a type only: a Protocol class costs start-up time
    from typing import Protocol

    class RawSource(Protocol):
        def raw(self, sha: bytes) -> tuple[int, bytes]: ...


COMMIT, TREE, BLOB, TAG = 1, 2, 3, 4
_TYPES = {b"commit": COMMIT, b"tree": TREE, b"blob": BLOB, b"tag": TAG}
_OFS_DELTA, _REF_DELTA = 6, 7
_IDX_MAGIC = b"\377tOc"
_PIECE = 1 << 16  # compressed bytes fed to zlib at a time
_CACHE_BYTES = 16 << 20  # resolved delta bases kept per reader
_RESCANS = 5  # pack directory listings one read may take while a repack runs


class TreeItem:
    """One entry of a tree (what dulwich's `TreeEntry` offers: path, mode, hex sha)."""

    __slots__ = ("mode", "path", "sha")

    def __init__(self, path: bytes, mode: int, sha: bytes) -> None:
        self.path, self.mode, self.sha = path, mode, sha


class ReadTree:
    """A tree's entries: `name in tree`, `tree[name]` -> `(mode, hex sha)`, `items()`."""

    __slots__ = ("_entries",)

    def __init__(self, entries: dict[bytes, tuple[int, bytes]]) -> None:
        self._entries = entries

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __getitem__(self, name: bytes) -> tuple[int, bytes]:
        return self._entries[name]

    def items(self) -> list[TreeItem]:
        return [TreeItem(name, mode, sha) for name, (mode, sha) in self._entries.items()]


class ReadCommit:
    """What the store reads of a commit (hex ids; the message as stored)."""

    __slots__ = ("commit_time", "message", "parents", "tree")

    def __init__(self, tree: bytes, parents: list[bytes], message: bytes, when: int) -> None:
        self.tree, self.parents, self.message, self.commit_time = tree, parents, message, when


def parse_tree(raw: bytes) -> ReadTree:
    entries: dict[bytes, tuple[int, bytes]] = {}
    at, end = 0, len(raw)
    try:
        while at < end:
            space = raw.index(b" ", at)
            nul = raw.index(b"\0", space)
            if nul + 21 > end:
                raise ValueError("a tree entry is cut short")
            entries[raw[space + 1 : nul]] = (
                int(raw[at:space], 8),
                raw[nul + 1 : nul + 21].hex().encode(),
            )
            at = nul + 21
    except ValueError as error:
        raise StoreCorrupt(f"a tree cannot be read ({error}); run `gitsessions doctor`") from None
    return ReadTree(entries)


def parse_commit(raw: bytes) -> ReadCommit:
    head, _sep, message = raw.partition(b"\n\n")
    tree = b""
    parents: list[bytes] = []
    when = 0
    for line in head.split(b"\n"):
        if line.startswith(b"tree "):
            tree = line[5:]
        elif line.startswith(b"parent "):
            parents.append(line[7:])
        elif line.startswith(b"committer "):
            fields = line.rsplit(b" ", 2)
            when = int(fields[1]) if len(fields) == 3 and fields[1].isdigit() else 0
    if len(tree) != 40:
        raise StoreCorrupt("a commit names no tree; run `gitsessions doctor`")
    return ReadCommit(tree, parents, message, when)


def read_tree(source: "RawSource", sha: bytes) -> ReadTree:
    kind, raw = source.raw(sha)
    if kind != TREE:
        raise StoreCorrupt(f"object {sha.decode()} is not a tree")
    return parse_tree(raw)


def read_blob(source: "RawSource", sha: bytes) -> bytes:
    kind, raw = source.raw(sha)
    if kind != BLOB:
        raise StoreCorrupt(f"object {sha.decode()} is not a blob")
    return raw


def apply_delta(base: bytes, delta: bytes) -> bytes:
    """`delta` applied to `base`. The first `PYTHON_DELTA_BYTES` of deltas a process
    applies go through `apply_delta_py` (a short session's few small deltas cost less
    than an import); after that, dulwich's compiled `apply_delta` when it is built (tens
    of times faster on a line-based delta's many copies; its module imports nothing else
    of dulwich)."""
    _python_left[0] -= len(delta)
    compiled = _compiled() if _python_left[0] < 0 else None
    if compiled is None:
        return apply_delta_py(base, delta)
    try:
        out = compiled(base, delta)
    except Exception as error:  # dulwich's ApplyDeltaError: a damaged delta
        raise ValueError(f"a delta cannot be applied ({error})") from None
    return out if isinstance(out, bytes) else b"".join(out)


PYTHON_DELTA_BYTES = 16 << 10  # about a millisecond in Python: what the import costs
_python_left = [PYTHON_DELTA_BYTES]
_COMPILED: list[Callable[[bytes, bytes], Any] | None] = []


def _compiled() -> Callable[[bytes, bytes], Any] | None:
    if not _COMPILED:
        try:
            from dulwich._pack import apply_delta as compiled  # tests/test_objectread.py
        except ImportError:  # dulwich built without its extensions
            compiled = None
        _COMPILED.append(compiled)
    return _COMPILED[0]


def apply_delta_py(base: bytes, delta: bytes) -> bytes:
    """git's delta format: the sizes, then copies from `base` and inserted bytes."""

    def size(at: int) -> tuple[int, int]:
        value = shift = 0
        while True:
            byte = delta[at]
            at += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return value, at

    source, at = size(0)
    target, at = size(at)
    if source != len(base):
        raise ValueError("a delta's base has the wrong size")
    parts: list[bytes] = []
    append = parts.append
    end = len(delta)
    while at < end:
        op = delta[at]
        at += 1
        if op & 0x80:  # a copy: the bytes of offset and length that are present
            offset = length = 0
            if op & 0x01:
                offset = delta[at]
                at += 1
            if op & 0x02:
                offset |= delta[at] << 8
                at += 1
            if op & 0x04:
                offset |= delta[at] << 16
                at += 1
            if op & 0x08:
                offset |= delta[at] << 24
                at += 1
            if op & 0x10:
                length = delta[at]
                at += 1
            if op & 0x20:
                length |= delta[at] << 8
                at += 1
            if op & 0x40:
                length |= delta[at] << 16
                at += 1
            append(base[offset : offset + (length or 0x10000)])
        elif op:
            append(delta[at : at + op])
            at += op
        else:
            raise ValueError("a delta holds an empty instruction")
    out = b"".join(parts)
    if len(out) != target:
        raise ValueError("a delta gives the wrong size")
    return out


def _u32(buffer: mmap.mmap, at: int) -> int:
    return int.from_bytes(buffer[at : at + 4], "big")


class _Mismatch(FileNotFoundError):
    """A pack's checksum is not the one its index names."""


class _Pack:
    """One pack and its index (version 1 or 2), both mapped while the reader lives."""

    def __init__(self, idx_path: Path) -> None:
        with open(idx_path, "rb") as idx_file, open(idx_path.with_suffix(".pack"), "rb") as data:
            self.idx = mmap.mmap(idx_file.fileno(), 0, access=mmap.ACCESS_READ)
            try:
                self.data = mmap.mmap(data.fileno(), 0, access=mmap.ACCESS_READ)
            except BaseException:  # an empty pack, say: nothing stays mapped
                self.idx.close()
                raise
        try:
            self._check(idx_path)
        except BaseException:
            self.close()
            raise

    def _check(self, idx_path: Path) -> None:
        if self.idx[:4] == _IDX_MAGIC:
            if _u32(self.idx, 4) != 2:
                raise ValueError(f"{idx_path.name}: an index version this build cannot read")
            self.fanout = 8
            self.count = _u32(self.idx, 8 + 255 * 4)
        else:
            self.fanout = 0
            self.count = _u32(self.idx, 255 * 4)
        if self.data[:4] != b"PACK":
            raise ValueError(f"{idx_path.name}: not a pack")
        if self.data[-20:] != self.idx[-40:-20]:  # the pack's checksum, as its index names it
            # a pack replaced between the two opens (list again), or damaged
            raise _Mismatch(f"{idx_path.name} does not index that pack")

    def close(self) -> None:
        self.idx.close()
        self.data.close()

    def offset(self, binsha: bytes) -> int | None:
        """Where the object starts in the pack, None when this pack lacks it."""
        idx, fanout = self.idx, self.fanout
        first = binsha[0]
        low = _u32(idx, fanout + (first - 1) * 4) if first else 0
        high = _u32(idx, fanout + first * 4)
        if fanout:  # version 2: the names, then their CRCs, then the offsets
            names = fanout + 1024
            while low < high:
                mid = (low + high) // 2
                at = names + mid * 20
                found = idx[at : at + 20]
                if found == binsha:
                    offsets = names + self.count * 24
                    value = _u32(idx, offsets + mid * 4)
                    if value & 0x80000000:  # in the table of large offsets
                        large = offsets + self.count * 4 + (value & 0x7FFFFFFF) * 8
                        value = int.from_bytes(idx[large : large + 8], "big")
                    return int(value)
                if found < binsha:
                    low = mid + 1
                else:
                    high = mid
            return None
        while low < high:  # version 1: (offset, name) pairs
            mid = (low + high) // 2
            at = 1024 + mid * 24
            found = idx[at + 4 : at + 24]
            if found == binsha:
                return _u32(idx, at)
            if found < binsha:
                low = mid + 1
            else:
                high = mid
        return None

    def record(self, offset: int) -> tuple[int, int | bytes, bytes]:
        """`(type, base, data)` of the record at `offset`: `base` is the base's offset
        (an offset delta), its binary id (a reference delta) or 0 (a whole object)."""
        data = self.data
        byte = data[offset]
        kind = (byte >> 4) & 7
        at = offset + 1
        while byte & 0x80:
            byte = data[at]
            at += 1
        base: int | bytes = 0
        if kind == _OFS_DELTA:
            byte = data[at]
            at += 1
            back = byte & 0x7F
            while byte & 0x80:
                byte = data[at]
                at += 1
                back = ((back + 1) << 7) | (byte & 0x7F)
            base = offset - back
        elif kind == _REF_DELTA:
            base = data[at : at + 20]
            at += 20
        elif kind not in (COMMIT, TREE, BLOB, TAG):
            raise ValueError(f"a pack record of unknown type {kind}")
        view = memoryview(data)
        inflate = zlib.decompressobj()
        parts = []
        try:
            while not inflate.eof:
                piece = view[at : at + _PIECE]
                if not piece:
                    raise ValueError("a pack record is cut short")
                parts.append(inflate.decompress(piece))
                at += len(piece)
        finally:
            view.release()
        return kind, base, b"".join(parts)


class ObjectReader:
    """The objects and refs of `store.git`, read-only (the part of `GitStore` a reader
    uses: `raw`, `ref`, `session_refs`)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._packs: dict[str, _Pack | None] | None = None  # name -> opened (None: not yet)
        self._cache: dict[tuple[str, int], tuple[int, bytes]] = {}
        self._cached_bytes = 0
        self._mismatched: set[str] = set()  # packs that did not match their index

    def close(self) -> None:
        for pack in (self._packs or {}).values():
            if pack is not None:
                pack.close()
        self._packs = None

    def ref(self, name: bytes) -> bytes | None:
        return current(self.path, name)

    def session_refs(self) -> dict[bytes, bytes]:
        return session_refs(self.path)

    def raw(self, sha: bytes) -> tuple[int, bytes]:
        """`(type number, content)` of an object; `ObjectMissing` if it is gone,
        `StoreCorrupt` if it cannot be read."""
        try:
            binsha = bytes.fromhex(sha.decode("ascii"))
        except (UnicodeDecodeError, ValueError):
            binsha = b""
        if len(binsha) != 20:
            raise StoreCorrupt(f"{sha!r} is not an object id")
        try:
            if self._packs is None:
                self._rescan()
            for _attempt in range(_RESCANS):
                found = self._packed(binsha)
                if found is None:
                    found = self._loose(sha)
                if found is not None:
                    return found
                if not self._rescan():
                    break
        except (zlib.error, ValueError, IndexError, OverflowError) as error:
            raise StoreCorrupt(
                f"object {sha.decode()[:12]} in {self.path} cannot be read "
                f"({type(error).__name__}: {error}); run `gitsessions doctor`"
            ) from None
        pack_dir = self.path / "objects" / "pack"
        damaged = sorted(n for n in self._mismatched if (pack_dir / f"{n}.idx").exists())
        if damaged:  # still there, still not matching its index: not a repack's race
            raise StoreCorrupt(
                f"object {sha.decode()[:12]} cannot be read: {damaged[0]}.pack does not "
                "match its index (damaged or cut short); run `gitsessions doctor`"
            )
        raise ObjectMissing(
            f"object {sha.decode()[:12]} is gone from the store (was the "
            "session deleted meanwhile?)"
        )

    def _rescan(self) -> bool:
        """List the pack directory again; True when it changed."""
        try:
            names = {
                n[:-4] for n in os.listdir(self.path / "objects" / "pack") if n.endswith(".idx")
            }
        except FileNotFoundError:
            names = set()
        old = self._packs or {}
        if self._packs is not None and names == set(old):
            return False
        for name, pack in old.items():
            if name not in names and pack is not None:
                pack.close()
        self._packs = {name: old.get(name) for name in sorted(names)}
        return True

    def _packed(self, binsha: bytes) -> tuple[int, bytes] | None:
        assert self._packs is not None
        for name in list(self._packs):
            if name not in self._packs:  # dropped by the listing of a nested read
                continue
            pack = self._packs[name]
            if pack is None:
                try:
                    pack = _Pack(self.path / "objects" / "pack" / f"{name}.idx")
                except FileNotFoundError as error:  # removed since the listing: list again
                    if isinstance(error, _Mismatch):
                        self._mismatched.add(name)
                    self._packs.pop(name, None)
                    continue
                self._packs[name] = pack
            offset = pack.offset(binsha)
            if offset is not None:
                return self._resolve(name, pack, offset)
        return None

    def _resolve(self, name: str, pack: _Pack, offset: int) -> tuple[int, bytes]:
        """The object at `offset`, its delta chain followed down to a whole object."""
        deltas: list[bytes] = []
        chain: list[tuple[str, int]] = []
        while True:
            cached = self._cache.get((name, offset))
            if cached is not None:
                kind, data = cached
                break
            kind, base, data = pack.record(offset)
            if kind == _OFS_DELTA:
                assert isinstance(base, int)
                deltas.append(data)
                chain.append((name, offset))
                offset = base
            elif kind == _REF_DELTA:
                assert isinstance(base, bytes)
                deltas.append(data)
                chain.append((name, offset))
                kind, data = self.raw(base.hex().encode())
                break
            else:
                self._keep((name, offset), kind, data)
                break
        for delta, where in zip(reversed(deltas), reversed(chain), strict=True):
            data = apply_delta(data, delta)
            self._keep(where, kind, data)
        return kind, data

    def _keep(self, where: tuple[str, int], kind: int, data: bytes) -> None:
        if self._cached_bytes + len(data) > _CACHE_BYTES:
            self._cache.clear()
            self._cached_bytes = 0
        self._cache[where] = (kind, data)
        self._cached_bytes += len(data)

    def _loose(self, sha: bytes) -> tuple[int, bytes] | None:
        hexsha = sha.decode()
        try:
            with open(self.path / "objects" / hexsha[:2] / hexsha[2:], "rb") as file:
                compressed = file.read()
        except FileNotFoundError:
            return None
        data = zlib.decompress(compressed)
        header, nul, content = data.partition(b"\0")
        kind, _space, size = header.partition(b" ")
        if not nul or kind not in _TYPES or not size.isdigit() or int(size) != len(content):
            raise ValueError("a loose object with a bad header")
        return _TYPES[kind], content
