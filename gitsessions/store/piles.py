"""What piles up between maintenance runs (loose objects, loose refs, small packs), counted
by directory listings and pack sizes alone: whether background maintenance is due,
asked without loading `maintenance` (or dulwich).

Packs are merged geometrically by object count, as `git repack --geometric=2` does: the
packs that keep the largest in a progression where each is at least twice the next are
left alone, the rest merged into one. So an object is rewritten about log2(store / pack)
times in all, never at every run.
"""

import contextlib
import os
from pathlib import Path

from gitsessions.store.refs import SESSION_REF_PREFIX

AUTOPACK_LOOSE = 1024  # loose objects (estimated) before an automatic pack
AUTOPACK_PACKS = 8  # packs a geometric roll-up would merge, before it runs
GEOMETRIC_FACTOR = 2
AUTOPACK_REFS = 256  # loose session branches before they go into packed-refs


def estimate_loose(store: Path) -> int:
    """Loose objects, estimated from fan-out directory `17` as git does."""
    try:
        return len(os.listdir(store / "objects" / "17")) * 256
    except FileNotFoundError:
        return 0


HEX = frozenset(b"0123456789abcdef")


def loose_ids(store: Path) -> list[bytes]:
    """Hex ids of every loose object (`objects/xx/<38 hex>`), by listing the fan-out
    directories; lock and temporary files are not objects."""
    objects = store / "objects"
    found: list[bytes] = []
    try:
        fanout = [d for d in os.listdir(objects) if len(d) == 2]
    except FileNotFoundError:
        return found
    for directory in fanout:
        prefix = directory.encode()
        if not HEX.issuperset(prefix):
            continue
        with contextlib.suppress(FileNotFoundError, NotADirectoryError):
            for name in os.listdir(objects / directory):
                rest = name.encode()
                if len(rest) == 38 and HEX.issuperset(rest):
                    found.append(prefix + rest)
    return found


def loose_refs(store: Path) -> int:
    try:
        return len(os.listdir(store / os.fsdecode(SESSION_REF_PREFIX)))
    except FileNotFoundError:
        return 0


IDX_FIXED = 8 + 256 * 4 + 2 * 20  # a version 2 index: header, fan-out, two checksums
IDX_PER_OBJECT = 20 + 4 + 4  # id, CRC, offset (packs over 2 GiB add 8 bytes for some)


def pack_objects(store: Path) -> dict[str, int]:
    """`{pack-<sha>: objects in it}` of each pack with its index and no `.keep`, the
    count read off the index's size (one `stat`, no read)."""
    pack_dir = store / "objects" / "pack"
    try:
        names = set(os.listdir(pack_dir))
    except FileNotFoundError:
        return {}
    counts: dict[str, int] = {}
    for name in names:
        base = name[: -len(".idx")]
        if not name.endswith(".idx") or f"{base}.pack" not in names or f"{base}.keep" in names:
            continue
        try:
            size = os.stat(pack_dir / name).st_size
        except FileNotFoundError:  # removed meanwhile by a merge
            continue
        counts[base] = max(1, (size - IDX_FIXED) // IDX_PER_OBJECT)
    return counts


def geometric_rollup(sizes: dict[str, int], factor: int = GEOMETRIC_FACTOR) -> list[str]:
    """The packs a geometric repack merges, smallest first (git's `split_pack_geometry`):
    above the split every pack is at least `factor` times the next smaller one; the
    packs below it are merged, and so is each pack above that is less than `factor`
    times what is merged so far."""
    order = sorted(sizes, key=lambda name: (sizes[name], name))
    split = 0
    for i in range(len(order) - 1, 0, -1):
        if sizes[order[i]] < factor * sizes[order[i - 1]]:
            split = i + 1
            break
    total = sum(sizes[name] for name in order[:split])
    while split < len(order) and sizes[order[split]] < factor * total:
        total += sizes[order[split]]
        split += 1
    return order[:split] if split > 1 else []


def packs_to_merge(store: Path) -> int:
    """How many packs a geometric roll-up would merge now."""
    return len(geometric_rollup(pack_objects(store)))


def needs_maintenance(store: Path) -> bool:
    """Cheap (three directory listings, a `stat` per pack): has anything piled up past
    its threshold?"""
    return (
        estimate_loose(store) > AUTOPACK_LOOSE
        or loose_refs(store) > AUTOPACK_REFS
        or packs_to_merge(store) > AUTOPACK_PACKS
    )
