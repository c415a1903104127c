"""The remotes sessions sync with: kept in store.git/config (stock git sees them), added,
listed, removed, the one a command means when it names none, and whether code goes
with it.

Invariant: a URL is handed out masked only (`list_remotes`); adding, setting and
removing are audited through the writer, and removing one changes nothing on the
remote. A sync moves code when `--code` says so, else when its remote's setting does
(`code_goes_with`); `--no-code` always wins.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitsessions.store import remoteconfig
from gitsessions.values.errors import BadUsage

if TYPE_CHECKING:
    from gitsessions.store.reader import SessionReader
    from gitsessions.store.sessions import SessionStore

    Store = SessionStore | SessionReader


def pick_remote(store: Store, name: str | None) -> str:
    """The named remote, else the only one, else `origin`."""
    known = remoteconfig.remotes(store.git)
    if name is not None:
        remoteconfig.url_of(store.git, name)
        return name
    if len(known) == 1:
        return next(iter(known))
    if "origin" in known:
        return "origin"
    if not known:
        raise BadUsage("no remote yet: gitsessions remote add NAME URL")
    raise BadUsage(f"several remotes ({', '.join(sorted(known))}): name one")


def add_remote(store: SessionStore, name: str, url: str, cwd: Path, code: bool = False) -> str:
    """Configure a remote (`code`: code goes with it); returns its URL as stored (a local
    path made absolute)."""
    from gitsessions.services.sessions import writer

    url = remoteconfig.normalize(url, cwd)
    writer.audited(
        store, "remote add", None, lambda: remoteconfig.add(store.git, name, url, code),
        remote=name,
    )  # fmt: skip
    return url


def set_remote_code(store: SessionStore, name: str, on: bool) -> None:
    """Tell a remote that code goes with it, or no longer."""
    from gitsessions.services.sessions import writer

    writer.audited(
        store, "remote set", None, lambda: remoteconfig.set_code(store.git, name, on),
        remote=name,
    )  # fmt: skip


def code_goes_with(store: Store, name: str | None, flag: bool | None) -> bool:
    """Whether a sync through the remote `name` (None: the one `pick_remote` picks)
    moves code: `flag` (`--code`, `--no-code`) when given, else the remote's setting."""
    if flag is not None:
        return flag
    return remoteconfig.code_of(store.git, pick_remote(store, name))


def list_remotes(store: SessionStore) -> list[dict[str, Any]]:
    """Each remote with its URL masked and its kind (`code`: code goes with it)."""
    return [
        {
            "name": name,
            "url": remoteconfig.mask(url),
            "kind": remoteconfig.kind(url),
            **({"code": True} if remoteconfig.code_of(store.git, name) else {}),
        }
        for name, url in sorted(remoteconfig.remotes(store.git).items())
    ]


def remove_remote(store: SessionStore, name: str) -> int:
    """Forget a remote and its remote-tracking refs (nothing on the remote changes)."""
    from gitsessions.services.sessions import writer

    return writer.audited(
        store, "remote remove", None, lambda: remoteconfig.remove(store.git, name), remote=name
    )
