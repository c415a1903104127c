"""Packing and purging the store's objects with stock git (as `services/code/footprint.py`
keeps the project's snapshots).

Invariants:
- Nothing a ref may need is removed: purges (`gc`, and `purge` after `delete`) hold the
  store's exclusive lock, read every ref strictly first and again just before removing
  anything, and stop unless unchanged. A ref whose history cannot be walked (missing or
  damaged objects, a ref or parent naming a blob or tree: `walk_all`) keeps everything
  and is named.
- `gc` is `git repack -a -d`, `git prune --expire=now`, then the refs packed; git fsyncs
  and renames a new pack before deleting an old one, so a kill leaves old, new or both.
- `delete` purges only what the deleted branch alone reached (the other branches'
  commits and trees are read); a pack holding any is rewritten by `git pack-objects`.
- `merge_packs` (`git repack --geometric=2 -d`) runs under the shared lock and drops
  nothing: a writer may be between its objects and its ref.
"""

import contextlib
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field

from dulwich.objects import Blob, Commit, Tag, Tree, sha_to_hex
from dulwich.pack import OFS_DELTA, REF_DELTA, Pack, PackFileDisappeared

from gitsessions.store import headlog, incoming, piles, stockgit, tombstones
from gitsessions.store.errors import NotACommit, StoreBusy, StoreCorrupt, StoreError
from gitsessions.store.packrecords import mapped, pack_base, record_header
from gitsessions.store.piles import AUTOPACK_LOOSE, AUTOPACK_PACKS, AUTOPACK_REFS
from gitsessions.store.refpack import pack_refs, read_loose, read_packed, unreadable_loose
from gitsessions.store.refs import SESSION_REF_PREFIX
from gitsessions.store.repo import UNREADABLE, GitStore
from gitsessions.store.trailers import parse_trailers
from gitsessions.values.ids import is_session_id

Entry = tuple[bytes, int, bytes]  # hex id, object type, path it was found at ("" for commits)


@dataclass
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


def walk(git: GitStore, refs: dict[bytes, bytes]) -> Walk:
    """Ids reachable from `refs`, commits newest first, then each commit's tree; blobs
    are named, never read. A ref whose objects cannot be read is recorded in `broken`."""
    reached = Walk()
    for name, root in refs.items():
        try:
            _walk_one(git, root, reached)
        except (StoreError, KeyError, ValueError, OSError) as error:
            reached.broken[name] = str(error) or type(error).__name__
    return reached


def _walk_one(git: GitStore, root: bytes, reached: Walk) -> None:
    seen = reached.seen
    trees: list[bytes] = []
    frontier = [root]
    while frontier:  # breadth-first along parents: newest commits first
        following: list[bytes] = []
        for sha in frontier:
            if sha in seen:
                continue
            seen.add(sha)
            obj = git.get(sha)
            reached.entries.append((sha, obj.type_num, b""))
            if isinstance(obj, Tag):
                following.append(obj.object[1])
            elif isinstance(obj, Commit):
                trees.append(obj.tree)
                following.extend(obj.parents)
            else:  # a ref (or parent) naming a blob or a tree: the session cannot be read
                raise NotACommit(f"object {sha.decode()} is not a commit")
        frontier = following
    stack = [(tree, Tree.type_num, b"") for tree in reversed(trees)]
    while stack:
        sha, type_num, path = stack.pop()
        if sha in seen:
            continue
        seen.add(sha)
        reached.entries.append((sha, type_num, path))
        if type_num != Tree.type_num:
            continue
        tree = git.get(sha)
        if not isinstance(tree, Tree):
            raise StoreCorrupt(f"object {sha.decode()} is not a tree")
        for entry in tree.items():
            if entry.mode == 0o160000:  # a gitlink names no object of ours
                continue
            child = Tree.type_num if entry.mode & 0o040000 else Blob.type_num
            stack.append((entry.sha, child, path + b"/" + entry.path))


def _git(git: GitStore, *args: str, stdin: bytes = b"") -> bytes:
    """Run stock git on the store; a failure is one `StoreError` line."""
    try:
        return stockgit.run(git.path, args, None, stdin)
    except stockgit.GitFailed as error:
        raise StoreError(f"git {args[0]} failed on {git.path}: {error}") from None
    except OSError as error:  # no git on PATH, or it could not start
        raise StoreError(f"git {args[0]} could not run: {error}") from None


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
        refs = all_refs(git)
        reached = walk_all(git, refs)
        stats: dict[str, object] = {
            "objects": 0,
            "loose_before": len(piles.loose_ids(git.path)),
            "packs_before": len(piles.pack_objects(git.path)),
            "purged": False,
            "broken": sorted(n.decode() for n in reached.broken),
        }
        if reached.broken:
            return stats
        _check_unchanged(git, refs, "gc")
        _git(git, "repack", "-a", "-d", "-q")
        _git(git, "prune", "--expire=now")
        git.rescan()
        pack_refs(git)
        _remove_empty_fanout(git)  # the exclusive lock: no writer is about to use one
        branches = {
            ref[len(SESSION_REF_PREFIX) :].decode(): sha
            for ref, sha in refs.items()
            if ref.startswith(SESSION_REF_PREFIX)
        }
        headlog.compact(git.path, branches, tombstones.deleted(git.path))
        stats.update(objects=len(reached.entries), purged=True)
        return stats


