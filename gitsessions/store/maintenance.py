"""Packing and purging the store's objects.

Invariants:
- Nothing a ref may need is ever removed. Purges (`gc`, and `purge` after `delete`)
  run under the store's exclusive lock, so no writer has objects in flight; they first
  read every ref strictly (a bad `packed-refs` line stops them), and just before
  removing anything they read the refs again and stop unless they are unchanged.
  A ref whose history cannot be walked (missing or corrupt objects, a ref or parent
  naming a blob or tree, a loose ref file holding no commit id: `walk_all`) makes the
  purge keep everything: it is reported, and nothing below it is guessed at.
- Packing never removes an object that is not in a pack already renamed into place
  (pack, then index, both fsynced; what a walk met where it broke off is packed too),
  so it needs no exclusive lock: it holds the shared one, like a writer, and runs in a
  background process (`background.py`), never inside a turn. What it packs is kept
  whether a ref names it or not (a writer may be between its objects and its ref).
- Background packing is the geometric merge (`merge_packs`): the small packs each
  commit writes (`packwrite`) and any loose objects go into one pack; what a merge
  costs follows what it merges, not the store (`piles.geometric_rollup`).
- Packs are deltified the way git does it, not the way dulwich's repack does (it writes
  no deltas) nor dulwich's `deltify_pack_objects` (a window search whose byte-level
  encoder costs ~20 ms a blob here, and unbounded chains): versions of one file are
  grouped by path, newest first, and each is stored as a line-based delta (`delta.py`)
  against the next newer one, with chains cut at `MAX_DEPTH`.
- Memory is bounded by one object pair, not the store: walks keep ids and paths only,
  and objects are read again one at a time while the pack is written.
- `delete` purges only what the deleted branch alone reached: loose objects are
  unlinked, and only the packs holding such objects are rewritten (record by record,
  deltas kept) without them.
"""

import contextlib
import os
import shutil
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field

from dulwich.objects import Blob, Commit, Tag, Tree, sha_to_hex
from dulwich.pack import (
    OFS_DELTA,
    REF_DELTA,
    Pack,
    PackFileDisappeared,
    UnpackedObject,
    full_unpacked_object,
)

from gitsessions.store import dulwich_private, headlog, piles, tombstones
from gitsessions.store.delta import create_byte_delta, create_delta
from gitsessions.store.errors import NotACommit, StoreBusy, StoreCorrupt, StoreError
from gitsessions.store.packrecords import record_header
from gitsessions.store.packrewrite import rewrite_without
from gitsessions.store.packwrite import write_records
from gitsessions.store.piles import AUTOPACK_LOOSE, AUTOPACK_PACKS, AUTOPACK_REFS
from gitsessions.store.rawobjects import parse_commit, parse_tree
from gitsessions.store.refpack import pack_refs, read_loose, read_packed, unreadable_loose
from gitsessions.store.refs import SESSION_REF_PREFIX
from gitsessions.store.repo import UNREADABLE, GitStore
from gitsessions.store.trailers import parse_trailers
from gitsessions.values.ids import is_session_id

MAX_DEPTH = 100  # longest delta chain (git's pack.depth is 50; here the bases are the newest)

Entry = tuple[bytes, int, bytes]  # hex id, object type, path it was found at ("" for commits)


# no generated __eq__/__repr__: nothing compares or prints it, and each costs start-up
@dataclass(eq=False, repr=False)
class Walk:
    """What a walk from some refs reached, and the refs it could not walk."""

    entries: list[Entry] = field(default_factory=list)
    seen: set[bytes] = field(default_factory=set)
    broken: dict[bytes, str] = field(default_factory=dict)  # ref name -> why


def all_refs(git: GitStore) -> dict[bytes, bytes]:
    """Every ref of the store (but HEAD), read strictly: loose first, then packed."""
    packed = read_packed(git.path / "packed-refs")
    return {**packed, **read_loose(git.path)}


def walk_all(git: GitStore, refs: dict[bytes, bytes]) -> Walk:
    """`walk` of every ref, with each loose ref file that holds no commit id counted as
    broken: what it named is unknown, so a purge must keep everything."""
    reached = walk(git, refs)
    for name in unreadable_loose(git.path):
        reached.broken[name] = "does not hold a commit id"
    return reached


