"""Opening `store.git`'s objects and refs with dulwich but without its `Repo`, whose
import, config parser and worktree machinery cost every writing command (each `exec`
turn) some 5 ms.

Invariant: only a store whose config has the shape `GitStore` writes (the sections,
keys and values in `EXPECTED`, plus `[remote "..."]` sections, which only the sync code
reads, through dulwich's `ConfigFile`: `remoteconfig`) is opened here, with the settings
dulwich's `Repo` derives from that config: the defaults, and `sharedRepository = 0600` as
dulwich parses it. Anything else (another key or value, quoting, includes, a
worktree's `commondir`) gives None, and the caller opens dulwich's `Repo` as before.
"""

from pathlib import Path
from typing import NamedTuple

from dulwich.file import SharedPerm
from dulwich.object_store import DEFAULT_MAX_TREE_DEPTH, DiskObjectStore
from dulwich.refs import DiskRefsContainer

# {section: {key: the values it may have}}, lowercased as git compares them; a key may
# be absent (dulwich's default then applies, as it would through `Repo`)
EXPECTED: dict[bytes, dict[bytes, tuple[bytes, ...]]] = {
    b"core": {
        b"repositoryformatversion": (b"0",),
        b"filemode": (b"true",),
        b"bare": (b"true",),
        b"sharedrepository": (b"0600",),
        b"logallrefupdates": (b"false",),
    },
    b"gc": {b"auto": (b"0",)},
    b"gitsessions": {b"formatversion": ()},  # any number: `formats.check_store` judges it
}
PLAIN = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-")
OWNER_ONLY = SharedPerm(tweak=0o600, replace=True)  # dulwich's parse of "0600"


class Opened(NamedTuple):
    objects: DiskObjectStore
    refs: DiskRefsContainer
    format: str | None  # gitsessions.formatVersion, None when the config has none


def plain_settings(config: bytes) -> dict[tuple[bytes, bytes], bytes] | None:
    """`{(section, key): value}` of a config in the shape `EXPECTED` allows (the lines
    of remotes skipped), else None."""
    settings: dict[tuple[bytes, bytes], bytes] = {}
    section: bytes | None = b""  # None: inside a remote
    for raw in config.splitlines():
        line = raw.strip()
        if not line or line.startswith((b"#", b";")):
            continue
        if line.startswith(b"["):
            name = line.lower()
            if name.startswith(b'[remote "') and name.endswith(b'"]'):
                section = None
                if not set(name[9:-2]).isdisjoint(b'"\\'):
                    return None
                continue
            section = name[1:-1]
            if not name.endswith(b"]") or section not in EXPECTED:
                return None
            continue
        key, sep, value = (part.strip() for part in line.partition(b"="))
        if not sep or not key or not set(key) <= PLAIN:
            return None
        if section is None:  # a remote's: read by the sync code (through dulwich)
            if not set(value).isdisjoint(b'"\\;#'):
                return None
            continue
        if section not in EXPECTED or not set(value) <= PLAIN:
            return None  # no quoting, escapes or comments in what we read
        key = key.lower()
        allowed = EXPECTED[section].get(key)
        if allowed is None or (section, key) in settings:
            return None
        if allowed and value.lower() not in allowed:
            return None
        settings[section, key] = value
    return settings


def open_plain(path: Path) -> Opened | None:
    """The object store and refs of the bare repository at `path`, when its config is
    plain (see the invariant); None otherwise, or when it does not look like a bare
    repository (dulwich's `Repo` then says what is wrong)."""
    try:
        config = (path / "config").read_bytes()
    except OSError:
        return None
    settings = plain_settings(config)
    if settings is None or (path / "commondir").exists():
        return None
    if not ((path / "objects").is_dir() and (path / "refs").is_dir()):
        return None
    shared = OWNER_ONLY if (b"core", b"sharedrepository") in settings else None
    objects = DiskObjectStore(
        str(path / "objects"), shared_perm=shared, max_tree_depth=DEFAULT_MAX_TREE_DEPTH
    )
    refs = DiskRefsContainer(str(path), str(path))
    version = settings.get((b"gitsessions", b"formatversion"))
    return Opened(objects, refs, None if version is None else version.decode("ascii", "replace"))
