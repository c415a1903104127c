"""Packing loose refs into `packed-refs` the way git does, so no crash can lose a ref.

Invariants:
- The new file is written whole to `packed-refs.lock` (O_EXCL), fsynced and renamed
  before any loose file is touched; a loose ref is deleted only under its branch's flock
  and only while it holds the packed value. (dulwich's `add_packed_refs` deletes the
  loose files first: a kill loses them; it is never called.)
- Every writer holds `locks/packed-refs` while its lock file exists (stock git never
  writes it here), so one found under that flock was left by a killed writer: set aside
  (`gitsessions/interrupted/`, for doctor) and the write goes on.
- Readers read loose refs before `packed-refs`: never a value older than one committed.
- No name breaking git's rules is written, taken from a loose file's name or read as a
  file; a ref file is read bounded and only when regular (`doctor` drops old bad names).
- A damaged line hides only the ref it names (`scan_packed`); writers read strictly
  (`read_packed`), so no write drops a damaged line.
"""

import contextlib
import os
import re
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Protocol

from gitsessions.store.errors import StoreBusy, StoreCorrupt
from gitsessions.store.refnames import all_keep_rules, breaks_rules, check
from gitsessions.store.storelock import PACKED_WRITER, flocked

HEADER = b"# pack-refs with: sorted \n"
INTERRUPTED = Path("gitsessions") / "interrupted"  # stale `packed-refs.lock`s set aside
KEEP_INTERRUPTED = 4
_SHA = re.compile(rb"^[0-9a-f]{40}$")
# a good line as `_parse` reads it, and a line neither empty, a comment nor a peel, each
# after the first found from the newline before it (a fast search, not a try at each byte)
_FIRST_LINE = re.compile(rb"([0-9a-f]{40}) (refs/[^\n]*)")
_REF_LINE = re.compile(rb"\n([0-9a-f]{40}) (refs/[^\n]*)(?=\n|\Z)")
_CONTENT = re.compile(rb"\n[^#^\n]")


def is_sha(value: bytes) -> bool:
    return bool(_SHA.fullmatch(value))


# One parse per version of the file: it is only ever replaced by a rename, so its inode,
# size and mtime (taken from the open file) name its content.
_parsed: dict[Path, tuple[tuple[int, int, int], dict[bytes, bytes]]] = {}


def read_packed(path: Path, strict: bool = True) -> dict[bytes, bytes]:
    """`{ref name: sha}` from a packed-refs file; `StoreCorrupt` on any bad line (with
    `strict=False` bad lines and names that break git's rules are skipped, for
    `doctor --repair`)."""
    return dict(_packed(path)) if strict else _parse(path, strict=False)


def _packed(path: Path) -> dict[bytes, bytes]:
    """`read_packed`'s parse, shared: never changed by a caller (one that only looks
    a ref up is spared the copy of a thousand-ref dict)."""
    return _parse(path, strict=True)


def _parse(path: Path, strict: bool) -> dict[bytes, bytes]:
    try:
        file = open(path, "rb")  # noqa: SIM115 - closed below, after fstat and read
    except FileNotFoundError:
        return {}
    with file:
        info = os.fstat(file.fileno())
        key = (info.st_ino, info.st_size, info.st_mtime_ns)
        cached = _parsed.get(path)
        if strict and cached is not None and cached[0] == key:
            return cached[1]
        data = file.read()
    whole = _well_formed(data) if strict else None
    if whole is not None:
        _parsed[path] = (key, whole)
        return whole
    refs: dict[bytes, bytes] = {}
    for number, line in enumerate(data.splitlines(), 1):
        if not line or line.startswith(b"#") or line.startswith(b"^"):
            continue
        sha, sep, name = line.partition(b" ")
        if not sep or not is_sha(sha) or not name.startswith(b"refs/"):
            if not strict:
                continue
            raise StoreCorrupt(f"{path} line {number} is not a ref line; run `gitsessions doctor`")
        if not strict and breaks_rules(name) is not None:
            continue
        refs[name] = sha
    if strict:
        _parsed[path] = (key, refs)
    return refs


