"""The bare git repository behind the store: the one reader and writer of objects
(dulwich's object store, every packed object checked by `packrecords` first) and its
two write primitives.

Invariants:
- Objects are written before any ref names them, and refs move only by compare-and-swap
  (`set_if_equals`, `add_if_new`, `remove_if_equals`): a crash leaves every ref on a
  complete commit. A session's new head goes to `headlog` first.
- Writers hold a shared flock on `gitsessions.lock`; purges hold it exclusively, so they
  never delete an object written but not yet referenced.
- Every ref update holds a per-branch flock: a dulwich `<ref>.lock` found under it was
  left by a crash and removed; other stale lock files after `STALE_LOCK_SECONDS`.
- No reflogs (no `message=`), so a deleted ref leaves nothing for `git fsck`.
"""

import contextlib
import mmap
import os
import struct
import time
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from dulwich.errors import (
    ApplyDeltaError,
    ChecksumMismatch,
    NotGitRepository,
    ObjectFormatException,
    PackedRefsException,
)
from dulwich.file import FileLocked
from dulwich.object_store import DiskObjectStore
from dulwich.objects import Blob, Commit, ObjectID, RawObjectID, ShaFile, Tree
from dulwich.pack import Pack, PackFileDisappeared, UnresolvedDeltas
from dulwich.refs import Ref, RefsContainer

from gitsessions.store import headlog, storelock
from gitsessions.store.diskopen import open_plain
from gitsessions.store.errors import NotACommit, ObjectMissing, StoreBusy, StoreCorrupt, StoreError
from gitsessions.store.formats import FORMAT, check_store
from gitsessions.store.mainbranch import MAIN_REF, main_commit
from gitsessions.store.packrecords import (
    MAX_OBJECT_BYTES,
    Checked,
    check_chain,
    check_loose,
    check_streams,
    map_pack,
)
from gitsessions.store.packwrite import write_objects
from gitsessions.store.refpack import check_packed, current, delete_ref, recover_stale
from gitsessions.store.refs import SESSION_REF_PREFIX, session_refs
from gitsessions.store.storelock import private_files, store_locked

# What dulwich raises on a damaged object or pack (some of its checks are asserts).
UNREADABLE = (
    zlib.error,
    ObjectFormatException,
    ChecksumMismatch,
    ApplyDeltaError,
    ValueError,
    struct.error,
    AssertionError,
    IndexError,
    UnresolvedDeltas,  # a reference delta based on itself, or a cycle of them
)
if TYPE_CHECKING:
    from dulwich.repo import Repo as DulwichRepo

STALE_LOCK_SECONDS = 5.0
T = TypeVar("T")
LOCK_RETRIES = 40
LOOSE_AT_MOST = 2  # objects written loose; more go into a pack of their own


