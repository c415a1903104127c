"""Session refs read from the files of `store.git`, without dulwich: what `list` and
`info` need on a warm catalog (an id resolved, each session's head commit).

Invariants:
- Loose ref files are read first and `packed-refs` after, as git does (see
  `refpack`): a ref is always found, with a value no older than when the read started.
- `StoreRefs.open` answers only for a store that is plainly there and of this build's
  format (its `config` says `formatVersion = FORMAT`); for anything else (no store yet,
  an older or newer format, a config it cannot read) it returns None and the caller
  opens the full `SessionStore`, which creates, upgrades or refuses as it always did.
- `SessionStore` answers `ids`, `exists` and `resolve` through the same functions, so
  both give the same answers and the same errors.
"""

import os
from collections.abc import Callable
from pathlib import Path

from gitsessions.store.errors import AmbiguousSessionId, SessionNotFound, StoreCorrupt
from gitsessions.store.formats import FORMAT
from gitsessions.store.refpack import current, is_sha, read_packed
from gitsessions.values.ids import check_prefix, is_session_id
from gitsessions.values.plural import plural

SESSION_REF_PREFIX = b"refs/heads/sessions/"


def ref_name(session_id: str) -> bytes:
    assert is_session_id(session_id), session_id
    return SESSION_REF_PREFIX + session_id.encode()


def session_refs(store_path: Path) -> dict[bytes, bytes]:
    """`{session id (bytes): head commit}` for every session branch.

    Loose files are read first and `packed-refs` after, as git does: a concurrent
    `pack_refs` renames the new `packed-refs` into place before it deletes a loose
    file, so a ref is always found in one of the two with a value no older than the
    one it had when we started. Several times faster than dulwich's generic walk at
    10,000 sessions."""
    prefix = SESSION_REF_PREFIX
    loose: dict[bytes, bytes] = {}
    folder = store_path / os.fsdecode(prefix)
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        names = []
    for name in names:
        if name.endswith(".lock"):
            continue
        try:
            with open(folder / name, "rb") as file:
                sha = file.read(64).strip()
        except (FileNotFoundError, IsADirectoryError):
            continue  # packed and deleted meanwhile, or not a branch of ours
        if not is_sha(sha):
            raise StoreCorrupt(
                f"{folder / name} does not hold a commit id; run `gitsessions doctor`"
            )
        loose[os.fsencode(name)] = sha
    refs = {
        name[len(prefix) :]: sha
        for name, sha in read_packed(store_path / "packed-refs").items()
        if name.startswith(prefix)
    }
    refs.update(loose)
    return refs


def session_ids(store_path: Path) -> dict[str, bytes]:
    """`{session id: head commit}` for every session (names that are no id skipped)."""
    return {k.decode(): v for k, v in session_refs(store_path).items() if is_session_id(k.decode())}


def resolve_id(
    text: str, ids: Callable[[], dict[str, bytes]], exists: Callable[[str], bool]
) -> str:
    """The full id named by an id or unique prefix."""
    prefix = check_prefix(text)
    if len(prefix) == 32:
        if not exists(prefix):
            raise SessionNotFound(f"no session {prefix}")
        return prefix
    matches = sorted(i for i in ids() if i.startswith(prefix))
    if not matches:
        raise SessionNotFound(f"no session matches {prefix!r}")
    if len(matches) > 1:
        shown = ", ".join(m[:12] for m in matches[:5])
        raise AmbiguousSessionId(
            f"{prefix!r} matches {plural(len(matches), 'session')} ({shown}); type more characters"
        )
    return matches[0]


def plain_format(config: bytes) -> int | None:
    """`gitsessions.formatVersion` of a git config file, when it is written plainly (one
    `[gitsessions]` section, one `formatVersion = N` line); None otherwise."""
    section = b""
    found: int | None = None
    for raw in config.splitlines():
        line = raw.strip()
        if not line or line.startswith((b"#", b";")):
            continue
        if line.startswith(b"["):
            section = line.lower()
            continue
        key, sep, value = line.partition(b"=")
        if section == b"[gitsessions]" and key.strip().lower() == b"formatversion":
            if not sep or found is not None or not value.strip().isdigit():
                return None
            found = int(value.strip())
    return found


class StoreRefs:
    """The refs of `<home>/store.git`, read-only: ids, head commits, a prefix resolved."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.path = home / "store.git"

    @classmethod
    def open(cls, home: Path) -> "StoreRefs | None":
        """The refs of a store that is there and of this build's format, else None."""
        path = home / "store.git"
        try:
            config = (path / "config").read_bytes()
        except OSError:
            return None
        if not (path / "HEAD").is_file() or plain_format(config) != FORMAT:
            return None
        return cls(home)

    def ids(self) -> dict[str, bytes]:
        return session_ids(self.path)

    def head_commit(self, session_id: str) -> bytes | None:
        return current(self.path, ref_name(session_id))

    def exists(self, session_id: str) -> bool:
        return self.head_commit(session_id) is not None

    def resolve(self, text: str) -> str:
        return resolve_id(text, self.ids, self.exists)