def _well_formed(data: bytes) -> dict[bytes, bytes] | None:
    """The strict reading of `data` in two scans of it (100,000 refs in a fraction of the
    line-by-line time), when only `\\n` ends its lines, each is a good one and no name
    comes twice; else None, and the line-by-line reading names the bad line."""
    if b"\r" in data:
        return None
    first = data.partition(b"\n")[0]
    content = len(_CONTENT.findall(data))
    refs = {found[2]: found[1] for found in _REF_LINE.finditer(data)}
    if first and first[:1] not in (b"#", b"^"):  # a file without git's header line
        content += 1
        found = _FIRST_LINE.fullmatch(first)
        if found is None:
            return None
        refs = {found[2]: found[1], **refs}  # first, as read: a later line's value wins
    return refs if len(refs) == content else None  # every line a ref, each once


def check_packed(path: Path) -> None:
    """`StoreCorrupt` (one line) when a packed-refs file holds a bad line: what a ref
    move checks first, so a write refuses as a strict read does (dulwich's own parse
    raises an error of its own)."""
    _packed(path)


def scan_packed(path: Path) -> tuple[dict[bytes, bytes], list[tuple[int, bytes]]]:
    """`{ref name: sha}` of the good lines of a packed-refs file, and each bad one as
    `(line number, the ref it names or b"")`; for readers, never for a writer. The dict
    of a healthy file is the shared parse: never change it."""
    try:
        return _packed(path), []
    except StoreCorrupt:
        pass
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return {}, []
    refs: dict[bytes, bytes] = {}
    bad: list[tuple[int, bytes]] = []
    for number, line in enumerate(data.splitlines(), 1):
        if not line or line.startswith(b"#") or line.startswith(b"^"):
            continue
        sha, sep, name = line.partition(b" ")
        if not sep or not is_sha(sha) or not name.startswith(b"refs/"):
            bad.append((number, name if sep and name.startswith(b"refs/") else b""))
            continue
        refs[name] = sha
    return refs, bad


def read_loose(store_path: Path, under: bytes = b"refs/") -> dict[bytes, bytes]:
    """Every loose ref under `under` (a folder of `refs/`) holding a sha (symbolic refs
    and locks skipped)."""
    refs: dict[bytes, bytes] = {}
    top = store_path / os.fsdecode(under)
    for dirpath, _dirs, files in os.walk(top):
        for name in files:
            if name.endswith(".lock"):
                continue
            file = Path(dirpath) / name
            ref = os.fsencode(file.relative_to(store_path).as_posix())
            if breaks_rules(ref) is not None:
                continue  # `doctor` names it (`bad_names`)
            value = read_ref_file(file)
            if value is not None and _SHA.match(value):
                refs[ref] = value
    return refs


def read_ref_file(file: Path, limit: int = 4096) -> bytes | None:
    """A ref file's first `limit` bytes, stripped; None when it is not there or not a
    regular file (a folder, a FIFO, a device: never waited on, never read whole)."""
    try:
        fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, limit).strip()
    finally:
        os.close(fd)


def bad_names(store_path: Path) -> tuple[list[bytes], list[bytes]]:
    """The ref names that break git's rules: (those in `packed-refs`, the loose files
    under `refs/`), for `doctor`."""
    packed = [n for n in scan_packed(store_path / "packed-refs")[0] if breaks_rules(n)]
    loose: list[bytes] = []
    for dirpath, _dirs, files in os.walk(store_path / "refs"):
        for name in files:
            ref = os.fsencode((Path(dirpath) / name).relative_to(store_path).as_posix())
            if not name.endswith(".lock") and breaks_rules(ref) is not None:
                loose.append(ref)
    return sorted(packed), sorted(loose)


