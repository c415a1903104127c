"""The store's remotes: git's own `[remote "NAME"]` sections of `store.git/config`, and
their URLs shown without secrets.

Invariants:
- Read and written by dulwich's `ConfigFile` alone, so stock git can use them; the file
  stays 0600 (a URL may hold credentials).
- Credentials never leave this module in full: messages name a remote by `mask(url)`,
  and any text that may quote a URL passes `clean`.
- `remote.NAME.code = true` marks a remote code goes with (`code_of`).
- A name is letters, digits, `.`, `_`, `-`; a URL a path, `file://`, ssh, `git://` or
  http(s): no remote helpers.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import SplitResult, urlsplit, urlunsplit

from dulwich.config import ConfigFile

from gitsessions.store.errors import StoreError
from gitsessions.store.storelock import private_files
from gitsessions.store.tracking import Git, set_tracking
from gitsessions.values.errors import BadUsage

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
SCP = re.compile(r"^(?:[^@/:]+@)?[^/:]+:(?!//)")


class UnknownRemote(StoreError):
    """No remote of that name is configured."""

    exit_code = 2


def check_name(name: str) -> str:
    if not NAME.fullmatch(name) or name.endswith(".lock") or ".." in name:
        raise BadUsage(
            f"invalid remote name {name[:40]!r}: letters, digits, '.', '_' and '-', "
            "starting with a letter or digit"
        )
    return name


def kind(url: str) -> str:
    """path, file, ssh, git, http or https; `BadUsage` for anything else (`ext::`...)."""
    if not url or any(ord(c) < 32 for c in url):
        raise BadUsage("a remote URL must be one line and not empty")
    scheme = _split(url).scheme.lower() if "://" in url else ""
    if scheme in ("file", "ssh", "git", "http", "https"):
        return scheme
    if scheme == "git+ssh" or scheme == "ssh+git":
        return "ssh"
    if scheme:
        raise BadUsage(
            f"unsupported remote URL scheme {scheme!r}: use a path, file://, ssh://, "
            "user@host:path, git:// or http(s)://"
        )
    if "::" in url:
        raise BadUsage("remote helpers (`transport::address`) are not supported")
    if SCP.match(url) and not url.startswith(("/", "./", "../")):
        return "ssh"
    return "path"


def _split(url: str) -> SplitResult:
    """`url`'s parts; `BadUsage` (one line, never the URL: it may hold a token) when
    they cannot be read (`https://[::1`, a port out of range)."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - read only to check it
    except ValueError as error:
        raise BadUsage(f"invalid remote URL ({error})") from None
    return parts


def mask(url: str) -> str:
    """`url` without its secrets: an http(s) user part (often a token) and any password
    become `***`."""
    if "://" not in url:
        if SCP.match(url) and "@" in url.split(":", 1)[0]:
            return url  # ssh's user@host:path carries no secret
        return url
    try:
        parts = _split(url)
    except BadUsage:  # unreadable (it was never added by `remote add`): nothing of it shown
        return url.split("://", 1)[0] + "://***"
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port is not None:
        host += f":{parts.port}"
    if parts.scheme.lower() in ("http", "https") or parts.username is None:
        user = "***"
    else:
        user = parts.username + (":***" if parts.password is not None else "")
    return urlunsplit((parts.scheme, f"{user}@{host}", parts.path, parts.query, ""))


def normalize(url: str, cwd: Path) -> str:
    """A local path made absolute (a remote must not depend on where it was added)."""
    if kind(url) == "path":
        return str((cwd / Path(url).expanduser()).absolute())
    return url


def _config(git: Git) -> ConfigFile:
    return ConfigFile.from_path(str(git.path / "config"))


def remotes(git: Git) -> dict[str, str]:
    """`{name: url}` of every configured remote."""
    config = _config(git)
    out: dict[str, str] = {}
    for section in config.sections():
        if len(section) == 2 and section[0] == b"remote":
            try:
                url = config.get(section, b"url")
            except KeyError:
                continue
            out[section[1].decode("utf-8", "replace")] = url.decode("utf-8", "replace")
    return out


def url_of(git: Git, name: str) -> str:
    found = remotes(git)
    if name not in found:
        known = ", ".join(sorted(found)) or "none yet: gitsessions remote add NAME URL"
        raise UnknownRemote(f"no remote named {name!r} (remotes: {known})")
    return found[name]


def code_of(git: Git, name: str) -> bool:
    """Whether code goes with the remote (`remote.NAME.code`, a git boolean)."""
    try:
        value = _config(git).get((b"remote", name.encode()), b"code")
    except KeyError:
        return False
    return value.strip().lower() in (b"true", b"yes", b"on", b"1")


def set_code(git: Git, name: str, on: bool) -> None:
    """Mark the remote as one code goes with (`on`), or not."""
    url_of(git, name)
    config = _config(git)
    config.set((b"remote", name.encode()), b"code", b"true" if on else b"false")
    with private_files():
        config.write_to_path()


def add(git: Git, name: str, url: str, code: bool = False) -> None:
    check_name(name)
    kind(url)
    if name in remotes(git):
        raise BadUsage(f"remote {name!r} already exists; remove it first")
    config = _config(git)
    section = (b"remote", name.encode())
    config.set(section, b"url", url.encode())
    config.set(
        section, b"fetch", b"+refs/heads/sessions/*:refs/remotes/%s/sessions/*" % name.encode()
    )
    if code:
        config.set(section, b"code", b"true")
    with private_files():  # the URL may hold credentials: the file stays 0600
        config.write_to_path()


def remove(git: Git, name: str) -> int:
    """Forget the remote and its remote-tracking refs; returns how many refs went."""
    url_of(git, name)
    config = _config(git)
    del config[(b"remote", name.encode())]
    with private_files():
        config.write_to_path()
    return set_tracking(git, name, {}, replace=True)


def clean(text: str, url: str) -> str:
    """An error text with the URL's secrets masked wherever they appear."""
    text = text.replace(url, mask(url))
    if "://" in url:
        try:
            parts = _split(url)
        except BadUsage:
            return " ".join(text.split())[:300]
        secrets = [parts.password]
        if parts.scheme.lower() in ("http", "https"):
            secrets.append(parts.username)
        for secret in secrets:
            if secret and len(secret) >= 3:
                text = text.replace(secret, "***")
    return " ".join(text.split())[:300]
