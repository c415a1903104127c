"""The remotes sessions sync with: kept in store.git/config (stock git sees them), added,
listed, removed, and the one a command means when it names none.

Invariant: a URL is handed out masked only (`list_remotes`); adding and removing are
audited through the writer, and removing one changes nothing on the remote.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

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


def add_remote(store: SessionStore, name: str, url: str, cwd: Path) -> str:
    """Configure a remote; returns its URL as stored (a local path made absolute)."""
    from gitsessions.services.sessions import writer

    url = remoteconfig.normalize(url, cwd)
    writer.audited(
        store, "remote add", None, lambda: remoteconfig.add(store.git, name, url), remote=name
    )
    return url


def list_remotes(store: SessionStore) -> list[dict[str, str]]:
    """Each remote with its URL masked and its kind."""
    return [
        {"name": name, "url": remoteconfig.mask(url), "kind": remoteconfig.kind(url)}
        for name, url in sorted(remoteconfig.remotes(store.git).items())
    ]


def remove_remote(store: SessionStore, name: str) -> int:
    """Forget a remote and its remote-tracking refs (nothing on the remote changes)."""
    from gitsessions.services.sessions import writer

    return writer.audited(
        store, "remote remove", None, lambda: remoteconfig.remove(store.git, name), remote=name
    )
