"""What a dulwich fetch brings (stock git missing) is checked before it joins the store.

Invariants:
- The pack lands in a quarantine, `store.git/gitsessions/incoming-<random>/`, an object
  directory of its own whose alternate is the store's (so a thin pack resolves against
  what the store has); nothing is written into `store.git/objects` meanwhile.
- Every object that came is read and checked (`check`): dulwich's own object checks
  (commit headers, tree order, duplicate entries, modes) and, for each tree entry, a
  name of the session layout (`[A-Za-z0-9][A-Za-z0-9._-]*`: never `.`, `..`, `.git`
  in any case, a `/`, `git~1`) and a mode the store writes (file or directory). One bad
  object refuses the whole fetch (`Refused`) and the quarantine is removed: no ref can
  name what failed, and `git fsck --strict` of the store stays clean.
- Only then are its files moved into `store.git/objects` (fsynced first; a pack before
  its index, as dulwich moves its own), and the quarantine goes whatever happens (one
  a kill left behind goes at the next `gc`, which holds the exclusive lock).
  Memory stays bounded: objects are read one at a time from the files.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitsessions.store.errors import StoreError
from gitsessions.store.rawobjects import parse_tree

if TYPE_CHECKING:
    from dulwich.objects import ShaFile

    from gitsessions.store.repo import GitStore

NAME = re.compile(rb"[A-Za-z0-9][A-Za-z0-9._-]{0,254}")
MODES = frozenset({0o100644, 0o040000})  # what the session layout holds


class Refused(StoreError):
    """An object that came failed the checks; nothing of that fetch joined the store."""


def check_entries(tree_id: str, raw: bytes) -> None:
    """A tree's entries, each a name and mode of the session layout (else `Refused`)."""
    for entry in parse_tree(raw).items():
        name = entry.path
        shown = name.decode("utf-8", "replace")
        if not NAME.fullmatch(name) or name.lower().rstrip(b". ") in (b".git", b"git~1"):
            raise Refused(f"object {tree_id[:12]}: tree entry {shown!r} is not a session file")
        if entry.mode not in MODES:
            raise Refused(f"object {tree_id[:12]}: tree entry {shown!r} has mode {entry.mode:o}")


def check(obj: ShaFile) -> None:
    """One object that came: dulwich's own checks, then a tree's entries."""
    from dulwich.errors import ObjectFormatException

    sha = obj.id.decode()
    try:
        obj.check()
    except ObjectFormatException as error:
        raise Refused(f"object {sha[:12]}: {' '.join(str(error).split())[:200]}") from None
    if obj.type_name == b"tree":
        check_entries(sha, obj.as_raw_string())


class _Target:
    """The store's repository as a fetch sees it, but objects go to `object_store` (the
    quarantine); negotiation (the graph walker) still offers what the store has."""

    def __init__(self, repo: Any, object_store: Any) -> None:
        self._repo = repo
        self.object_store = object_store

    def __getattr__(self, name: str) -> Any:
        return getattr(self._repo, name)


def fetch(
    git: GitStore,
    client: Any,
    path: Any,
    determine: Callable[..., list[bytes]],
    progress: Callable[[bytes], None] | None,
) -> None:
    """`client.fetch` of what `determine` wants, into a quarantine: checked, then moved
    into the store (`Refused` when an object fails, with nothing moved)."""
    from dulwich.object_store import DiskObjectStore

    parent = git.path / "gitsessions"
    parent.mkdir(mode=0o700, exist_ok=True)
    place = Path(tempfile.mkdtemp(prefix="incoming-", dir=parent))
    try:
        objects = place / "objects"
        shared = getattr(git.repo.object_store, "shared_perm", None)
        store = DiskObjectStore.init(str(objects), shared_perm=shared)
        try:
            store.add_alternate_path(str((git.path / "objects").resolve()))
            client.fetch(
                path, _Target(git.repo, store), determine_wants=determine, progress=progress
            )
            try:
                _check_all(store, objects)
            except Refused as error:
                raise Refused(f"the remote's objects fail the checks ({error})") from None
        finally:
            store.close()
        _move_in(objects, git.path / "objects")
    finally:
        shutil.rmtree(place, ignore_errors=True)
    git.rescan()


def _check_all(store: Any, objects: Path) -> None:
    """Every object of the quarantine's packs and loose files (never its alternate's)."""
    from dulwich.objects import ShaFile

    for pack in store.packs:
        for obj in pack.iterobjects():
            check(obj)
    for loose in _loose(objects):
        check(ShaFile.from_path(str(loose)))


def _loose(objects: Path) -> Iterator[Path]:
    for folder in sorted(objects.glob("[0-9a-f][0-9a-f]")):
        yield from sorted(p for p in folder.iterdir() if not p.name.startswith("tmp"))


def _fsynced(path: Path) -> Path:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    return path


def _move_in(objects: Path, into: Path) -> None:
    """Each checked file into the store's object directory: loose objects, then each
    pack before its index; the directories fsynced after."""
    touched: set[Path] = set()
    for loose in _loose(objects):
        folder = into / loose.parent.name
        folder.mkdir(mode=0o700, exist_ok=True)
        if not (folder / loose.name).exists():
            os.replace(_fsynced(loose), folder / loose.name)
            touched.add(folder)
    for index in sorted((objects / "pack").glob("pack-*.idx")):
        pack = index.with_suffix(".pack")
        if (into / "pack" / index.name).exists():
            continue  # the store has this very pack already
        os.replace(_fsynced(pack), into / "pack" / pack.name)
        os.replace(_fsynced(index), into / "pack" / index.name)
        touched.add(into / "pack")
    for folder in touched:
        _fsynced(folder)