class GitStore:
    """An opened `store.git`: objects, refs and the store-wide lock."""

    def __init__(self, path: Path) -> None:
        self.path = path
        created = not (path / "HEAD").exists()
        self._repo: DulwichRepo | None = None
        opened = None if created else open_plain(path)
        if created:
            # dulwich.repo (hooks, reflogs, worktrees): only to create, repair or maintain
            from dulwich.repo import Repo

            with private_files():
                path.mkdir(mode=0o700, parents=True, exist_ok=True)
                try:
                    self._repo = Repo.init_bare(str(path), mkdir=False, shared_repository="0600")
                except FileExistsError:  # another process initialised it first
                    self._repo = self._open_repo()
        elif opened is None:
            self._repo = self._open_repo()
        self.refs: RefsContainer
        if opened is not None:  # a plain store: dulwich's `Repo` only if something asks
            self.objects, self.refs = opened.objects, opened.refs
        else:
            assert self._repo is not None
            self.objects, self.refs = self._repo.object_store, self._repo.refs
        # Objects and packs reach the disk before a ref names them (git's core.fsync
        # defaults); dulwich already fsyncs ref files.
        self.objects.fsync_object_files = True
        self._has_main = False
        self._stored_format: int | None = None
        # the packs dulwich listed, as last asked (`rescan`)
        self._packs: list[Pack] = []
        # {id(pack): (the pack, its data mapped, what `packrecords.check_chain` found)}
        # {id(pack): (the pack, its data mapped, what `check_chain` found, the offsets of
        # the records `check_streams` inflated)}
        self._checked: dict[int, tuple[Pack, mmap.mmap, Checked, set[int]]] = {}
        if created:
            with private_files():
                self._configure()
            self.ensure_main()
        else:
            self._check_format(opened.format if opened is not None else self._config_format())

    def _open_repo(self) -> "DulwichRepo":
        # dulwich.repo (hooks, reflogs, worktrees): only to create, repair or maintain
        from dulwich.repo import Repo

        try:
            return Repo(str(self.path))
        except NotGitRepository:
            raise StoreCorrupt(f"{self.path} is not a git repository") from None
        except (ValueError, KeyError, UnicodeDecodeError) as error:
            raise StoreCorrupt(
                f"{self.path / 'config'} cannot be read ({error}); run `gitsessions doctor`"
            ) from None

    @property
    def repo(self) -> "DulwichRepo":
        """dulwich's repository (the sync code and `gc` use it), sharing this store's
        objects; opened at first use (a plain store's turn never needs it)."""
        if self._repo is None:
            # dulwich.repo (hooks, reflogs, worktrees): only to create, repair or maintain
            from dulwich.repo import Repo

            self._repo = Repo(str(self.path), object_store=self.objects)
        return self._repo

    def _config_format(self) -> str | None:
        config = self.repo.get_config()
        try:
            return config.get((b"gitsessions",), b"formatVersion").decode("ascii", "replace")
        except KeyError:
            return None

    def _check_format(self, value: str | None) -> None:
        """Refuse a store of a newer format; record ours in a store that has none yet."""
        check_store(value)
        self._stored_format = int(value) if value is not None else None
        if value is None:
            self.ensure_format()

    def ensure_format(self) -> None:
        """Record this build's format in a store of an older one (or of none) before its
        first write: from then on, an older build refuses the store instead of misreading
        what this one writes."""
        if self._stored_format == FORMAT:
            return
        config = self.repo.get_config()
        with contextlib.suppress(OSError), private_files():
            config.set((b"gitsessions",), b"formatVersion", str(FORMAT).encode())
            config.write_to_path()
        self._stored_format = FORMAT

    def _configure(self) -> None:
        config = self.repo.get_config()
        config.set((b"core",), b"logallrefupdates", b"false")
        config.set((b"gc",), b"auto", b"0")  # stock git must not prune behind our lock
        config.set((b"gitsessions",), b"formatVersion", str(FORMAT).encode())
        config.write_to_path()
        self._stored_format = FORMAT
        self.refs.set_symbolic_ref(Ref(b"HEAD"), Ref(MAIN_REF))

    def ensure_main(self) -> bool:
        """Give `HEAD` its `main` branch (the README commit, see `mainbranch`) unless it
        has one; True when it was created now. Checked once per process: a store made
        before `main` existed gets it at its first write."""
        self.ensure_format()
        if self._has_main or self.ref(MAIN_REF) is not None:
            self._has_main = True
            return False
        objects = main_commit(int(time.time()))
        with self.locked(), self.ref_locked(MAIN_REF):
            self.add_objects(list(objects))
            created = self.move_ref(MAIN_REF, None, objects[-1].id)
        self._has_main = True
        return created

    def close(self) -> None:
        self._forget_maps(keep=())
        if self._repo is not None:
            self._repo.close()  # closes the shared object store too
        else:
            self.objects.close()

    # -- locking ------------------------------------------------------------------------

    @contextlib.contextmanager
    def locked(self, exclusive: bool = False) -> Iterator[None]:
        """Hold the store-wide lock: shared for writers, exclusive for purges."""
        with store_locked(self.path, exclusive):
            yield

    @contextlib.contextmanager
    def ref_locked(self, name: bytes, wait: bool = True) -> Iterator[bool]:
        """Hold the branch's own flock; a dulwich `<ref>.lock` found now is stale.
        With `wait=False`, yields False at once (holding nothing) when it is taken."""
        with storelock.ref_locked(self.path, name, wait) as held:
            yield held

    def forget_ref_lock(self, name: bytes) -> None:
        """Remove the branch's flock file once the branch itself is gone."""
        with contextlib.suppress(FileNotFoundError):
            (self.path / "locks" / storelock.ref_lock_name(name)).unlink()

    def clear_stale_locks(self, older_than: float = STALE_LOCK_SECONDS) -> int:
        """Remove dulwich lock files left by crashed writers; returns how many."""
        cutoff = time.time() - older_than
        removed = 0
        for top in ("objects",):
            for dirpath, _dirs, files in os.walk(self.path / top):
                for name in files:
                    if not name.endswith(".lock"):
                        continue
                    lock = Path(dirpath) / name
                    with contextlib.suppress(FileNotFoundError):
                        if lock.stat().st_mtime < cutoff:
                            lock.unlink()
                            removed += 1
        return removed + recover_stale(self.path)  # `packed-refs.lock`: by its `flock`

    def _retry_locked(self, attempt: int, what: str) -> None:
        if attempt % 10 == 0:
            self.clear_stale_locks()
        if attempt >= LOCK_RETRIES:
            raise StoreBusy(
                f"{what} stayed locked; if no other gitsessions is running, "
                f"run `gitsessions gc` to clear stale locks"
            )
        time.sleep(min(0.005 * 2 ** min(attempt, 6), 0.5))

    # -- objects ------------------------------------------------------------------------

    def add_objects(self, objects: list[ShaFile]) -> None:
        """Write a commit's objects: three or more as one pack with its index
        (`packwrite`: two files, 8 KiB on disk, whatever their number), one or two loose
        (a file each: as many blocks, and no index of 1 KiB beside them); fsynced and in
        place before this returns. Nothing is written when one of them is too big. A
        concurrent writer of the same objects counts as success."""
        for obj in objects:
            if obj.raw_length() > MAX_OBJECT_BYTES:  # what `packrecords` would not read back
                raise StoreError(
                    f"a {obj.type_name.decode()} of {obj.raw_length()} bytes is more than the "
                    f"store keeps ({MAX_OBJECT_BYTES >> 20} MiB); nothing was written"
                )
        distinct = list({obj.id: obj for obj in objects}.values())
        if len(distinct) > LOOSE_AT_MOST:
            write_objects(self.objects, distinct)
        else:
            for obj in distinct:
                self._add_loose(obj)

    def _add_loose(self, obj: ShaFile) -> None:
        store = self.objects
        attempt = 0
        while True:
            try:
                store.add_object(obj)
                return
            except FileNotFoundError:  # its fan-out directory was removed meanwhile
                attempt += 1
                self._retry_locked(attempt, f"object {obj.id.decode()}")
            except FileLocked:
                if obj.id in store:
                    return
                attempt += 1
                self._retry_locked(attempt, f"object {obj.id.decode()}")
            except OSError:  # a full disk: dulwich may leave its lock file behind
                sha = obj.id.decode()
                with contextlib.suppress(OSError):
                    (self.path / "objects" / sha[:2] / f"{sha[2:]}.lock").unlink()
                raise

    def get(self, sha: bytes) -> ShaFile:
        """Read an object, rescanning packs once if a concurrent repack moved it;
        `ObjectMissing` if it is gone (a concurrent delete purged it), `StoreCorrupt`
        if it cannot be read."""
        return self._read(sha, lambda store: store[ObjectID(sha)])

    def commit(self, sha: bytes) -> Commit:
        """A commit (dulwich's parse); `NotACommit` when the object is something else."""
        obj = self.get(sha)
        if not isinstance(obj, Commit):
            raise NotACommit(f"{sha.decode()} is not a commit")
        return obj

    def tree(self, sha: bytes) -> Tree:
        """A tree (dulwich's parse); `StoreCorrupt` when the object is something else."""
        obj = self.get(sha)
        if not isinstance(obj, Tree):
            raise StoreCorrupt(f"object {sha.decode()} is not a tree")
        return obj

    def blob(self, sha: bytes) -> bytes:
        """A blob's content; `StoreCorrupt` when the object is something else."""
        obj = self.get(sha)
        if not isinstance(obj, Blob):
            raise StoreCorrupt(f"object {sha.decode()} is not a blob")
        return obj.as_raw_string()

    def has(self, sha: bytes) -> bool:
        # not `sha in self.objects`: dulwich's `contains_loose` reads the whole object
        return self.has_loose(sha) or self.objects.contains_packed(ObjectID(sha))

    def rescan(self) -> None:
        """See the packs another process (stock git's fetch or repack) added, and forget
        those it removed."""
        # the property lists the pack directory again; asked twice, as the first answer
        # may still hold packs it found gone (and closed)
        self.objects.packs  # noqa: B018
        self._packs = self.objects.packs
        self._forget_maps(keep=self._packs)

    def packs(self) -> list[Pack]:
        """The packs in the pack directory now (listed again)."""
        self.rescan()
        return list(self._packs)

    def _forget_maps(self, keep: "list[Pack] | tuple[()]") -> None:
        alive = {id(pack) for pack in keep}
        for key in [key for key in self._checked if key not in alive]:
            with contextlib.suppress(BufferError):
                self._checked.pop(key)[1].close()

    def raw(self, sha: bytes) -> tuple[int, bytes]:
        """`(type number, raw content)` of an object, without building a `ShaFile`
        (walks read thousands of trees); the same errors as `get`."""
        return self._read(sha, lambda store: store.get_raw(ObjectID(sha)))

    def _read(self, sha: bytes, fetch: Callable[[DiskObjectStore], T]) -> T:
        store = self.objects
        try:
            try:
                self.check_packed(sha)
                return fetch(store)
            except KeyError:
                self.rescan()  # packs may have been rewritten by a purge
            try:
                self.check_packed(sha)
                return fetch(store)
            except KeyError:
                if self.check_packed(sha):  # indexed, yet dulwich cannot resolve it
                    raise StoreCorrupt(
                        f"object {sha.decode()[:12]} in {self.path} cannot be read (a delta "
                        "base is missing); run `gitsessions doctor`"
                    ) from None
                raise ObjectMissing(
                    f"object {sha.decode()[:12]} is gone from the store (was the "
                    "session deleted meanwhile?)"
                ) from None
        except UNREADABLE as error:
            # dulwich's frames hold views of the pack's mapping: dropped with the
            # traceback, or the mapping cannot be closed (BufferError at `close`)
            error.__traceback__ = None
            raise StoreCorrupt(
                f"object {sha.decode()[:12]} in {self.path} cannot be read "
                f"({type(error).__name__}: {error}); run `gitsessions doctor`"
            ) from None

    def check_packed(self, sha: bytes, streams: bool = False) -> bool:
        """Refuse (`packrecords.DamagedObject`) a packed object whose delta chain dulwich
        must not be asked to resolve (with `streams`, also one whose records do not
        inflate to their declared sizes: `doctor`); True when a pack holds `sha`. A pack
        listed since (dulwich lists the directory again when its packs miss) is looked
        at too."""
        try:
            binsha = bytes.fromhex(sha.decode("ascii"))
        except (UnicodeDecodeError, ValueError):
            return False  # dulwich says what is wrong with the name
        for attempt in range(2):
            for pack in self._packs:
                try:
                    offset = pack.index.object_offset(RawObjectID(binsha))
                except (KeyError, PackFileDisappeared, ValueError, OSError):
                    continue  # not there, or closed or gone: the next `rescan` drops it
                kept = self._checked.get(id(pack))
                if kept is None or kept[0] is not pack:
                    try:
                        contents = map_pack(pack)
                    except (OSError, ValueError):
                        continue  # removed meanwhile (or empty): dulwich says the rest
                    kept = self._checked[id(pack)] = (pack, contents, {}, set())
                check_chain(pack, kept[1], offset, sha, kept[2])
                if streams:
                    check_streams(pack, kept[1], offset, sha, kept[3])
                return True
            loose = self._loose_path(sha)
            if os.path.exists(loose):  # dulwich's `contains_loose` reads the whole object
                check_loose(loose, sha)
                return False
            if attempt:
                return False
            self.rescan()
        return False

    def has_loose(self, sha: bytes) -> bool:
        return os.path.exists(self._loose_path(sha))

    def _loose_path(self, sha: bytes) -> str:
        """Where git keeps `sha` (40 hex) as a loose object."""
        return os.path.join(self.objects.path, sha[:2].decode(), sha[2:].decode())

    # -- refs ---------------------------------------------------------------------------

    def ref(self, name: bytes) -> bytes | None:
        """A branch's commit (loose file first, then `packed-refs`), None if absent."""
        return current(self.path, name)

    def session_refs(self) -> dict[bytes, bytes]:
        """`{session id (bytes): head commit}` for every session branch (`refs`)."""
        return session_refs(self.path)

    def move_ref(self, name: bytes, old: bytes | None, new: bytes | None) -> bool:
        """Compare-and-swap `name` from `old` to `new` (None: absent); True when we won.
        A session branch about to move to a commit has it recorded first (`headlog`);
        the caller holds the branch's flock. Refused (`StoreCorrupt`) while
        `packed-refs` holds a damaged line."""
        check_packed(self.path / "packed-refs")
        if new is not None and name.startswith(SESSION_REF_PREFIX) and self.ref(name) == old:
            headlog.record(self.path, [(name[len(SESSION_REF_PREFIX) :].decode(), new)])
        attempt = 0
        while True:
            try:
                if old is None:
                    assert new is not None
                    return bool(self.refs.add_if_new(Ref(name), ObjectID(new)))
                if new is None:  # the caller holds the branch's flock
                    won = delete_ref(self.path, name, old)
                    if won:
                        self._remove_reflog(name)
                    return won
                return bool(self.refs.set_if_equals(Ref(name), ObjectID(old), ObjectID(new)))
            except PackedRefsException as error:  # an earlier build let a bad name in
                raise StoreCorrupt(
                    f"{self.path / 'packed-refs'} cannot be read ({error}); "
                    "run `gitsessions doctor --repair`"
                ) from None
            except FileLocked:
                attempt += 1
                self._retry_locked(attempt, f"branch {name.decode()}")

    def _remove_reflog(self, name: bytes) -> None:
        log = self.path / "logs" / os.fsdecode(name)
        with contextlib.suppress(FileNotFoundError):
            log.unlink()
