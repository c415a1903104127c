"""A unit-oriented git delta encoder for the store's JSON files and trees.

Every blob the store writes is text made of lines (canonical JSON, JSONL), and versions
of one file differ by whole lines: the header's counts change, the working context
grows. Versions of one tree differ by whole entries: a transcript directory gains a
chunk. So a delta that copies whole runs of units (lines, or tree entries) from the
base and inserts the rest is both small and cheap to compute (a dict lookup per unit),
where a general byte-level encoder costs tens of milliseconds per object. The output is
git's delta format (base size, target size, copy and insert instructions), readable by
git and dulwich.
"""

MIN_COPY_LINE = 8  # a shorter line is inserted, unless it continues a copy
MAX_COPY = 0xFFFFFF  # largest length one copy instruction can carry
MAX_INSERT = 0x7F


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _copy(offset: int, length: int) -> bytes:
    op = 0x80
    args = bytearray()
    for i in range(4):
        byte = (offset >> (8 * i)) & 0xFF
        if byte:
            op |= 1 << i
            args.append(byte)
    for i in range(3):
        byte = (length >> (8 * i)) & 0xFF
        if byte:
            op |= 1 << (4 + i)
            args.append(byte)
    return bytes([op]) + bytes(args)


def _emit_insert(out: bytearray, pending: bytearray) -> None:
    """Insert instructions for `pending` (at most MAX_INSERT bytes each); empties it."""
    for start in range(0, len(pending), MAX_INSERT):
        chunk = pending[start : start + MAX_INSERT]
        out.append(len(chunk))
        out.extend(chunk)
    pending.clear()


def _emit_copy(out: bytearray, start: int, length: int) -> None:
    """Copy instructions for `length` bytes of the base from `start`."""
    while length:
        size = min(MAX_COPY, length)
        out.extend(_copy(start, size))
        start, length = start + size, length - size


def _lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


def tree_entries(data: bytes) -> list[bytes]:
    """A raw tree cut into its entries (`mode name\0` and a 20-byte id each)."""
    out = []
    at = 0
    while at < len(data):
        end = data.index(b"\0", at) + 21
        out.append(data[at:end])
        at = end
    return out


def create_delta(base: bytes, target: bytes, tree: bool = False) -> bytes:
    """A git delta that turns `base` into `target` (raw trees when `tree`)."""
    units = tree_entries if tree else _lines
    index: dict[bytes, int] = {}
    offset = 0
    for line in units(base):
        index.setdefault(line, offset)
        offset += len(line)
    out = bytearray(_varint(len(base)) + _varint(len(target)))
    copy_start, copy_end = -1, -1
    pending = bytearray()

    def flush_copy() -> None:
        nonlocal copy_start
        _emit_copy(out, copy_start, copy_end - copy_start)
        copy_start = -1

    for line in units(target):
        size = len(line)
        if copy_start >= 0 and base[copy_end : copy_end + size] == line:
            copy_end += size
            continue
        found = index.get(line) if size >= MIN_COPY_LINE else None
        if found is None:
            if copy_start >= 0:
                flush_copy()
            pending.extend(line)
            continue
        if copy_start >= 0:
            flush_copy()
        _emit_insert(out, pending)
        copy_start, copy_end = found, found + size
    if copy_start >= 0:
        flush_copy()
    _emit_insert(out, pending)
    return bytes(out)


BLOCK = 16  # a byte delta copies runs of at least this many bytes
INDEXED = 1 << 16  # bases up to this size are indexed at every offset, larger ones sparser


def create_byte_delta(base: bytes, target: bytes) -> bytes:
    """A git delta that turns `base` into `target`, copying any run of 16+ bytes the two
    share, for texts that share phrases but not lines: consecutive transcript chunks.
    The base's 16-byte windows are indexed (every offset of a small base; of a large one,
    every `len(base) // INDEXED`th), so time and memory stay linear."""
    index: dict[bytes, int] = {}
    for offset in range(0, len(base) - BLOCK + 1, max(1, len(base) // INDEXED)):
        index.setdefault(base[offset : offset + BLOCK], offset)
    out = bytearray(_varint(len(base)) + _varint(len(target)))
    pending = bytearray()
    at, end = 0, len(target)
    while at < end:
        found = index.get(target[at : at + BLOCK]) if at + BLOCK <= end else None
        if found is None:
            pending.append(target[at])
            at += 1
            continue
        length = BLOCK
        while at + length < end and found + length < len(base):
            step = min(64, end - at - length, len(base) - found - length)
            t, b = at + length, found + length
            if target[t : t + step] == base[b : b + step]:
                length += step
            elif target[at + length] == base[found + length]:
                length += 1
            else:
                break
        back = 0
        while back < len(pending) and found > back and pending[-1 - back] == base[found - back - 1]:
            back += 1
        if back:
            del pending[-back:]
        _emit_insert(out, pending)
        _emit_copy(out, found - back, length + back)
        at += length
    _emit_insert(out, pending)
    return bytes(out)