def walk(git: GitStore, refs: dict[bytes, bytes], only: set[bytes] | None = None) -> Walk:
    """Ids reachable from `refs`, commits newest first, then each commit's tree (so
    versions of a file come newest first); blobs are named, never read. With `only`,
    objects outside it are neither returned nor descended into. A ref whose objects
    cannot be read is recorded in `broken`."""
    reached = Walk()
    for name, root in refs.items():
        try:
            _walk_one(git, root, reached, only)
        except (StoreError, KeyError, ValueError, OSError) as error:
            reached.broken[name] = str(error) or type(error).__name__
    return reached


def _walk_one(git: GitStore, root: bytes, reached: Walk, only: set[bytes] | None) -> None:
    seen = reached.seen
    commits: list[tuple[bytes, bytes]] = []  # (commit, its tree)
    frontier = [root]
    while frontier:  # breadth-first along parents: newest commits first
        following: list[bytes] = []
        for sha in frontier:
            if sha in seen or (only is not None and sha not in only):
                continue
            seen.add(sha)
            type_num, raw = git.raw(sha)
            if type_num == Tag.type_num:
                following.append(_header_value(raw, b"object"))
                reached.entries.append((sha, type_num, b""))
            elif type_num == Commit.type_num:
                commit = parse_commit(raw)
                commits.append((sha, commit.tree))
                following.extend(commit.parents)
            else:  # a ref (or parent) naming a blob or a tree: the session cannot be read
                raise NotACommit(f"object {sha.decode()} is not a commit")
        frontier = following
    for sha, tree in commits:
        reached.entries.append((sha, Commit.type_num, b""))
        stack = [(tree, Tree.type_num, b"")]
        while stack:
            sha, type_num, path = stack.pop()
            if sha in seen or (only is not None and sha not in only):
                continue
            seen.add(sha)
            reached.entries.append((sha, type_num, path))
            if type_num == Tree.type_num:
                kind, raw = git.raw(sha)
                if kind != Tree.type_num:
                    raise StoreCorrupt(f"object {sha.decode()} is not a tree")
                for entry in parse_tree(raw).items():
                    if entry.mode == 0o160000:  # a gitlink names no object of ours
                        continue
                    child = Tree.type_num if entry.mode & 0o040000 else Blob.type_num
                    stack.append((entry.sha, child, path + b"/" + entry.path))


def _header_value(raw: bytes, key: bytes) -> bytes:
    for line in raw.split(b"\n\n", 1)[0].split(b"\n"):
        if line.startswith(key + b" "):
            return line[len(key) + 1 :]
    raise StoreCorrupt(f"an object has no {key.decode()} line")


def _chunk(path: bytes) -> bool:
    return path.startswith(b"/transcript/") and path.endswith(b".jsonl")


def _order(entry: Entry, i: int) -> tuple[int, bytes, bytes, int]:
    """Versions of one path together, newest first; transcript chunks together, the
    newest (highest index) first."""
    _sha, type_num, path = entry
    if _chunk(path):
        return type_num, b"transcript/", bytes(255 - b for b in path), i
    return type_num, path, b"", i


def _deltified(git: GitStore, entries: list[Entry]) -> Iterator[UnpackedObject]:
    """Pack records: each blob, tree or commit as a delta against the previous (newer)
    version at the same path, and each transcript chunk against the next newer chunk
    (they share phrases, not lines: `create_byte_delta`), when the delta compresses
    smaller than the object does; chains at most MAX_DEPTH.
    Objects are read one at a time; only the previous one is kept."""
    order = sorted(range(len(entries)), key=lambda i: _order(entries[i], i))
    previous: tuple[int, bytes, bytes, bytes, int] | None = None  # type, path, sha, raw, depth
    for i in order:
        sha, type_num, path = entries[i]
        obj = git.get(sha)
        raw = obj.as_raw_string()
        depth = 0
        record = None
        if (
            previous is not None
            and type_num in (Blob.type_num, Tree.type_num, Commit.type_num)
            and previous[0] == obj.type_num
            and (previous[1] == path or (_chunk(previous[1]) and _chunk(path)))
            and previous[4] < MAX_DEPTH
        ):
            if _chunk(path):
                delta = create_byte_delta(previous[3], raw)
            else:
                delta = create_delta(previous[3], raw, tree=type_num == Tree.type_num)
            if len(delta) <= len(raw) // 2 or (
                len(delta) < len(raw) and len(zlib.compress(delta)) < len(zlib.compress(raw))
            ):
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


