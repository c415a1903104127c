"""Packing and purging the store's objects.

Invariants:
- Both run under the store's exclusive lock, so no writer has objects in flight.
- `repack(prune=True)` keeps exactly the objects reachable from some ref: it writes them
  into one new deltified pack, then removes every other pack and every loose object.
  Whatever a deleted session alone referenced is then gone from disk.
- Packs are deltified (dulwich's default repack is not): the store stays near the size
  of its compressed content rather than a full copy per turn.
- `maybe_autopack` packs loose objects once they pile up, as `git gc --auto` does, by
  sampling one fan-out directory, and consolidates packs once there are many (keeping
  every loose object, and whatever packed object a ref reaches).
"""

import contextlib
import os
from collections.abc import Iterator

from dulwich.objects import Commit, ShaFile, Tag, Tree
from dulwich.pack import deltify_pack_objects

from gitsessions.store.repo import GitStore

AUTOPACK_LOOSE = 1024  # loose objects (estimated) before an automatic pack
AUTOPACK_PACKS = 32  # packs before they are consolidated
DELTA_WINDOW = 10


def _walk(git: GitStore, roots: list[bytes]) -> Iterator[tuple[ShaFile, bytes | None]]:
    """Every object reachable from `roots`, each once, with a path hint for blobs."""
    seen: set[bytes] = set()
    stack: list[tuple[bytes, bytes | None]] = [(r, None) for r in roots]
    while stack:
        sha, path = stack.pop()
        if sha in seen:
            continue
        seen.add(sha)
        obj = git.get(sha)
        yield obj, path
        if isinstance(obj, Commit):
            stack.append((obj.tree, b""))
            stack.extend((p, None) for p in obj.parents)
        elif isinstance(obj, Tree):
            for item in obj.items():
                if item.mode == 0o160000:  # gitlink: not an object of ours
                    continue
                stack.append((item.sha, (path or b"") + b"/" + item.path))
        elif isinstance(obj, Tag):
            stack.append((obj.object[1], None))


def _write_pack(git: GitStore, objects: list[tuple[ShaFile, bytes | None]]) -> bytes | None:
    if not objects:
        return None
    store = git.repo.object_store
    records = deltify_pack_objects(iter(objects), window_size=DELTA_WINDOW)
    pack = store.add_pack_data(len(objects), records)
    return pack.name() if pack is not None else None


def repack(git: GitStore, prune: bool = True) -> dict[str, int]:
    """One deltified pack of what refs reach; with `prune`, nothing else survives."""
    with git.locked(exclusive=True):
        git.clear_stale_locks()
        store = git.repo.object_store
        store._update_pack_cache()
        roots = [sha for name, sha in git.repo.refs.as_dict().items() if name != b"HEAD"]
        reachable = list(_walk(git, roots))
        keep = {obj.id for obj, _ in reachable}
        loose = list(store._iter_loose_objects())
        if not prune:  # keep unreferenced loose objects too
            reachable += [(store[s], None) for s in loose if s not in keep]
        old_packs = list(store.packs)
        new_name = _write_pack(git, reachable)
        for pack in old_packs:
            if pack.name() != new_name:
                store._remove_pack(pack)
        for sha in loose:
            store.delete_loose_object(sha)
        store._update_pack_cache()
        git.repo.refs.pack_refs(all=True)
        _remove_empty_fanout(git)
        return {
            "objects": len(reachable),
            "loose_before": len(loose),
            "packs_before": len(old_packs),
        }


def pack_loose(git: GitStore) -> int:
    """Move loose objects into one new deltified pack; returns how many were packed."""
    with git.locked(exclusive=True):
        store = git.repo.object_store
        loose = list(store._iter_loose_objects())
        objects = [(store[sha], None) for sha in loose]
        _write_pack(git, objects)
        for sha in loose:
            store.delete_loose_object(sha)
        _remove_empty_fanout(git)
        return len(loose)


def estimate_loose(git: GitStore) -> int:
    """Loose objects, estimated from fan-out directory `17` as git does."""
    sample = git.path / "objects" / "17"
    try:
        return len(os.listdir(sample)) * 256
    except FileNotFoundError:
        return 0


def maybe_autopack(git: GitStore) -> None:
    """Pack loose objects, or consolidate packs, once either piles up."""
    if estimate_loose(git) > AUTOPACK_LOOSE:
        pack_loose(git)
    if len(list(git.repo.object_store.packs)) > AUTOPACK_PACKS:
        repack(git, prune=False)


def _remove_empty_fanout(git: GitStore) -> None:
    objects = git.path / "objects"
    for name in os.listdir(objects):
        if len(name) == 2:
            with contextlib.suppress(OSError):
                os.rmdir(objects / name)
