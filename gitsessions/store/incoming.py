"""A fetch's quarantine: stock git fetches into a repository of objects only, beside the
store, and what came moves into the store's pack directory once it is checked.

Why: `git fetch` into the store walks every ref of it (`mark_complete_local_refs`, the
connectivity check's `rev-list --not --all`), 100,000 at 50,000 sessions, however few
sessions come. The quarantine's refs are the commits offered as common ground alone
(`tips`), the store's objects are its alternate (nothing is fetched twice), and the
store's refs are not offered through it (`core.alternateRefsCommand` lists none), so
the walks are in proportion to what comes. git's own receive quarantine works so.

Invariants:
- One quarantine a fetch, `store.git/gitsessions/incoming-<pid>-<random>/`, held by its
  own `flock` (`locks/incoming-...`, taken before the directory is made); removed when
  the fetch ends, or by the next one (or `gc`) when its `flock` is free: a killed pull
  leaves nothing behind for long.
- What came enters the store only through `admit`: each pack renamed into
  `objects/pack` (its index last: a pack without one is not read, and `gc` drops it),
  the directory synced; a kill meanwhile leaves objects no ref names (the next pull
  fetches what it lacks, `gc` purges the rest). No ref of the store is written here.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
from collections.abc import Iterable, Iterator
from pathlib import Path

from gitsessions.store.refpack import fsync_dir
from gitsessions.store.storelock import flocked

PREFIX = "incoming-"
TIP_REF = b"refs/tips/"  # a tip's ref in the quarantine: `refs/tips/<n>`


@contextlib.contextmanager
def quarantine(store: Path, tips: Iterable[bytes] = ()) -> Iterator[Path]:
    """A repository of no objects of its own, the store's objects its alternate, whose
    only refs are `tips` (commits the store holds); removed when the block ends."""
    _sweep(store)
    name = f"{PREFIX}{os.getpid()}-{secrets.token_hex(4)}"
    with flocked(store, name) as held:
        assert held  # a fresh name: no one else holds it
        path = store / "gitsessions" / name
        try:
            _make(path, store, sorted(set(tips)))
            yield path
        finally:
            shutil.rmtree(path, ignore_errors=True)
            with contextlib.suppress(OSError):
                (store / "locks" / name).unlink()


def _make(path: Path, store: Path, tips: list[bytes]) -> None:
    (path / "objects" / "pack").mkdir(mode=0o700, parents=True)
    (path / "objects" / "info").mkdir(mode=0o700)
    (path / "refs").mkdir(mode=0o700)
    (path / "HEAD").write_bytes(b"ref: refs/heads/none\n")
    (path / "config").write_bytes(b"[core]\n\trepositoryformatversion = 0\n\tbare = true\n")
    alternate = os.fsencode((store / "objects").resolve())
    (path / "objects" / "info" / "alternates").write_bytes(alternate + b"\n")
    lines = b"".join(b"%s %s%d\n" % (sha, TIP_REF, n) for n, sha in enumerate(tips))
    (path / "packed-refs").write_bytes(b"# pack-refs with: peeled fully-peeled sorted \n" + lines)


def _sweep(store: Path) -> None:
    """Remove the quarantines whose fetch is gone (their `flock` free)."""
    with contextlib.suppress(FileNotFoundError):
        for entry in os.listdir(store / "gitsessions"):
            if not entry.startswith(PREFIX):
                continue
            with flocked(store, entry, wait=False) as free:
                if free:
                    shutil.rmtree(store / "gitsessions" / entry, ignore_errors=True)
                    with contextlib.suppress(OSError):
                        (store / "locks" / entry).unlink()


def admit(path: Path, store: Path) -> int:
    """Move what the fetch into the quarantine `path` wrote into the store: its packs
    (the data first, the index last) and any loose object; how many files moved."""
    moved = 0
    pack_dir = store / "objects" / "pack"
    came = path / "objects" / "pack"
    for index in sorted(came.glob("pack-*.idx")):
        if (pack_dir / index.name).exists():
            continue  # the same pack (named by its content) is there already
        parts = sorted(came.glob(f"{index.stem}.*"), key=lambda p: p.suffix == ".idx")
        for part in parts:
            if part.suffix in (".pack", ".rev", ".idx", ".bitmap"):
                os.replace(part, pack_dir / part.name)
                moved += 1
    for fanout in sorted((path / "objects").iterdir()):
        if len(fanout.name) == 2 and fanout.is_dir():
            target = store / "objects" / fanout.name
            target.mkdir(mode=0o700, exist_ok=True)
            for loose in fanout.iterdir():
                if not (target / loose.name).exists():
                    os.replace(loose, target / loose.name)
                    moved += 1
            fsync_dir(target)
    if moved:
        fsync_dir(pack_dir)
    return moved