def _write_pack(git: GitStore, entries: list[Entry]) -> bytes | None:
    if not entries:
        return None
    return write_records(git.objects, _deltified(git, entries), len(entries))


def _check_unchanged(git: GitStore, before: dict[bytes, bytes], what: str) -> None:
    if all_refs(git) != before:
        raise StoreBusy(
            f"the store's branches changed during {what}; nothing was purged, try again"
        )


def repack(git: GitStore) -> dict[str, object]:
    """`gc`: one deltified pack of what refs reach, and nothing else survives. When some
    ref cannot be walked (missing or damaged objects), nothing is repacked or purged
    (what lies below the damage is unknown): the refs are reported instead. Merging
    packs without purging is `merge_packs`."""
    with git.locked(exclusive=True):
        git.clear_stale_locks()
        _remove_temporary_packs(git)
        store = git.repo.object_store
        dulwich_private.rescan_packs(store)
        refs = all_refs(git)
        reached = walk_all(git, refs)
        loose = list(dulwich_private.loose_objects(store))
        old_packs = list(store.packs)
        stats: dict[str, object] = {
            "objects": 0,
            "loose_before": len(loose),
            "packs_before": len(old_packs),
            "purged": False,
            "broken": sorted(n.decode() for n in reached.broken),
        }
        if reached.broken:
            return stats
        entries = reached.entries
        new_name = _write_pack(git, entries)
        _check_unchanged(git, refs, "gc")
        for pack in old_packs:
            if pack.name() != new_name:
                dulwich_private.remove_pack(store, pack)
        for sha in loose:
            store.delete_loose_object(sha)
        dulwich_private.rescan_packs(store)
        pack_refs(git)
        _remove_empty_fanout(git)  # the exclusive lock: no writer is about to use one
        branches = {
            ref[len(SESSION_REF_PREFIX) :].decode(): sha
            for ref, sha in refs.items()
            if ref.startswith(SESSION_REF_PREFIX)
        }
        headlog.compact(git.path, branches, tombstones.deleted(git.path))
        stats.update(objects=len(entries), purged=True)
        return stats


def purge(git: GitStore, gone: bytes) -> dict[str, object]:
    """After a branch at `gone` was deleted: remove the objects no other ref reaches.

    Only `gone`'s own history is walked whole; the other refs' commits and trees are
    read (never their blobs) to find what they still share with it."""
    with git.locked(exclusive=True):
        store = git.repo.object_store
        dulwich_private.rescan_packs(store)
        refs = all_refs(git)
        candidates = walk(git, {b"gone": gone}).seen
        if not candidates:
            return {"purged": 0, "broken": []}
        others = walk_all(git, refs)
        if others.broken:  # what they reach is unknown: keep everything
            return {"purged": 0, "broken": sorted(n.decode() for n in others.broken)}
        doomed = candidates - others.seen
        _check_unchanged(git, refs, "delete")
        removed = 0
        for sha in doomed:
            path = git.path / "objects" / sha[:2].decode() / sha[2:].decode()
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
                removed += 1
        for pack in list(store.packs):
            inside = {bytes.fromhex(s.decode()) for s in doomed if s in pack}
            if inside:
                removed += len(inside)
                _rewrite_without(git, pack, inside)
        dulwich_private.rescan_packs(store)
        _remove_empty_fanout(git)
        return {"purged": removed, "broken": []}


def _rewrite_without(git: GitStore, pack: Pack, doomed: set[bytes]) -> None:
    """Replace `pack` by a copy without `doomed` (binary ids), records copied as they are."""
    store = git.repo.object_store

    def resolve(sha: bytes) -> tuple[int, bytes]:
        obj = git.get(sha.hex().encode())
        return obj.type_num, obj.as_raw_string()

    rewrite_without(pack, git.path / "objects" / "pack", doomed, resolve)
    dulwich_private.remove_pack(store, pack)