def purge(git: GitStore, gone: bytes) -> dict[str, object]:
    """After a branch at `gone` was deleted: remove the objects no other ref reaches.

    Only `gone`'s own history is walked whole; the other refs' commits and trees are
    read (never their blobs) to find what they still share with it."""
    with git.locked(exclusive=True):
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
        for pack in git.packs():
            try:
                ids = [sha_to_hex(sha) for sha, _offset, _crc in pack.index.iterentries()]
            except PackFileDisappeared:
                continue
            inside = doomed.intersection(ids)
            if not inside:
                continue
            rest = [sha for sha in ids if sha not in inside]
            if rest:  # the new pack is in place (fsynced, renamed) before the old goes
                prefix = str(git.path / "objects" / "pack" / "pack")
                listed = b"\n".join(rest) + b"\n"
                _git(git, "pack-objects", "-q", "--delta-base-offset", prefix, stdin=listed)
            _remove_pack(pack)
            removed += len(inside)
        git.rescan()
        _remove_empty_fanout(git)
        return {"purged": removed, "broken": []}


def _remove_pack(pack: Pack) -> None:
    """Delete a pack's files, its index first (what makes it visible)."""
    base = pack_base(pack)
    for suffix in (".idx", ".pack", ".rev", ".bitmap", ".mtimes"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(base + suffix)


def merge_packs(git: GitStore) -> tuple[int, int]:
    """The geometric roll-up (`git repack --geometric=2 -d`, `piles.geometric_rollup`
    says when it is due): the small packs and every loose object merged into one new
    deltified pack, dropping nothing; returns (packs merged, loose objects packed).
    Holds only the shared lock, like a writer: git removes a merged pack or loose
    object only once the pack holding it is in place."""
    with git.locked():
        packs = set(piles.pack_objects(git.path))
        loose = len(piles.loose_ids(git.path))
        if not loose and len(piles.geometric_rollup(piles.pack_objects(git.path))) < 2:
            return 0, 0
        _git(git, "repack", "--geometric=2", "-d", "-q")
        merged = len(packs - set(piles.pack_objects(git.path)))
        git.rescan()
        return merged, loose - len(piles.loose_ids(git.path))


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
    directory: dulwich's `tmpXXXX.pack`, git's `tmp_pack_*`, ours), a pack renamed into
    place by a writer killed before its index was (nothing can read it), and the
    quarantine a killed fetch left (`incoming`; we hold the exclusive lock: none is
    live)."""
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
    for quarantine in (git.path / "gitsessions").glob(f"{incoming.PREFIX}*"):  # a killed fetch's
        shutil.rmtree(quarantine, ignore_errors=True)
    for flock in (git.path / "locks").glob(f"{incoming.PREFIX}*"):  # and its `flock` file
        with contextlib.suppress(OSError):
            flock.unlink()


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
    for sha in piles.loose_ids(git.path):
        with contextlib.suppress(StoreError, KeyError, ValueError, OSError):
            if git.raw(sha)[0] == Commit.type_num:
                yield sha
    for pack in git.packs():
        try:
            kinds = _pack_kinds(pack)
        except (*UNREADABLE, OSError):
            continue  # `damaged_packs` names it
        for sha, kind in kinds.items():
            if kind == Commit.type_num:
                yield sha.hex().encode()


def damaged_packs(git: GitStore) -> list[tuple[str, str, set[bytes]]]:
    """`(pack file, why, the ids its index names)` for each pack whose length or
    checksum is wrong."""
    out = []
    for pack in git.packs():
        try:
            pack.check_length_and_checksum()
        except (*UNREADABLE, OSError) as error:
            try:
                shas: set[bytes] = {
                    sha_to_hex(sha) for sha, _offset, _crc in pack.index.iterentries()
                }
            except (*UNREADABLE, OSError):
                shas = set()
            out.append((f"objects/pack/pack-{pack.name().decode()}.pack", str(error), shas))
    return out


def _pack_kinds(pack: Pack) -> dict[bytes, int]:
    """Object type of every record of a pack, from the record headers alone (nothing
    inflated: a damaged record costs nothing here); -1 where a chain leads nowhere."""
    at: dict[int, bytes] = {offset: sha for sha, offset, _crc in pack.index.iterentries()}
    headers: dict[bytes, tuple[int, bytes | None]] = {}  # sha -> (type, its base's sha)
    with mapped(pack) as contents:
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
