"""Pack records read from their headers alone: the store's one parser of a record header,
and the check every packed object passes before dulwich inflates it (dulwich bounds
neither a record's declared size, nor a delta's declared result, nor a chain's length).

Invariants:
- An object passes only if every record and delta result of its chain declares at most
  `MAX_OBJECT_BYTES` (the chain in all too), the chain holds at most `MAX_CHAIN` deltas,
  no record twice, every reference delta's base in the same pack; so dulwich's read of
  it holds a few times `MAX_OBJECT_BYTES` at most and ends. Anything else, or a header
  past the pack's end, is `DamagedObject` (one line naming `gitsessions doctor`).
- Nothing is inflated past `HEAD_BYTES` here (doctor's `check_streams` inflates bounded
  to the declared size); each record is checked once per opened store (`Checked`).
- The store writes no object over `MAX_OBJECT_BYTES`, so the bound hides nothing it wrote.
"""

import contextlib
import mmap
import zlib
from collections.abc import Iterator

from dulwich.objects import RawObjectID
from dulwich.pack import FilePackIndex, Pack

from gitsessions.store.errors import StoreCorrupt

OFS_DELTA, REF_DELTA = 6, 7
WHOLE = (1, 2, 3, 4)  # commit, tree, blob, tag
MAX_OBJECT_BYTES = 64 << 20  # the largest object (or delta chain) the store reads
MAX_CHAIN = 1000  # deltas in one chain (git's pack.depth is 50; ours is 100)
HEAD_BYTES = 20  # a delta's two sizes fit in this many inflated bytes
PIECE = 1 << 16  # bytes `inflates_to` takes from zlib at a time
FED = 1 << 12  # bytes of a pack `inflates_to` feeds zlib at a time (most records are small)
_VARINT_BYTES = 10  # a size or offset longer than this is damage, not a number


class DamagedObject(StoreCorrupt):
    """A packed object that dulwich must not be asked to read."""

    def __init__(self, sha: bytes, why: str) -> None:
        self.sha, self.why = sha, why
        super().__init__(
            f"object {sha.decode()[:12]} cannot be read ({why}); run `gitsessions doctor`"
        )


def pack_base(pack: Pack) -> str:
    """`.../pack-<id>`: the path of a pack's files without the suffix, from its index
    (a pack read from disk always has a file index)."""
    index = pack.index
    assert isinstance(index, FilePackIndex)
    return index.path[: -len(".idx")]


def map_pack(pack: Pack) -> mmap.mmap:
    """The pack's data file mapped read-only (found beside its index: `pack-<id>.pack`);
    the caller closes it. `OSError` when it is gone or empty."""
    with open(pack_base(pack) + ".pack", "rb") as data:
        return mmap.mmap(data.fileno(), 0, access=mmap.ACCESS_READ)


@contextlib.contextmanager
def mapped(pack: Pack) -> Iterator[mmap.mmap]:
    """`map_pack` for the length of a block."""
    contents = map_pack(pack)
    try:
        yield contents
    finally:
        contents.close()


def record_header(buf: mmap.mmap | bytes, at: int) -> tuple[int, int, int, int | bytes | None]:
    """`(type, declared size, payload offset, delta base)` of the record at `at`; the
    base is the distance back to it (an offset delta), its binary id (a reference delta)
    or None. `ValueError` for a header that is cut short or absurdly long."""
    try:
        byte = buf[at]
        kind, size, shift = (byte >> 4) & 7, byte & 15, 4
        at += 1
        while byte & 0x80:
            if shift > 4 + 7 * _VARINT_BYTES:
                raise ValueError("a record header that never ends")
            byte = buf[at]
            size |= (byte & 0x7F) << shift
            shift += 7
            at += 1
        base: int | bytes | None = None
        if kind == OFS_DELTA:
            byte = buf[at]
            base = byte & 0x7F
            at += 1
            for _ in range(_VARINT_BYTES):
                if not byte & 0x80:
                    break
                byte = buf[at]
                base = ((base + 1) << 7) | (byte & 0x7F)
                at += 1
            else:
                raise ValueError("a delta offset that never ends")
        elif kind == REF_DELTA:
            base = bytes(buf[at : at + 20])
            if len(base) != 20:
                raise IndexError
            at += 20
    except IndexError:
        raise ValueError("a record header cut short by the end of the pack") from None
    return kind, size, at, base


def delta_sizes(buf: mmap.mmap | bytes, at: int) -> tuple[int, int]:
    """`(base size, result size)` a delta whose zlib data starts at `at` declares."""
    inflate = zlib.decompressobj()
    head = b""
    fed = at
    while len(head) < HEAD_BYTES and not inflate.eof and fed < at + 4096:
        piece = buf[fed : fed + 256]
        if not piece:
            break
        fed += len(piece)
        head += inflate.decompress(inflate.unconsumed_tail + piece, HEAD_BYTES - len(head))
    sizes: list[int] = []
    value = shift = 0
    for byte in head:
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            sizes.append(value)
            if len(sizes) == 2:
                return sizes[0], sizes[1]
            value = shift = 0
    raise ValueError("a delta whose sizes cannot be read")


def inflates_to(buf: mmap.mmap | bytes, at: int, size: int) -> None:
    """`ValueError` unless the zlib stream starting at `at` inflates to exactly `size`
    bytes and ends there: a piece at a time, at most `size + 1` bytes inflated, none kept
    (a stream inflating far past its header's size, a zlib bomb, costs its size only)."""
    inflate = zlib.decompressobj()
    made = 0
    pending = b""
    fed = at
    while not inflate.eof:
        if not pending:
            pending = buf[fed : fed + FED]
            fed += len(pending)
            if not pending:
                raise ValueError("its zlib stream is cut short by the end of the pack")
        made += len(inflate.decompress(pending, min(PIECE, size + 1 - made)))
        pending = inflate.unconsumed_tail
        if made > size:
            raise ValueError(f"its zlib stream inflates past the {size} bytes its header declares")
    if made != size:
        raise ValueError(f"its zlib stream inflates to {made} bytes, not the {size} declared")