def merge_packs(git: GitStore) -> tuple[int, int]:
    """The geometric roll-up (`piles.geometric_rollup`): the small packs, and every loose
    object, merged into one new deltified pack, dropping nothing; returns (packs merged,
    loose objects packed). Holds only the shared lock: the merged packs and loose objects
    are removed once the new pack is in place (empty fan-out directories stay: a writer
    may be about to use one). The cost follows
    what is merged (mostly the last few turns' packs), not the store: the walk for the
    deltas' paths reads only the merged objects."""
    with git.locked():
        store = git.repo.object_store
        dulwich_private.rescan_packs(store)
        chosen = set(piles.geometric_rollup(piles.pack_objects(git.path)))
        old_packs: list[Pack] = []
        objects: set[bytes] = set()
        for pack in store.packs:
            with contextlib.suppress(PackFileDisappeared):  # merged by someone else
                if _basename(pack) in chosen:
                    objects.update(pack)  # hex ids
                    old_packs.append(pack)
        loose = set(dulwich_private.loose_objects(store))
        if not loose and len(old_packs) < 2:
            return 0, 0
        objects.update(loose)
        reached = walk(git, all_refs(git), only=objects)
        # not (yet) referenced, or met where a walk broke off: kept all the same
        walked = {sha for sha, _kind, _path in reached.entries}
        leftovers = sorted(objects - walked)
        entries = reached.entries + [(s, git.get(s).type_num, b"") for s in leftovers]
        new_name = _write_pack(git, entries)
        dulwich_private.rescan_packs(store)
        for pack in old_packs:
            if pack.name() != new_name:
                dulwich_private.remove_pack(store, pack)
        for sha in loose:
            store.delete_loose_object(sha)
        return len(old_packs), len(loose)


def _basename(pack: Pack) -> str:
    """`pack-<sha>`: the pack's file name without its extension."""
    return os.path.basename(pack.index.path)[: -len(".idx")]


def estimate_loose(git: GitStore) -> int:
    return piles.estimate_loose(git.path)


def loose_refs(git: GitStore) -> int:
    return piles.loose_refs(git.path)


def packs_to_merge(git: GitStore) -> int:
    return piles.packs_to_merge(git.path)


def needs_maintenance(git: GitStore) -> bool:
    """Cheap (three directory listings, a `stat` per pack): has anything piled up past
    its threshold? (`piles.needs_maintenance`, with this module's thresholds.)"""
    return (
        estimate_loose(git) > AUTOPACK_LOOSE
        or loose_refs(git) > AUTOPACK_REFS
        or packs_to_merge(git) > AUTOPACK_PACKS
    )


def run_maintenance(git: GitStore) -> dict[str, int]:
    """What `needs_maintenance` asks for, each step safe beside live writers: loose
    refs into `packed-refs`; small packs (and loose objects) merged geometrically."""
    done = {"loose_packed": 0, "refs_packed": 0, "packs_merged": 0}
    if loose_refs(git) > AUTOPACK_REFS:
        done["refs_packed"] = pack_refs(git)
    if estimate_loose(git) > AUTOPACK_LOOSE or packs_to_merge(git) > AUTOPACK_PACKS:
        done["packs_merged"], done["loose_packed"] = merge_packs(git)
    return done


def _remove_temporary_packs(git: GitStore) -> None:
    """Half-written packs of a killed writer, pack run or fetch (`tmp*` in the pack
    directory: dulwich's `tmpXXXX.pack`, our `tmp_pack_*`), a pack renamed into place
    by a writer killed before its index was (nothing can read it), and the quarantine a
    killed fetch of an older gitsessions (through dulwich) left (we hold the exclusive
    lock: none is live)."""
    for leftover in (git.path / "objects").glob("tmp_pack_*"):
        with contextlib.suppress(OSError):
            leftover.unlink()
    pack_dir = git.path / "objects" / "pack"
    for leftover in pack_dir.glob("tmp*"):
        with contextlib.suppress(OSError):
            leftover.unlink()
    for data in pack_dir.glob("pack-*.pack"):
        if not data.with_suffix(".idx").exists():
            with contextlib.suppress(OSError):
                data.unlink()
    for quarantine in (git.path / "gitsessions").glob("incoming-*"):  # a killed fetch's
        shutil.rmtree(quarantine, ignore_errors=True)