def unreadable_loose(store_path: Path, under: bytes = b"refs/") -> list[bytes]:
    """The loose ref files under `under` that hold neither a sha nor a symbolic ref
    (`ref: ...`): what they named is unknown (`read_loose` skips them)."""
    bad: list[bytes] = []
    for dirpath, _dirs, files in os.walk(store_path / os.fsdecode(under)):
        for name in files:
            if name.endswith(".lock"):
                continue
            file = Path(dirpath) / name
            try:
                with open(file, "rb") as handle:
                    value = handle.read(4096).strip()
            except (FileNotFoundError, IsADirectoryError):
                continue
            if not _SHA.match(value) and not value.startswith(b"ref: "):
                bad.append(os.fsencode(file.relative_to(store_path).as_posix()))
    return sorted(bad)


def fsync_dir(path: Path) -> None:
    """Make a folder's entries (a rename, a new file) durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def packed_lock(
    store_path: Path, retries: int = 40
) -> Iterator[Callable[[dict[bytes, bytes]], None]]:
    """Hold `packed-refs.lock` (and the `flock` every writer of ours holds with it:
    `storelock.PACKED_WRITER`); yields `commit(refs)`, which writes, fsyncs and
    renames the new file into place. Read `packed-refs` only while holding it. A
    `packed-refs.lock` found while holding the `flock` is stale (its writer died: the
    kernel released its `flock`): it is set aside (`set_aside`) and the write goes
    on, so a kill never leaves the next command stuck."""
    target = store_path / "packed-refs"
    lock = store_path / "packed-refs.lock"
    with flocked(store_path, PACKED_WRITER):
        fd = _create_lock(store_path, lock, retries)
        done = False

        def commit(refs: dict[bytes, bytes]) -> None:
            nonlocal done
            if not all_keep_rules(refs):
                for name in refs:
                    check(name)  # `BadRefName`: nothing is written
            body = HEADER + b"".join(
                sha + b" " + name + b"\n" for name, sha in sorted(refs.items())
            )
            view = memoryview(body)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
            os.close(fd)
            done = True
            os.replace(lock, target)
            fsync_dir(store_path)

        try:
            yield commit
        finally:
            if not done:
                os.close(fd)
                lock.unlink(missing_ok=True)


def _create_lock(store_path: Path, lock: Path, retries: int) -> int:
    """`packed-refs.lock`, created (O_EXCL) by the holder of the writers' `flock`."""
    for attempt in range(retries + 1):
        try:
            return os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            if attempt == 0 and set_aside(store_path):
                continue  # left by a writer that is gone
            if attempt == retries:  # held by something that takes no `flock` of ours
                raise StoreBusy(
                    f"{lock} stayed locked; if no other gitsessions is running, "
                    "run `gitsessions doctor --repair`"
                ) from None
            time.sleep(min(0.005 * 2 ** min(attempt, 6), 0.25))
    raise AssertionError("unreachable")


def set_aside(store_path: Path) -> bool:
    """Move `packed-refs.lock`, whose writer is gone (the caller holds the writers'
    `flock`), to `gitsessions/interrupted/` (the newest `KEEP_INTERRUPTED` kept), where
    `doctor` reads what that write was creating; False when there is none. The
    `packed-refs` in place is whole: a writer renames its lock over it or nothing."""
    folder = store_path / INTERRUPTED
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        os.replace(store_path / "packed-refs.lock", folder / f"packed-refs.{time.time_ns()}")
    except FileNotFoundError:
        return False
    for old in sorted(folder.glob("packed-refs.*"))[:-KEEP_INTERRUPTED]:
        old.unlink(missing_ok=True)
    return True


def recover_stale(store_path: Path) -> bool:
    """Set a stale `packed-refs.lock` aside (`set_aside`), unless its writer still runs
    (it holds the writers' `flock`); True when one was."""
    if not (store_path / "packed-refs.lock").exists():
        return False
    with flocked(store_path, PACKED_WRITER, wait=False) as held:
        return held and set_aside(store_path)


def writers_done(store_path: Path) -> None:
    """Wait until no `packed-refs` write is under way (one that started has renamed its
    file into place or died): a head recorded before this returns has its ref now,
    or never will (`doctor`)."""
    with flocked(store_path, PACKED_WRITER):
        pass


