"""Rewriting one pack without some of its objects, by copying records as they are.

Invariants:
- The new pack holds every object of the old one but the doomed, each record copied
  byte for byte (its compressed payload is never inflated again): only a delta's
  header changes, because its base moved. A record whose base is doomed is inflated
  (through the store) and written whole. So the cost is a copy of the pack, not a repack.
- The new pack and its index are written to temporary files, fsynced and renamed into
  place (the index last: it is what makes a pack visible) before the caller removes the
  old pack; a crash at any point leaves the old pack, the new one, or both.
"""

import hashlib
import mmap
import os
import struct
import zlib
from collections.abc import Callable
from pathlib import Path

from dulwich.pack import OFS_DELTA, REF_DELTA, Pack, pack_object_header, write_pack_index

from gitsessions.store.packrecords import record_header

Resolve = Callable[[bytes], tuple[int, bytes]]  # binary sha -> (type, raw content)


def rewrite_without(pack: Pack, pack_dir: Path, doomed: set[bytes], resolve: Resolve) -> int:
    """Write a copy of `pack` without `doomed` (binary shas) into `pack_dir`; returns how
    many objects it holds (0: nothing was written). The caller removes the old pack."""
    entries = sorted(pack.index.iterentries(), key=lambda e: e[1])  # by offset
    keep = [e for e in entries if e[0] not in doomed]
    if not keep:
        return 0
    sha_at = {offset: sha for sha, offset, _crc in entries}
    source = pack_dir / pack.data.filename
    tmp_pack = pack_dir / f"tmp_pack_rewrite_{os.getpid()}"
    new_at: dict[bytes, int] = {}
    index_entries: list[tuple[bytes, int, int]] = []
    digest = hashlib.sha1()
    with open(source, "rb") as old, open(tmp_pack, "wb") as out:
        buf = mmap.mmap(old.fileno(), 0, access=mmap.ACCESS_READ)
        end_of_data = len(buf) - 20
        bounds = [e[1] for e in entries] + [end_of_data]
        next_at = {bounds[i]: bounds[i + 1] for i in range(len(entries))}
        position = 0

        def emit(chunk: bytes) -> None:
            nonlocal position
            out.write(chunk)
            digest.update(chunk)
            position += len(chunk)

        emit(b"PACK" + struct.pack(">II", 2, len(keep)))
        for sha, offset, _crc in keep:
            kind, size, payload_at, base = record_header(buf, offset)
            payload = buf[payload_at : next_at[offset]]
            if kind == OFS_DELTA:
                assert isinstance(base, int)
                base = sha_at[offset - base]
            if kind in (OFS_DELTA, REF_DELTA) and (base in doomed or base not in new_at):
                whole_kind, raw = resolve(sha)  # its base goes (or is elsewhere): whole
                record = bytes(pack_object_header(whole_kind, None, len(raw), pack.object_format))
                record += zlib.compress(raw)
            elif kind == OFS_DELTA:
                relative = position - new_at[base]  # type: ignore[index]
                header = pack_object_header(OFS_DELTA, relative, size, pack.object_format)
                record = bytes(header) + payload
            else:  # whole objects and REF_DELTA records keep their header as it is
                record = bytes(buf[offset : next_at[offset]])
            new_at[sha] = position
            index_entries.append((sha, position, zlib.crc32(record) & 0xFFFFFFFF))
            emit(record)
        buf.close()
        checksum = digest.digest()
        out.write(checksum)
        out.flush()
        os.fsync(out.fileno())
    # named as dulwich names packs (the SHA-1 over the sorted object ids): `Pack.name()`
    name = "pack-" + hashlib.sha1(b"".join(sorted(e[0] for e in index_entries))).hexdigest()
    final_pack = pack_dir / f"{name}.pack"
    os.replace(tmp_pack, final_pack)
    tmp_index = pack_dir / f"tmp_idx_rewrite_{os.getpid()}"
    with open(tmp_index, "wb") as index:
        write_pack_index(index, sorted(index_entries), checksum, version=2)
        index.flush()
        os.fsync(index.fileno())
    os.replace(tmp_index, pack_dir / f"{name}.idx")
    return len(keep)
