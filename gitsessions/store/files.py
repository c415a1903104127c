"""Files a session keeps beside its records (images of tool results): `files/<sha256>.<ext>`.

Invariants:
- A name is the SHA-256 of its bytes and its media type's extension: the same bytes are
  kept once, and a name never holds other bytes; a message refers to a file by name.
- Only a name of that shape holding the bytes it names, at most `MAX_BYTES`, is written
  (`check`, else `BadFile`), by a `Change`'s `files`, checked before anything is written.
- A commit keeps the base tree's `files/` and adds to it; nothing removes a file.
- Files are bytes: the redaction gate does not scan them (their names and the messages
  naming them it does).
- A writer holds at most `MAX_RECORD` bytes of files a record and commits at
  `MAX_COMMIT`: an import's memory stays bounded.
"""

import hashlib
import re
from collections.abc import Callable, Mapping

from dulwich.objects import Blob, ShaFile, Tree

from gitsessions.store.chunks import DIR_MODE, FILE_MODE
from gitsessions.store.errors import StoreError

FILES = b"files"
EXTENSIONS = {"image/png": "png", "image/jpeg": "jpg", "image/gif": "gif", "image/webp": "webp"}
NAME = re.compile(r"files/([0-9a-f]{64})\.(png|jpg|gif|webp)")
MAX_BYTES = 5 * 1024 * 1024  # one file, at most
MAX_RECORD = 16 * 1024 * 1024  # the files of one record, at most
MAX_COMMIT = 32 * 1024 * 1024  # a writer commits once it holds this much of new files


class BadFile(StoreError):
    """A file whose name is not of the layout or does not name its bytes."""


def name_of(data: bytes, media_type: str) -> str:
    """The name `data` of `media_type` (one of `EXTENSIONS`) is kept under."""
    return f"files/{hashlib.sha256(data).hexdigest()}.{EXTENSIONS[media_type]}"


def check(name: str, data: bytes) -> None:
    """`BadFile` unless `name` is of the layout, names `data`, and `data` is not too big."""
    match = NAME.fullmatch(name)
    if match is None:
        raise BadFile(f"{name[:80]!r} is not the name of a session's file")
    if len(data) > MAX_BYTES:
        raise BadFile(f"{name}: {len(data)} bytes, over the {MAX_BYTES // 2**20} MiB a file holds")
    if hashlib.sha256(data).hexdigest() != match.group(1):
        raise BadFile(f"{name}: its bytes have another SHA-256")


def added(root: Tree, get: Callable[[bytes], Tree], files: Mapping[str, bytes]) -> list[ShaFile]:
    """`files` added to `root`'s `files/` tree (its other entries kept, read through
    `get`): the new blobs and the new `files/` tree, which `root` now names."""
    tree = Tree()
    if FILES in root:
        for item in get(root[FILES][1]).items():
            tree.add(item.path, item.mode, item.sha)
    new: list[ShaFile] = []
    for name, data in files.items():
        check(name, data)
        entry = name.split("/", 1)[1].encode()
        if entry in tree:  # the same name holds the same bytes
            continue
        blob = Blob.from_string(data)
        new.append(blob)
        tree.add(entry, FILE_MODE, blob.id)
    if not new:
        return []
    new.append(tree)
    root.add(FILES, DIR_MODE, tree.id)
    return new


def read(
    get_tree: Callable[[bytes], Tree], blob: Callable[[bytes], bytes], root: bytes, name: str
) -> bytes | None:
    """The bytes of file `name` in the session tree `root`; None when it holds none."""
    if NAME.fullmatch(name) is None:
        return None
    top = get_tree(root)
    if FILES not in top:
        return None
    tree = get_tree(top[FILES][1])
    entry = name.split("/", 1)[1].encode()
    return blob(tree[entry][1]) if entry in tree else None
