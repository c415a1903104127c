"""A line-oriented git delta encoder for the store's JSON files.

Every blob the store writes is text made of lines (canonical JSON, JSONL), and versions
of one file differ by whole lines: a transcript segment only grows, the working context
slides. So a delta that copies whole runs of lines from the base and inserts the rest
is both small and cheap to compute (a dict lookup per line), where a general byte-level
encoder costs tens of milliseconds per blob. The output is git's delta format
(base size, target size, copy and insert instructions), readable by git and dulwich.
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


def _lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


def create_delta(base: bytes, target: bytes) -> bytes:
    """A git delta that turns `base` into `target`."""
    index: dict[bytes, int] = {}
    offset = 0
    for line in _lines(base):
        index.setdefault(line, offset)
        offset += len(line)
    out = bytearray(_varint(len(base)) + _varint(len(target)))
    copy_start, copy_end = -1, -1
    pending = bytearray()

    def flush_insert() -> None:
        for start in range(0, len(pending), MAX_INSERT):
            chunk = pending[start : start + MAX_INSERT]
            out.append(len(chunk))
            out.extend(chunk)
        pending.clear()

    def flush_copy() -> None:
        nonlocal copy_start
        start = copy_start
        while start < copy_end:
            length = min(MAX_COPY, copy_end - start)
            out.extend(_copy(start, length))
            start += length
        copy_start = -1

    for line in _lines(target):
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
        flush_insert()
        copy_start, copy_end = found, found + size
    if copy_start >= 0:
        flush_copy()
    flush_insert()
    return bytes(out)
