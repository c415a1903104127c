"""A session's files (`store.files`) in an export document, and the errors of a document.

Invariants:
- Export: each file travels once, base64, in the first record naming it, added after the
  record's redaction; a name with no file travels as a name. Memory holds one record's.
- Import is hostile input: a record's `files` are checked as read (layout names, valid
  base64, at most `MAX_BYTES`, SHA-256 matching the name, `MAX_RECORD` a record), else
  `InvalidExport` before anything is written; the store checks each again.
"""

import base64
import binascii
from collections.abc import Mapping
from typing import Any

from gitsessions.store.files import MAX_BYTES, MAX_RECORD, BadFile, check
from gitsessions.store.sessions import Head, SessionStore
from gitsessions.values.errors import InvalidInput


class InvalidExport(InvalidInput):
    """An export document that cannot be imported."""


def attach(
    store: SessionStore, head: Head, record: dict[str, Any], sent: set[str]
) -> dict[str, Any]:
    """`record` with the files its `source.files` names and no earlier record carried
    (`sent`, which grows) under `files`; `record` itself when there are none."""
    source = record.get("source")
    names = source.get("files") if isinstance(source, dict) else None
    carried: dict[str, str] = {}
    for name in names if isinstance(names, list) else []:
        if not isinstance(name, str) or name in sent:
            continue
        data = store.read_file(head, name)
        if data is not None:
            sent.add(name)
            carried[name] = base64.b64encode(data).decode("ascii")
    return {**record, "files": carried} if carried else record


def held(record: Mapping[str, Any]) -> int:
    """About how many bytes the files of a checked record hold."""
    files = record.get("files") or {}
    return sum(len(data) * 3 // 4 for data in files.values())


def decoded(where: str, files: Any) -> dict[str, bytes]:
    """A record's `files` (name -> base64) as name -> bytes, checked whole."""
    if not isinstance(files, dict):
        raise InvalidExport(f"{where}: 'files' must be an object of names and base64")
    out: dict[str, bytes] = {}
    total = 0
    for name, text in files.items():
        if not isinstance(text, str) or len(text) > (MAX_BYTES + 2) // 3 * 4:
            raise InvalidExport(f"{where}: files[{name[:80]!r}] is not base64 of a file's size")
        try:
            data = base64.b64decode(text, validate=True)
            check(name, data)
        except (binascii.Error, ValueError):
            raise InvalidExport(f"{where}: files[{name[:80]!r}] is not base64") from None
        except BadFile as error:
            raise InvalidExport(f"{where}: {error}") from None
        total += len(data)
        if total > MAX_RECORD:
            raise InvalidExport(
                f"{where}: over the {MAX_RECORD // 2**20} MiB of files a record holds"
            )
        out[name] = data
    return out
