"""Packing and purging the store's objects.

Invariants:
- Both run under the store's exclusive lock, so no writer has objects in flight.
- `repack(prune=True)` keeps exactly the objects reachable from some ref: it writes them
  into one new pack, then removes every other pack and every loose object. Whatever a
  deleted session alone referenced is then gone from disk.
- Packs are deltified the way git does it, not the way dulwich's repack does (it writes
  no deltas) nor dulwich's `deltify_pack_objects` (a window search whose byte-level
  encoder costs ~20 ms a blob here, and unbounded chains): versions of one file are
  grouped by path, newest first, and each is stored as a line-based delta (`delta.py`)
  against the next newer one, with chains cut at `MAX_DEPTH`. The
  newest version of every file is stored whole, so reading a session's head is cheap,
  and an append-only transcript segment costs about what was appended.
- `maybe_autopack` packs loose objects (and loose refs: reading 10,000 ref files makes
  `list` slow) once they pile up, as `git gc --auto` does: it
  walks only the loose part of the history (stopping at packed objects), so its cost
  follows what was written since the last pack, not the size of the store.
"""

import contextlib
import os
from collections.abc import Iterator

from dulwich.objects import Blob, Commit, ShaFile, Tag, Tree
from dulwich.pack import UnpackedObject, full_unpacked_object

from gitsessions.store.delta import create_delta
from gitsessions.store.repo import SESSION_REF_PREFIX, GitStore

AUTOPACK_LOOSE = 1024  # loose objects (estimated) before an automatic pack
AUTOPACK_PACKS = 32  # packs before they are consolidated
AUTOPACK_REFS = 256  # loose session branches before they go into packed-refs
MAX_DEPTH = 100  # longest delta chain (git's pack.depth is 50; here the bases are the newest)


Hinted = tuple[ShaFile, bytes]  # an object and the path it was found at ("" for commits)


def _walk(git: GitStore, roots: list[bytes], only: set[bytes] | None = None) -> list[Hinted]:
    """Objects reachable from `roots` (each once), commits newest first, then each
    commit's tree: so versions of a file come newest first. With `only`, objects outside
    it are neither returned nor descended into."""
    seen: set[bytes] = set()
    commits: list[Commit] = []
    out: list[Hinted] = []
    frontier = list(roots)
    while frontier:  # breadth-first along parents: newest commits first
        following: list[bytes] = []
        for sha in frontier:
            if sha in seen or (only is not None and sha not in only):
                continue
            seen.add(sha)
            obj = git.get(sha)
            if isinstance(obj, Tag):
                following.append(obj.object[1])
                out.append((obj, b""))
            elif isinstance(obj, Commit):
                commits.append(obj)
                following.extend(obj.parents)
        frontier = following
    for commit in commits:
        out.append((commit, b""))
        stack = [(commit.tree, b"")]
        while stack:
            sha, path = stack.pop()
            if sha in seen or (only is not None and sha not in only):
                continue
            seen.add(sha)
            obj = git.get(sha)
            out.append((obj, path))
            if isinstance(obj, Tree):
                for item in obj.items():
                    if item.mode != 0o160000:  # a gitlink names no object of ours
                        stack.append((item.sha, path + b"/" + item.path))
    return out


def _deltified(objects: list[Hinted]) -> Iterator[UnpackedObject]:
    """Pack records: each blob or tree as a delta against the previous (newer) version
    at the same path when that is at most half its size, chains at most MAX_DEPTH."""
    order = sorted(range(len(objects)), key=lambda i: (objects[i][0].type_num, objects[i][1], i))
    previous: tuple[int, bytes, bytes, bytes, int] | None = None  # type, path, sha, raw, depth
    for i in order:
        obj, path = objects[i]
        raw = obj.as_raw_string()
        depth = 0
        record = None
        if (
            previous is not None
            and isinstance(obj, Blob | Tree)
            and previous[0] == obj.type_num
            and previous[1] == path
            and previous[4] < MAX_DEPTH
        ):
            delta = create_delta(previous[3], raw)
            if len(delta) <= len(raw) // 2:
                depth = previous[4] + 1
                record = UnpackedObject(
                    obj.type_num,
                    sha=obj.sha().digest(),
                    delta_base=previous[2],
                    decomp_len=len(delta),
                    decomp_chunks=[delta],
                )
        yield record or full_unpacked_object(obj)
        previous = (obj.type_num, path, obj.sha().digest(), raw, depth)


def _write_pack(git: GitStore, objects: list[Hinted]) -> str | None:
    if not objects:
        return None
    pack = git.repo.object_store.add_pack_data(len(objects), _deltified(objects))
    return pack.name() if pack is not None else None


def _refs(git: GitStore) -> list[bytes]:
    return [sha for name, sha in git.repo.refs.as_dict().items() if name != b"HEAD"]


def repack(git: GitStore, prune: bool = True) -> dict[str, int]:
    """One deltified pack of what refs reach; with `prune`, nothing else survives."""
    with git.locked(exclusive=True):
        git.clear_stale_locks()
        _remove_temporary_packs(git)
        store = git.repo.object_store
        store._clear_cached_packs()
        store._update_pack_cache()
        reachable = _walk(git, _refs(git))
        keep = {obj.id for obj, _ in reachable}
        loose = list(store._iter_loose_objects())
        if not prune:  # keep what is loose and unreferenced too
            reachable += [(git.get(s), b"") for s in loose if s not in keep]
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
        loose = set(store._iter_loose_objects())
        hinted = _walk(git, _refs(git), only=loose)
        found = {obj.id for obj, _ in hinted}
        hinted += [(git.get(sha), b"") for sha in loose - found]  # unreferenced leftovers
        _write_pack(git, hinted)
        for sha in loose:
            store.delete_loose_object(sha)
        git.repo.refs.pack_refs(all=True)
        _remove_empty_fanout(git)
        return len(loose)


def estimate_loose(git: GitStore) -> int:
    """Loose objects, estimated from fan-out directory `17` as git does."""
    try:
        return len(os.listdir(git.path / "objects" / "17")) * 256
    except FileNotFoundError:
        return 0


def loose_refs(git: GitStore) -> int:
    try:
        return len(os.listdir(git.path / os.fsdecode(SESSION_REF_PREFIX)))
    except FileNotFoundError:
        return 0


def maybe_autopack(git: GitStore) -> None:
    """Pack loose objects, loose refs, or consolidate packs, once any of them piles up."""
    if estimate_loose(git) > AUTOPACK_LOOSE:
        pack_loose(git)
    elif loose_refs(git) > AUTOPACK_REFS:
        with git.locked(exclusive=True):
            git.repo.refs.pack_refs(all=True)
    if len(git.repo.object_store.packs) > AUTOPACK_PACKS:
        repack(git, prune=False)


def _remove_temporary_packs(git: GitStore) -> None:
    """Half-written packs of a killed pack run (we hold the exclusive lock: none is live)."""
    for leftover in (git.path / "objects").glob("tmp_pack_*"):
        with contextlib.suppress(OSError):
            leftover.unlink()


def _remove_empty_fanout(git: GitStore) -> None:
    objects = git.path / "objects"
    for name in os.listdir(objects):
        if len(name) == 2:
            with contextlib.suppress(OSError):
                os.rmdir(objects / name)