def _remove_empty_fanout(git: GitStore) -> None:
    objects = git.path / "objects"
    for name in os.listdir(objects):
        if len(name) == 2:
            with contextlib.suppress(OSError):
                os.rmdir(objects / name)


def iter_commits(git: GitStore) -> Iterator[bytes]:
    """Hex ids of every commit in the store, packed or loose, reachable or not. Pack
    records are typed from their headers (a delta takes its base's type), so no blob
    is resolved; unreadable objects are skipped (doctor reports them elsewhere)."""
    store = git.repo.object_store
    dulwich_private.rescan_packs(store)
    for sha in list(dulwich_private.loose_objects(store)):
        with contextlib.suppress(StoreError, KeyError, ValueError, OSError):
            if git.raw(sha)[0] == Commit.type_num:
                yield sha
    for pack in list(store.packs):
        try:
            kinds = _pack_kinds(pack)
        except UNREADABLE:
            continue  # `damaged_packs` names it
        for sha, kind in kinds.items():
            if kind == Commit.type_num:
                yield sha.hex().encode()


def damaged_packs(git: GitStore) -> list[tuple[str, str, set[bytes]]]:
    """`(pack file, why, the ids its index names)` for each pack whose length or
    checksum is wrong."""
    store = git.repo.object_store
    dulwich_private.rescan_packs(store)
    out = []
    for pack in list(store.packs):
        try:
            pack.check_length_and_checksum()
        except (*UNREADABLE, OSError) as error:
            try:
                shas = {sha_to_hex(sha) for sha, _offset, _crc in pack.index.iterentries()}
            except (*UNREADABLE, OSError):
                shas = set()
            out.append((f"objects/pack/pack-{pack.name().decode()}.pack", str(error), shas))
    return out


def _pack_kinds(pack: Pack) -> dict[bytes, int]:
    """Object type of every record of a pack, from the record headers alone (nothing
    inflated: a damaged record costs nothing here); -1 where a chain leads nowhere."""
    at = {offset: sha for sha, offset, _crc in pack.index.iterentries()}
    contents = dulwich_private.pack_contents(pack)
    headers: dict[bytes, tuple[int, bytes | None]] = {}  # sha -> (type, its base's sha)
    for offset, sha in at.items():
        kind, _size, _payload, base = record_header(contents, offset)
        if kind == OFS_DELTA:
            assert isinstance(base, int)
            headers[sha] = (kind, at.get(offset - base, b""))
        elif kind == REF_DELTA:
            assert isinstance(base, bytes)
            headers[sha] = (kind, base)
        else:
            headers[sha] = (kind, None)
    kinds: dict[bytes, int] = {}
    for start in headers:
        chain: dict[bytes, None] = {}  # in order, and looked up: a cycle stops the walk
        sha = start
        while True:
            if sha in kinds:
                kind = kinds[sha]
                break
            entry = headers.get(sha)
            if entry is None or sha in chain:  # a base outside this pack, or a cycle
                kind = -1
                break
            chain[sha] = None
            kind, base = entry
            if base is None:  # a whole object: the chain's type
                break
            sha = base
        for link in chain:
            kinds[link] = kind
    return kinds


SessionCommits = dict[bytes, tuple[list[bytes], int]]  # commit -> (parents, commit time)


def session_commits(git: GitStore) -> tuple[int, dict[str, SessionCommits]]:
    """Every commit of the store grouped by the session its `Session:` trailer names;
    also how many commits were scanned."""
    scanned = 0
    out: dict[str, SessionCommits] = {}
    for sha in iter_commits(git):
        scanned += 1
        try:
            commit = git.get(sha)
        except StoreError:
            continue
        if not isinstance(commit, Commit):
            continue
        sid = parse_trailers(commit.message)[1].get("Session", "")
        if is_session_id(sid):
            out.setdefault(sid, {})[sha] = (list(commit.parents), commit.commit_time)
    return scanned, out
