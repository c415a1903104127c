"""The refs of a remote on this machine, read from its files: what `git ls-remote`
would list, without starting git and its `upload-pack` (a fifth of an incremental
pull's time).

Invariants:
- Only a plainly ordinary repository is read: a path or `file:///` URL naming a
  directory of this user that is itself a git directory (`HEAD`, `objects/`, `refs/`;
  no `.git` inside, which git would pick first; not shallow), files-backend refs (no `reftable/`,
  no `extensions` in its config), no alternates, and nothing in its config or the
  user's or system's git config that could hide or include refs (`hideRefs`,
  `include`). Anything else, and any file that cannot be read or is not plainly a
  ref, answers None: the caller asks `git ls-remote`, which says what is wrong.
- Loose refs are read before `packed-refs`, as git reads them: a ref packed meanwhile
  (its loose file removed) is found in the newer `packed-refs`. The listing is a
  snapshot like `ls-remote`'s: a ref that moves afterwards is caught by the
  compare-and-swap of whatever update follows, never overwritten.
- Nothing is written there. Its objects are read only to know whether it holds a
  commit (`remotes` asks before it offers one as common ground to `stockgit.fetch_local`).
"""

import os
import re
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import unquote, urlsplit

SHA = re.compile(rb"[0-9a-f]{40}")
RISKY = (b"hiderefs", b"include", b"refstorage", b"extensions", b"namespace")


def refs(url: str, env: Mapping[str, str] | None) -> dict[bytes, bytes] | None:
    """`{ref: sha}` of the repository `url` names (a path or `file:///`), or None when
    it is not plainly one to read this way (see the invariants) or `env` is None (this
    process's environment is the caller's to pass)."""
    where = plain_directory(url, env)
    if where is None:
        return None
    try:
        return _read(where)
    except (OSError, ValueError):
        return None


def plain_directory(url: str, env: Mapping[str, str] | None) -> Path | None:
    """The repository `url` names when it is plainly one to read directly (see the
    invariants), else None."""
    if env is None:
        return None
    where = _directory(url)
    if where is None or not _plain(where) or not _configs_plain(env):
        return None
    return where


def _directory(url: str) -> Path | None:
    if "://" in url:
        parts = urlsplit(url)
        if parts.scheme.lower() != "file" or parts.netloc or parts.query or parts.fragment:
            return None
        text = unquote(parts.path)
    elif url.startswith("/"):
        text = url
    else:
        return None  # relative, `host:path`: git decides, not this
    return Path(text)


def _plain(where: Path) -> bool:
    try:
        info = where.stat()
        if info.st_uid != os.getuid() or not (where / "HEAD").is_file():
            return False
        if not (where / "objects").is_dir() or not (where / "refs").is_dir():
            return False
        if os.path.lexists(where / ".git") or os.path.lexists(where / "reftable"):
            return False
        if os.path.lexists(where / "shallow"):
            return False
        if os.path.lexists(where / "objects" / "info" / "alternates"):
            return False
        config = (where / "config").read_bytes().lower()
    except OSError:
        return False
    return not any(word in config for word in RISKY)


def _configs_plain(env: Mapping[str, str]) -> bool:
    """Whether no global or system git config could hide or include refs."""
    home = env.get("HOME", "")
    xdg = env.get("XDG_CONFIG_HOME") or (f"{home}/.config" if home else "")
    files = [env.get("GIT_CONFIG_GLOBAL") or (f"{home}/.gitconfig" if home else "")]
    files.append(f"{xdg}/git/config" if xdg else "")
    if not env.get("GIT_CONFIG_NOSYSTEM"):
        files.append(env.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig")
    for name in files:
        if not name:
            continue
        try:
            text = Path(name).read_bytes().lower()
        except FileNotFoundError:
            continue
        except OSError:
            return False
        if any(word in text for word in RISKY):
            return False
    return True


def _read(where: Path) -> dict[bytes, bytes] | None:
    loose: dict[bytes, bytes] = {}
    base = os.fsencode(where) + b"/"
    pending = [b"refs"]
    while pending:  # bytes paths, plain system calls: a thousand loose refs in a few ms
        folder = pending.pop()
        try:
            entries = list(os.scandir(base + folder))
        except FileNotFoundError:
            continue
        for entry in entries:
            name = folder + b"/" + entry.name
            if entry.is_dir(follow_symlinks=False):
                pending.append(name)
                continue
            if name.endswith(b".lock"):
                continue  # a writer's, not a ref
            try:
                fd = os.open(entry.path, os.O_RDONLY)
            except FileNotFoundError:
                continue  # packed meanwhile: `packed-refs`, read next, holds it
            try:
                value = os.read(fd, 128).rstrip(b"\n")
            finally:
                os.close(fd)
            if not SHA.fullmatch(value):
                return None  # a symbolic ref, or something git would judge
            loose[name] = value
    packed: dict[bytes, bytes] = {}
    try:
        data = (where / "packed-refs").read_bytes()
    except FileNotFoundError:
        data = b""
    for line in data.splitlines():
        if not line or line.startswith((b"#", b"^")):
            continue
        sha, sep, name = line.partition(b" ")
        if not sep or not SHA.fullmatch(sha) or not name.startswith(b"refs/"):
            return None
        packed[name] = sha
    return {**packed, **loose}
