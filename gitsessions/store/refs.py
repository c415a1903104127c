"""Session refs read from the files of `store.git` without dulwich's repository: what
`list` and `info` need on a warm catalog.

Invariants:
- Loose files first, then `packed-refs`, as git does: a value no older than the read.
- `StoreRefs.open` answers only for an existing store of this build's format (config
  read by dulwich's parser), else None and the caller opens `SessionStore`; both answer
  `ids`, `exists`, `resolve` through the same functions, with the same errors.
- One damaged ref hides only itself: `scan` gives the good refs and names each damaged
  one (`DamagedRef`); `ids` stays strict (a write or sync must not act on a partial view);
  a prefix resolves among both, so a damaged session keeps its one-line error.
"""

import os
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from dulwich.config import ConfigFile

from gitsessions.store.errors import AmbiguousSessionId, SessionNotFound, StoreCorrupt
from gitsessions.store.formats import FORMAT
from gitsessions.store.refnames import is_id, is_session_branch
from gitsessions.store.refpack import current, is_sha, read_packed, scan_packed
from gitsessions.values.ids import check_prefix, is_session_id
from gitsessions.values.plural import plural

SESSION_REF_PREFIX = b"refs/heads/sessions/"


def ref_name(session_id: str) -> bytes:
    assert is_session_id(session_id), session_id
    return SESSION_REF_PREFIX + session_id.encode()


class DamagedRef(NamedTuple):
    """A session ref that cannot be read: `name` is the ref (`refs/heads/sessions/...`),
    or `packed-refs line N` for a line that names no ref; `why` says what is wrong."""

    name: str
    why: str


class ScannedRefs(NamedTuple):
    """The session refs that could be read (`{session id: head commit}`), and the others."""

    ids: dict[str, bytes]
    damaged: list[DamagedRef]


def _loose_session_refs(store_path: Path) -> tuple[dict[bytes, bytes], list[str]]:
    """The loose session refs holding a sha, and the names of the files that hold none."""
    loose: dict[bytes, bytes] = {}
    bad: list[str] = []
    folder = store_path / os.fsdecode(SESSION_REF_PREFIX)
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
        if is_sha(sha):
            loose[os.fsencode(name)] = sha
        else:
            bad.append(name)
    return loose, sorted(bad)


def scan_session_ids(store_path: Path) -> ScannedRefs:
    """Every session ref that can be read, and each damaged one named, as git's
    `for-each-ref` warns of a broken ref and lists the rest. A damaged loose file hides
    the ref entirely (its packed value may be older than what it held)."""
    prefix = SESSION_REF_PREFIX
    loose, bad_loose = _loose_session_refs(store_path)
    damaged = [
        DamagedRef((prefix + os.fsencode(n)).decode(errors="replace"), "does not hold a commit id")
        for n in bad_loose
    ]
    packed, bad_lines = scan_packed(store_path / "packed-refs")
    for number, named in bad_lines:
        if named.startswith(prefix):
            why = f"its packed-refs line {number} does not hold a commit id"
            damaged.append(DamagedRef(named.decode(errors="replace"), why))
        elif not named:
            damaged.append(DamagedRef(f"packed-refs line {number}", "not a ref line"))
    hidden = {os.fsencode(n) for n in bad_loose}
    start = len(SESSION_REF_PREFIX)
    ids = {
        name[start:].decode(): sha
        for name, sha in packed.items()
        if is_session_branch(name) and name[start:] not in hidden
    }
    ids.update((k.decode(), v) for k, v in loose.items() if is_session_id(k.decode()))
    return ScannedRefs(ids, damaged)


def damaged_id(damage: DamagedRef) -> str | None:
    """The session id a damaged ref names, if it names one."""
    sid = damage.name.removeprefix(SESSION_REF_PREFIX.decode())
    return sid if sid != damage.name and is_session_id(sid) else None


def session_refs(store_path: Path) -> dict[bytes, bytes]:
    """`{session id (bytes): head commit}` for every session branch.

    Loose files are read first and `packed-refs` after, as git does: a concurrent
    `pack_refs` renames the new `packed-refs` into place before it deletes a loose
    file, so a ref is always found in one of the two with a value no older than the
    one it had when we started. Several times faster than dulwich's generic walk at
    10,000 sessions."""
    prefix = SESSION_REF_PREFIX
    loose, bad = _loose_session_refs(store_path)
    if bad:
        raise StoreCorrupt(
            f"{store_path / os.fsdecode(prefix) / bad[0]} does not hold a commit id; "
            "run `gitsessions doctor`"
        )
    refs = {
        name[len(prefix) :]: sha
        for name, sha in read_packed(store_path / "packed-refs").items()
        if name.startswith(prefix)
    }
    refs.update(loose)
    return refs


def session_ids(store_path: Path) -> dict[str, bytes]:
    """`{session id: head commit}` for every session (names that are no id skipped), as
    `session_refs` reads them (an id checked by its length and one `translate`, not a
    regex each: 50,000 a pull)."""
    return {tail.decode(): sha for tail, sha in session_refs(store_path).items() if is_id(tail)}


def resolve_id(text: str, scan: Callable[[], ScannedRefs], exists: Callable[[str], bool]) -> str:
    """The full id named by an id or unique prefix (a damaged session's too: reading it
    then says what is wrong)."""
    prefix = check_prefix(text)
    if len(prefix) == 32:
        if not exists(prefix):
            raise SessionNotFound(f"no session {prefix}")
        return prefix
    found = scan()
    named = {damaged_id(d) for d in found.damaged} - {None}
    matches = sorted(i for i in {*found.ids, *named} if i is not None and i.startswith(prefix))
    if not matches:
        unnamed = [d.name for d in found.damaged if not d.name.startswith("refs/")]
        if unnamed:  # a line naming no ref may have been this session's
            raise StoreCorrupt(
                f"no session matches {prefix!r}, and store.git/{unnamed[0]} cannot be read; "
                "run `gitsessions doctor`"
            )
        raise SessionNotFound(f"no session matches {prefix!r}")
    if len(matches) > 1:
        shown = ", ".join(m[:12] for m in matches[:5])
        raise AmbiguousSessionId(
            f"{prefix!r} matches {plural(len(matches), 'session')} ({shown}); type more characters"
        )
    return matches[0]


def store_format(path: Path) -> int | None:
    """`gitsessions.formatVersion` of the store at `path`; None when its config is not
    there, cannot be parsed, or does not say."""
    try:
        value = ConfigFile.from_path(str(path / "config")).get((b"gitsessions",), b"formatVersion")
    except (OSError, ValueError, KeyError):
        return None
    return int(value) if value.isdigit() else None


class StoreRefs:
    """The refs of `<home>/store.git`, read-only: ids, head commits, a prefix resolved."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.path = home / "store.git"

    @classmethod
    def open(cls, home: Path) -> "StoreRefs | None":
        """The refs of a store that is there and of this build's format, else None."""
        path = home / "store.git"
        if not (path / "HEAD").is_file() or store_format(path) != FORMAT:
            return None
        return cls(home)

    def ids(self) -> dict[str, bytes]:
        return session_ids(self.path)

    def scan(self) -> ScannedRefs:
        return scan_session_ids(self.path)

    def head_commit(self, session_id: str) -> bytes | None:
        return current(self.path, ref_name(session_id))

    def exists(self, session_id: str) -> bool:
        return self.head_commit(session_id) is not None

    def resolve(self, text: str) -> str:
        return resolve_id(text, self.scan, self.exists)