def unfinished(store_path: Path) -> dict[bytes, bytes]:
    """The refs an interrupted `packed-refs` write was writing (a stale lock, and those
    set aside): `{name: sha}`, for `doctor` to tell a session a killed pull was
    creating from one whose branch was lost."""
    folder = store_path / INTERRUPTED
    files = sorted(folder.glob("packed-refs.*")) if folder.is_dir() else []
    found: dict[bytes, bytes] = {}
    with flocked(store_path, PACKED_WRITER, wait=False) as held:
        if held:
            files.append(store_path / "packed-refs.lock")
        for file in files:
            found.update(_parse(file, strict=False))
    return found


def name_creating(store_path: Path, refs: dict[bytes, bytes]) -> None:
    """Instead of `commit`, while holding `packed_lock`: name in `packed-refs.lock` the
    refs about to be created as loose files, so a kill before they are leaves what
    `unfinished` reads (the lock is removed when the block ends, never renamed)."""
    body = b"".join(sha + b" " + name + b"\n" for name, sha in sorted(refs.items()))
    (store_path / "packed-refs.lock").write_bytes(HEADER + body)


def drop_unfinished(store_path: Path) -> None:
    """Forget the interrupted writes set aside (`doctor --repair` acted on them)."""
    folder = store_path / INTERRUPTED
    for file in sorted(folder.glob("packed-refs.*")) if folder.is_dir() else []:
        file.unlink(missing_ok=True)


def pack_refs(git: "RefLocker", prefix: bytes = b"refs/") -> int:
    """Pack every loose ref under `prefix`; returns how many loose files were removed."""
    store_path = git.path
    with packed_lock(store_path) as commit:
        packed = read_packed(store_path / "packed-refs")
        loose = {n: s for n, s in read_loose(store_path).items() if n.startswith(prefix)}
        if not loose:
            return 0
        commit({**packed, **loose})
    removed = 0
    for name, sha in loose.items():
        with git.ref_locked(name, wait=False) as held:
            if not held:
                continue  # a writer is moving it right now: it stays loose
            file = store_path / os.fsdecode(name)
            with contextlib.suppress(FileNotFoundError):
                if file.read_bytes().strip() == sha:
                    file.unlink()
                    removed += 1
    return removed


def current(store_path: Path, name: bytes) -> bytes | None:
    """A ref's value as git reads it: the loose file first, then `packed-refs`.
    `BadRefName` for a name that breaks git's rules: no file is read by it."""
    check(name)
    value = read_ref_file(store_path / os.fsdecode(name))
    if value is None:
        return _packed_value(store_path / "packed-refs", name)
    if not _SHA.match(value):
        raise StoreCorrupt(
            f"{store_path / os.fsdecode(name)} does not hold a commit id; run `gitsessions doctor`"
        )
    return value


def _packed_value(path: Path, name: bytes) -> bytes | None:
    """`name`'s value in `packed-refs`: a damaged line elsewhere does not hide it; one
    that names it, or names no ref at all (it may have been it), raises."""
    refs, bad = scan_packed(path)
    if name in refs:
        return refs[name]
    for number, named in bad:
        if named in (name, b""):
            raise StoreCorrupt(f"{path} line {number} is not a ref line; run `gitsessions doctor`")
    return None


def delete_ref(store_path: Path, name: bytes, expected: bytes) -> bool:
    """Delete `name` if it holds `expected`; the caller holds the branch's flock.

    As git does: the ref leaves `packed-refs` first (through its lock), the loose file
    after, so a concurrent `pack_refs` can never write it back."""
    if current(store_path, name) != expected:
        return False
    with packed_lock(store_path) as commit:
        packed = read_packed(store_path / "packed-refs")
        if name in packed:
            del packed[name]
            commit(packed)
    with contextlib.suppress(FileNotFoundError):
        (store_path / os.fsdecode(name)).unlink()
    return True


class RefLocker(Protocol):
    """What `pack_refs` needs of a store (implemented by `GitStore`)."""

    path: Path

    def ref_locked(
        self, name: bytes, wait: bool = True
    ) -> contextlib.AbstractContextManager[bool]: ...