def check_loose(path: str, sha: bytes) -> None:
    """Refuse (`DamagedObject`) the loose object file at `path` when its header (`type
    size\\0`, the first bytes inflated) declares more than `MAX_OBJECT_BYTES` or cannot
    be read, or when its zlib stream does not inflate to the size the header declares
    (`inflates_to`, bounded: a small header over a stream of gigabytes): dulwich
    allocates what the header declares, and inflates the whole stream. A missing file
    passes (dulwich says what is missing)."""
    try:
        with open(path, "rb") as file:
            start = file.read(512)
            if not start:
                raise DamagedObject(sha, "a loose object whose header cannot be read")
            contents = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
    except FileNotFoundError:
        return
    with contextlib.closing(contents):
        try:
            head = zlib.decompressobj().decompress(start, 32)
        except zlib.error as error:
            raise DamagedObject(sha, f"a loose object that does not inflate ({error})") from None
        kind, space, rest = head.partition(b" ")
        size, nul, _ = rest.partition(b"\0")
        if not space or not nul or not size.isdigit() or len(size) > 20:
            raise DamagedObject(sha, "a loose object whose header cannot be read")
        shown = kind.decode("ascii", "replace")
        if int(size) > MAX_OBJECT_BYTES:
            raise DamagedObject(sha, f"a loose {shown} declares {int(size)} bytes")
        header = len(kind) + len(size) + 2
        try:
            inflates_to(contents, 0, header + int(size))
        except (ValueError, zlib.error):
            why = f"a loose {shown} whose zlib stream does not inflate to the {int(size)} bytes"
            raise DamagedObject(sha, f"{why} its header declares") from None


Checked = dict[int, tuple[int, int]]  # record offset -> (deltas, bytes) of its chain


def _base_offset(pack: Pack, sha: bytes, offset: int, kind: int, base: int | bytes | None) -> int:
    """The offset of the record a delta at `offset` is based on (`DamagedObject` for a
    reference delta whose base is not in `pack`, or a record of an unknown type)."""
    if kind == OFS_DELTA:
        assert isinstance(base, int)
        return offset - base
    if kind == REF_DELTA:
        assert isinstance(base, bytes)
        try:
            return pack.index.object_offset(RawObjectID(base))
        except KeyError:
            why = f"its delta base {base.hex()[:12]} is not in its pack"
            raise DamagedObject(sha, why) from None
    raise DamagedObject(sha, f"a pack record of unknown type {kind}")


def check_streams(
    pack: Pack, buf: mmap.mmap | bytes, offset: int, sha: bytes, streamed: set[int]
) -> None:
    """Refuse (`DamagedObject`) the object `sha` at `offset` unless each record of its
    chain inflates to exactly the size its header declares (`inflates_to`); for an object
    `check_chain` passed, so every record is inflated bounded. `streamed` holds the
    records of this pack already inflated (and is added to): each is inflated once.
    dulwich stops at the declared size and never looks at the rest: only this finds
    such a record."""
    try:
        while offset not in streamed:
            kind, size, at, base = record_header(buf, offset)
            inflates_to(buf, at, size)
            streamed.add(offset)
            if kind in WHOLE:
                return
            offset = _base_offset(pack, sha, offset, kind, base)
    except (ValueError, zlib.error) as error:
        raise DamagedObject(sha, str(error)) from None


def check_chain(
    pack: Pack, buf: mmap.mmap | bytes, offset: int, sha: bytes, checked: Checked
) -> None:
    """Refuse (`DamagedObject`) the object `sha` at `offset` of `pack` (whose mapped
    contents are `buf`) unless its chain is within the bounds of the invariant.
    `checked` holds what earlier checks of this pack found (and is added to): a chain
    is walked only down to a record already checked."""
    path: list[tuple[int, int, bool]] = []  # (offset, declared size, a delta)
    on_path: set[int] = set()
    deltas = total = 0
    try:
        while True:
            known = checked.get(offset)
            if known is not None:
                deltas, total = known
                break
            if offset in on_path:
                raise DamagedObject(sha, "its delta chain runs in a circle")
            if offset < 12:  # the pack's header
                raise DamagedObject(sha, "its delta base lies outside the pack")
            on_path.add(offset)
            kind, size, at, base = record_header(buf, offset)
            if size > MAX_OBJECT_BYTES:
                raise DamagedObject(sha, f"a pack record declares {size} bytes")
            if kind in WHOLE:
                path.append((offset, size, False))
                break
            following = _base_offset(pack, sha, offset, kind, base)
            _source, result = delta_sizes(buf, at)
            if result > MAX_OBJECT_BYTES:
                raise DamagedObject(sha, f"a delta declares a result of {result} bytes")
            if len(path) >= MAX_CHAIN:
                raise DamagedObject(sha, f"its delta chain is longer than {MAX_CHAIN}")
            path.append((offset, size, True))
            offset = following
    except (ValueError, zlib.error) as error:
        raise DamagedObject(sha, str(error)) from None
    for at, size, delta in reversed(path):  # from the base up to the object asked for
        deltas, total = deltas + delta, total + size
        if deltas > MAX_CHAIN:
            raise DamagedObject(sha, f"its delta chain is longer than {MAX_CHAIN}")
        if total > MAX_OBJECT_BYTES:
            raise DamagedObject(sha, f"its delta chain declares {total} bytes")
        checked[at] = (deltas, total)
