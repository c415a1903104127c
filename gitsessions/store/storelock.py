"""The store's locks, without dulwich: the store-wide `flock` on `gitsessions.lock`
(shared for writers, exclusive for purges), each branch's own `flock`
(`locks/<branch>`), which `repo.GitStore` takes (see `repo`'s invariants), the `flock`
whoever writes `packed-refs` holds (`locks/packed-refs`, `refpack`), and the private
file mode its files are made with (`remotes` too).

The store-wide lock is shared among writers, so holding it says nothing of another
writer's lock file; a `flock` held while a lock file exists does: the kernel releases
it when its process dies, so a lock file found while holding the `flock` its writer
held is stale."""

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def private_files() -> Iterator[None]:
    """Create files 0600 and directories 0700 inside the block (the umask is restored)."""
    previous = os.umask(0o077)
    try:
        yield
    finally:
        os.umask(previous)


@contextlib.contextmanager
def store_locked(store: Path, exclusive: bool = False) -> Iterator[None]:
    """Hold the store-wide lock: shared for writers, exclusive for purges."""
    fd = os.open(store / "gitsessions.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        with private_files():
            yield
    finally:
        os.close(fd)


PACKED_WRITER = "packed-refs"  # `locks/packed-refs`: no branch's lock file is named so


@contextlib.contextmanager
def flocked(store: Path, key: str, wait: bool = True) -> Iterator[bool]:
    """Hold `locks/<key>` exclusively; with `wait=False`, yields False at once (holding
    nothing) when another process holds it."""
    locks = store / "locks"
    locks.mkdir(mode=0o700, exist_ok=True)
    fd = os.open(locks / key, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


def ref_lock_name(name: bytes) -> str:
    """The file name of a branch's flock under `locks/`."""
    return os.fsdecode(name).replace("/", "%")


@contextlib.contextmanager
def ref_locked(store: Path, name: bytes, wait: bool = True) -> Iterator[bool]:
    """Hold the branch's own flock; a dulwich `<ref>.lock` found now is stale.
    With `wait=False`, yields False at once (holding nothing) when it is taken."""
    with flocked(store, ref_lock_name(name), wait) as held:
        if held:
            with contextlib.suppress(FileNotFoundError):
                (store / (os.fsdecode(name) + ".lock")).unlink()
        yield held
