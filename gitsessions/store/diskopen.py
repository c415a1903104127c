"""Opening `store.git`'s objects and refs with dulwich but without its `Repo`, whose
worktree machinery costs every writing command (each `exec` turn) some 5 ms.

Invariant: only a store whose config has the shape `GitStore` writes (the sections, keys
and values in `EXPECTED`, as dulwich's `ConfigFile` reads them, plus `[remote "..."]`
sections, which only the sync code reads: `remoteconfig`) is opened here, with the
settings dulwich's `Repo` derives from that config: the defaults, and
`sharedRepository = 0600` as dulwich parses it. Anything else (another key or value, an
include, a worktree's `commondir`) gives None, and the caller opens dulwich's `Repo` as
before.
"""

from io import BytesIO
from pathlib import Path
from typing import NamedTuple

from dulwich.config import ConfigFile
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
OWNER_ONLY = SharedPerm(tweak=0o600, replace=True)  # dulwich's parse of "0600"


class Opened(NamedTuple):
    objects: DiskObjectStore
    refs: DiskRefsContainer
    format: str | None  # gitsessions.formatVersion, None when the config has none


def plain_settings(config: bytes) -> dict[tuple[bytes, bytes], bytes] | None:
    """`{(section, key): value}` of a config, read by dulwich's `ConfigFile`, when it is in
    the shape `EXPECTED` allows (sections of remotes skipped), else None."""
    try:
        parsed = ConfigFile.from_file(BytesIO(config))
    except ValueError:  # dulwich refuses what git would refuse too
        return None
    settings: dict[tuple[bytes, bytes], bytes] = {}
    for section in parsed.sections():
        name = section[0].lower()
        if name == b"remote" and len(section) == 2:
            continue  # read by the sync code (`remoteconfig`)
        if len(section) != 1 or name not in EXPECTED:
            return None
        for key, value in parsed.items(section):
            key = key.lower()
            allowed = EXPECTED[name].get(key)
            if allowed is None or (name, key) in settings:
                return None
            if allowed and value.lower() not in allowed:
                return None
            settings[name, key] = value
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
