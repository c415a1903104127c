"""Packing loose refs into `packed-refs` the way git does, so no crash can lose a ref.

Invariants:
- The new `packed-refs` is written whole into `packed-refs.lock` (taken with O_EXCL),
  fsynced, and renamed into place before any loose ref file is touched. A kill at any
  moment leaves every ref readable: either still loose, or already in the new file.
- A loose ref is deleted only under its branch's flock (the one every writer of ours
  holds while it moves a ref), and only while it still holds the value that was packed.
  A ref that moved meanwhile stays loose, with its newer value.
- Readers look at loose refs first and at `packed-refs` after (see `GitStore`), so a
  reader never sees a value older than one already committed when it started.
- A damaged `packed-refs` line (`scan_packed`) hides only the ref it names: a lookup
  of another ref still answers, one of that ref (or any lookup the file cannot answer,
  when a line names no ref at all) raises `StoreCorrupt`. Whatever writes the file
  reads it strictly (`read_packed`), so no write ever drops a damaged line.
(dulwich's `add_packed_refs` deletes the loose files first and writes `packed-refs`
after: a kill in between drops every loose ref. It is never called here.)
"""

import contextlib
import os
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Protocol

from gitsessions.store.errors import StoreBusy, StoreCorrupt

HEADER = b"# pack-refs with: sorted \n"
_SHA = re.compile(rb"^[0-9a-f]{40}$")


def is_sha(value: bytes) -> bool:
    return bool(_SHA.fullmatch(value))


# One parse per version of the file: it is only ever replaced by a rename, so its inode,
# size and mtime (taken from the open file) name its content.
_parsed: dict[Path, tuple[tuple[int, int, int], dict[bytes, bytes]]] = {}


def read_packed(path: Path, strict: bool = True) -> dict[bytes, bytes]:
    """`{ref name: sha}` from a packed-refs file; `StoreCorrupt` on any bad line (with
    `strict=False` bad lines are skipped, for `doctor --repair`)."""
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
    refs: dict[bytes, bytes] = {}
    for number, line in enumerate(data.splitlines(), 1):
        if not line or line.startswith(b"#") or line.startswith(b"^"):
            continue
        sha, sep, name = line.partition(b" ")
        if not sep or not is_sha(sha) or not name.startswith(b"refs/"):
            if not strict:
                continue
            raise StoreCorrupt(f"{path} line {number} is not a ref line; run `gitsessions doctor`")
        refs[name] = sha
    if strict:
        _parsed[path] = (key, refs)
    return refs


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
            try:
                value = file.read_bytes().strip()
            except (FileNotFoundError, IsADirectoryError):
                continue
            if _SHA.match(value):
                refs[os.fsencode(file.relative_to(store_path).as_posix())] = value
    return refs


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


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def packed_lock(
    store_path: Path, retries: int = 40
) -> Iterator[Callable[[dict[bytes, bytes]], None]]:
    """Hold `packed-refs.lock`; yields `commit(refs)`, which writes, fsyncs and renames
    the new file into place. Read `packed-refs` only while holding it."""
    target = store_path / "packed-refs"
    lock = store_path / "packed-refs.lock"
    for attempt in range(retries + 1):
        try:
            fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            break
        except FileExistsError:
            if attempt == retries:
                raise StoreBusy(
                    f"{lock} stayed locked; if no other gitsessions is running, "
                    "run `gitsessions doctor --repair`"
                ) from None
            time.sleep(min(0.005 * 2 ** min(attempt, 6), 0.25))
    done = False

    def commit(refs: dict[bytes, bytes]) -> None:
        nonlocal done
        body = HEADER + b"".join(sha + b" " + name + b"\n" for name, sha in sorted(refs.items()))
        view = memoryview(body)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
        os.close(fd)
        done = True
        os.replace(lock, target)
        _fsync_dir(store_path)

    try:
        yield commit
    finally:
        if not done:
            os.close(fd)
            lock.unlink(missing_ok=True)


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
    """A ref's value as git reads it: the loose file first, then `packed-refs`."""
    try:
        value = (store_path / os.fsdecode(name)).read_bytes().strip()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
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
