"""Remotes of the store: their configuration, and objects moved to and from them.

Invariants:
- A remote is git's own `[remote "NAME"]` section of `store.git/config` (`url`, and a
  `fetch` refspec for the session branches), so stock git sees and can use it.
- A URL's credentials never leave this module in full: every message names a remote
  by `mask(url)` (`https://***@host/...`, `ssh://user:***@host/...`).
- Fetched objects are only written while the caller holds the store's shared lock, and
  a pull that completes names them by a ref (a session branch or a remote-tracking ref)
  before it releases it, so a purge never removes them in between. (A pull that fails
  midway may leave them unnamed: a later purge removes them, and the next pull fetches
  what it needs again.)
- A session branch moves only through `update_refs`: compare-and-swap from the value
  the caller saw (None: absent), under the branch's flock, each new head recorded in
  `headlog` first. Remote-tracking refs
  (`refs/remotes/<remote>/...`) and the branches a pull moves are written in one
  `packed-refs` write per 256 branches: a pull of 1,000 sessions makes a few fsyncs,
  not 1,000.
- The remote's refs move only through compare-and-swap and are never forced: each
  update carries an old value and the remote refuses it if the ref moved since. With
  dulwich that is the value the caller saw; with stock git, the value git saw when it
  connected, and git refuses what is not a create or a fast-forward of it; a prune is
  leased on the value the caller saw. Every update the caller asks for is a create, a
  fast-forward or a prune it checked.
- Stock git (`stockgit`) lists, fetches, pushes and walks when it is installed (C, on
  the store's own packs); dulwich does all of it when it is not, and its client is
  imported only then.
- Nothing fetched joins the store unchecked: stock git fetches with its object checks
  on (`stockgit.ObjectsRefused`), dulwich into a quarantine that `quarantine` checks
  before it moves the packs in. When a fetch of several commits is refused, each is
  fetched alone: the caller's `refused` learns which ones (and why), the others come,
  and no remote-tracking ref names a refused one.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

from gitsessions.store import headlog, localremote, stockgit
from gitsessions.store.errors import StoreError
from gitsessions.store.rawobjects import (
    COMMIT,
    TREE,
    parse_commit,
    parse_tree,
    read_blob,
    read_tree,
)
from gitsessions.store.refpack import current as ref_value
from gitsessions.store.refpack import packed_lock, read_loose, read_packed
from gitsessions.store.storelock import private_files
from gitsessions.values.errors import BadUsage
from gitsessions.values.plural import plural

if TYPE_CHECKING:
    from dulwich.object_store import DiskObjectStore

    from gitsessions.store.repo import GitStore

    Git = GitStore  # what a pull, a push, a fork read through

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
SCP = re.compile(r"^(?:[^@/:]+@)?[^/:]+:(?!//)")
SESSIONS = b"refs/heads/sessions/"
TOMBSTONES = b"refs/gitsessions/tombstones"
SENDING = b"refs/gitsessions/sending/"  # + pid + /sessions/<id>: what a push sends
AUTHOR = b"gitsessions <gitsessions@localhost>"
ZERO_SHA = b"0" * 40
Entry = tuple[bytes, int, bytes]  # hex id, object type, path (`maintenance.Entry`)
REUSE_DELTAS_FROM = 2000  # objects in a push
PUSH_BATCH = 2000  # refs per `git push` (its arguments stay well under the OS limit)
Progress = Callable[[str], None]
Env = Mapping[str, str] | None  # the environment stock git runs in (None: this one's)


class RemoteError(StoreError):
    """A remote could not be reached, or refused what was asked; nothing changed here."""


class UnknownRemote(StoreError):
    """No remote of that name is configured."""

    exit_code = 2


# -- names and URLs ------------------------------------------------------------------------


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
    scheme = urlsplit(url).scheme.lower() if "://" in url else ""
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


def mask(url: str) -> str:
    """`url` without its secrets: an http(s) user part (often a token) and any password
    become `***`."""
    if "://" not in url:
        if SCP.match(url) and "@" in url.split(":", 1)[0]:
            return url  # ssh's user@host:path carries no secret
        return url
    parts = urlsplit(url)
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


# -- configuration -------------------------------------------------------------------------


def remotes(git: Git) -> dict[str, str]:
    """`{name: url}` of every configured remote (the config read plainly when it is
    written plainly, else by dulwich's parser)."""
    with contextlib.suppress(OSError):
        plain = plain_remotes((git.path / "config").read_bytes())
        if plain is not None:
            return plain
    from dulwich.config import ConfigFile

    config = ConfigFile.from_path(str(git.path / "config"))
    out: dict[str, str] = {}
    for section in config.sections():
        if len(section) == 2 and section[0] == b"remote":
            with contextlib.suppress(KeyError):
                out[section[1].decode("utf-8", "replace")] = config.get(section, b"url").decode(
                    "utf-8", "replace"
                )
    return out


PLAIN_VALUE = re.compile(rb'[^"\\#;]*')


def plain_remotes(config: bytes) -> dict[str, str] | None:
    """`{name: url}` of the `[remote "NAME"]` sections of a git config file, when each
    is written plainly (a name `check_name` allows, one `url = value` line with no
    quote, backslash or comment character in it); None otherwise."""
    out: dict[str, str] = {}
    section: str | None = None
    for raw in config.splitlines():
        line = raw.strip()
        if not line or line.startswith((b"#", b";")):
            continue
        if line.startswith(b"["):
            section = None
            head = line.lower()
            if head.startswith(b"[remote"):
                found = re.fullmatch(rb'\[remote "([A-Za-z0-9._-]+)"\]', line)
                if found is None:
                    return None
                section = found[1].decode()
            continue
        key, sep, value = line.partition(b"=")
        if section is None or key.strip().lower() != b"url":
            continue
        value = value.strip()
        if not sep or section in out or not PLAIN_VALUE.fullmatch(value):
            return None
        out[section] = value.decode("utf-8", "replace")
    return out


def url_of(git: Git, name: str) -> str:
    found = remotes(git)
    if name not in found:
        known = ", ".join(sorted(found)) or "none yet: gitsessions remote add NAME URL"
        raise UnknownRemote(f"no remote named {name!r} (remotes: {known})")
    return found[name]


def add(git: GitStore, name: str, url: str) -> None:
    check_name(name)
    kind(url)
    if name in remotes(git):
        raise BadUsage(f"remote {name!r} already exists; remove it first")
    config = git.repo.get_config()
    section = (b"remote", name.encode())
    config.set(section, b"url", url.encode())
    config.set(
        section, b"fetch", b"+refs/heads/sessions/*:refs/remotes/%s/sessions/*" % name.encode()
    )
    with private_files():  # the URL may hold credentials: the file stays 0600
        config.write_to_path()


def remove(git: GitStore, name: str) -> int:
    """Forget the remote and its remote-tracking refs; returns how many refs went."""
    url_of(git, name)
    config = git.repo.get_config()
    del config[(b"remote", name.encode())]
    with private_files():
        config.write_to_path()
    return set_tracking(git, name, {}, replace=True)


# -- remote-tracking refs ------------------------------------------------------------------


def tracking_prefix(name: str) -> bytes:
    return b"refs/remotes/" + name.encode() + b"/"


def _tracking_name(name: str, remote_ref: bytes) -> bytes:
    if remote_ref.startswith(b"refs/heads/sessions/"):
        return tracking_prefix(name) + remote_ref[len(b"refs/heads/") :]
    return tracking_prefix(name) + remote_ref[len(b"refs/") :]


class Tracking:
    """Remote-tracking refs of remote `name` to set: `{remote ref: sha, or None to remove
    it}`; with `replace`, every other one of this remote goes too. (Plain classes here:
    `dataclasses` costs a pull's start-up 5 ms.)"""

    def __init__(self, name: str, refs: dict[bytes, bytes | None], replace: bool = False) -> None:
        self.name = name
        self.refs = refs
        self.replace = replace

    def apply(self, packed: dict[bytes, bytes], loose: dict[bytes, bytes]) -> dict[bytes, bytes]:
        """`packed` as it is to be written: this remote's `loose` refs (stock git writes
        them) folded in unless replaced, then `refs` set."""
        prefix = tracking_prefix(self.name)
        if self.replace:
            new = {n: s for n, s in packed.items() if not n.startswith(prefix)}
        else:
            new = {**packed, **loose}
        for ref, sha in self.refs.items():
            if sha is None:
                new.pop(_tracking_name(self.name, ref), None)
            else:
                new[_tracking_name(self.name, ref)] = sha
        return new


def set_tracking(
    git: Git, name: str, refs: dict[bytes, bytes | None], *, replace: bool = False
) -> int:
    """Set the remote-tracking refs of `name` for `refs` (remote ref names; None removes
    one), in one `packed-refs` write; with `replace`, every other one of this remote
    goes too. Returns how many were removed."""
    prefix = tracking_prefix(name)
    before = {**read_packed(git.path / "packed-refs"), **read_loose(git.path, prefix)}
    update_refs(git, {}, Tracking(name, refs, replace))
    after = read_packed(git.path / "packed-refs")
    return len([n for n in before if n.startswith(prefix) and n not in after])


def update_refs(
    git: Git,
    moves: dict[bytes, tuple[bytes | None, bytes]],
    tracking: Tracking | None = None,
    batch: int = 256,
) -> set[bytes]:
    """Move each ref of `moves` from its old value (None: absent, loose or packed) to
    its new one, each while holding its branch's flock and only if it still holds the
    old value: compare-and-swap, in one fsynced `packed-refs` write per `batch` refs
    (not one fsync per ref). A loose file holding the old value goes after the write
    (until then it shadows the new one: a kill in between leaves the old value). The
    first write also sets `tracking`. Returns the names moved. The caller holds
    `git.locked()`."""
    moved: set[bytes] = set()
    names = sorted(moves)
    for start in range(0, max(len(names), 1), batch):
        chunk = names[start : start + batch]
        track = tracking if start == 0 else None
        with contextlib.ExitStack() as stack:
            for ref in chunk:
                stack.enter_context(git.ref_locked(ref))
            loose: dict[bytes, bytes] = {}
            with packed_lock(git.path) as commit:
                packed = read_packed(git.path / "packed-refs")
                won = [ref for ref in chunk if _holds(git.path, ref, packed, moves[ref][0])]
                new = packed
                if track is not None:
                    loose = read_loose(git.path, tracking_prefix(track.name))
                    new = track.apply(packed, loose)
                new = {**new, **{ref: moves[ref][1] for ref in won}}
                headlog.record(git.path, _session_heads(won, moves))
                if new != packed:
                    commit(new)
            for ref in won:
                with contextlib.suppress(FileNotFoundError):
                    (git.path / os.fsdecode(ref)).unlink()
            _drop_loose(git, loose)
        moved.update(won)
    return moved


def _session_heads(
    won: list[bytes], moves: dict[bytes, tuple[bytes | None, bytes]]
) -> list[tuple[str, bytes]]:
    """The session branches of `won` with the commit each is about to hold."""
    out: list[tuple[str, bytes]] = []
    for ref in won:
        if ref.startswith(SESSIONS) and moves[ref][1] != moves[ref][0]:
            out.append((ref[len(SESSIONS) :].decode(), moves[ref][1]))
    return out


def _holds(store_path: Path, ref: bytes, packed: dict[bytes, bytes], value: bytes | None) -> bool:
    """Whether `ref` holds `value` (None: absent), its loose file read first."""
    try:
        found = (store_path / os.fsdecode(ref)).read_bytes().strip()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return packed.get(ref) == value
    return found == value


def _drop_loose(git: Git, loose: dict[bytes, bytes]) -> None:
    """Remove loose refs now in `packed-refs` (each only if it still holds the value
    that went there: another process's fetch may have written it again)."""
    for name, sha in loose.items():
        file = git.path / os.fsdecode(name)
        with contextlib.suppress(FileNotFoundError):
            if file.read_bytes().strip() == sha:
                file.unlink()


def forget_session(git: Git, session_id: str) -> None:
    """Drop every remote-tracking ref of a session deleted here (and any a push is
    sending it by), so a purge reaches its objects."""
    suffix = b"/sessions/" + session_id.encode()
    for name in read_loose(git.path):  # stock git writes them loose
        if name.startswith((b"refs/remotes/", SENDING)) and name.endswith(suffix):
            with contextlib.suppress(FileNotFoundError):
                (git.path / os.fsdecode(name)).unlink()
    with packed_lock(git.path) as commit:
        packed = read_packed(git.path / "packed-refs")
        kept = {
            n: s
            for n, s in packed.items()
            if not (n.startswith((b"refs/remotes/", SENDING)) and n.endswith(suffix))
        }
        if kept != packed:
            commit(kept)


# -- talking to a remote -------------------------------------------------------------------


@contextlib.contextmanager
def _talking(url: str, what: str) -> Iterator[None]:
    """Any failure of the transport becomes one `RemoteError` line with the URL masked."""
    shown = mask(url)
    try:
        yield
    except stockgit.GitFailed as error:
        reason = str(error)
        if "does not appear to be a git repository" in reason:
            reason = "not a git repository (create one with `git init --bare`)"
        raise RemoteError(f"cannot {what} {shown}: {_clean(reason, url)}") from None
    except OSError as error:
        reason = error.strerror or str(error) or type(error).__name__
        raise RemoteError(f"cannot {what} {shown}: {_clean(reason, url)}") from None
    except Exception as error:  # urllib3 and ssh errors: one line, never the credentials
        errors = sys.modules.get("dulwich.errors")  # loaded if dulwich's client ran
        if errors is not None and isinstance(error, errors.NotGitRepository):
            raise RemoteError(
                f"cannot {what} {shown}: not a git repository (create one with `git init --bare`)"
            ) from None
        if errors is not None and isinstance(error, errors.GitProtocolError):  # hangups too
            raise RemoteError(f"cannot {what} {shown}: {_clean(str(error), url)}") from None
        if type(error).__module__.startswith(("urllib3", "dulwich", "http")):
            reason = _clean(str(error) or type(error).__name__, url)
            raise RemoteError(f"cannot {what} {shown}: {reason}") from None
        raise


def _clean(text: str, url: str) -> str:
    """An error text with the URL's secrets masked wherever they appear."""
    text = text.replace(url, mask(url))
    if "://" in url:
        parts = urlsplit(url)
        secrets = [parts.password]
        if parts.scheme.lower() in ("http", "https"):
            secrets.append(parts.username)
        for secret in secrets:
            if secret and len(secret) >= 3:
                text = text.replace(secret, "***")
    return " ".join(text.split())[:300]


def stock() -> bool:
    """Whether stock git does the transfers (installed, new enough)."""
    return shutil.which("git") is not None and stockgit.available()


def _client(url: str, thin: bool = True) -> tuple[object, str]:
    """dulwich's client for `url` (stock git is missing or too old). A repository on
    this machine is served by `git receive-pack` / `upload-pack` when there is a git at
    all: dulwich's in-process other side walks and packs several times slower."""
    from dulwich.client import LocalGitClient, get_transport_and_path

    from gitsessions.store.dulwich_client import GatheringSubprocessClient

    client, path = get_transport_and_path(url, thin_packs=thin)
    if isinstance(client, LocalGitClient) and shutil.which("git"):
        return GatheringSubprocessClient(thin_packs=thin), path
    return client, path


def _report(
    progress: Progress | None, every: float = 1.0, url: str = ""
) -> Callable[[bytes], None] | None:
    """dulwich's and git's progress as lines for `progress`, at most one a second (they
    report every object: 140,000 lines for a 1,000-session pull), but each `done`; the
    secrets of `url` masked wherever they appear."""
    if progress is None:
        return None
    last = [0.0]

    def relay(data: bytes) -> None:
        for line in data.decode("utf-8", "replace").replace("\r", "\n").split("\n"):
            line = line.strip()
            now = time.monotonic()
            if line and (now - last[0] >= every or line.endswith(("done.", "done"))):
                last[0] = now
                progress(_clean(line, url) if url else line)

    return relay


def fetch(
    git: Git,
    url: str,
    wants: Callable[[dict[bytes, bytes]], list[bytes]],
    progress: Progress | None = None,
    thin: bool = True,
    name: str | None = None,
    env: Env = None,
    listed: dict[bytes, bytes] | None = None,
    track: bool = True,
    refused: dict[bytes, str] | None = None,
) -> dict[bytes, bytes]:
    """Fetch the commits `wants(remote refs)` names (and all they need) into the store;
    returns the remote's refs as advertised. A wanted commit whose objects fail the
    checks is left out and put in `refused` (`{commit: why}`); without `refused`, that
    fails the fetch (`RemoteError`). With stock git, the remote-tracking refs
    of `name` are set for what came, unless not `track` (the caller's own write names
    them). The caller holds `git.locked()`. `thin`
    lets the remote send deltas against objects we have (fewer bytes for an
    incremental fetch); a fetch into an empty store asks for a whole pack, which dulwich
    indexes about a fifth faster."""
    stockgit.remember_version(git.path)
    if stock() and name is not None:
        return _fetch_stock(git, url, wants, progress, name, env, listed, track, refused)
    from gitsessions.store import quarantine

    chosen: list[dict[bytes, bytes]] = []
    asked: list[bytes] = []

    def determine(refs: dict[bytes, bytes], depth: int | None = None) -> list[bytes]:
        clean = {k: v for k, v in refs.items() if v is not None and v != ZERO_SHA}
        chosen.append(clean)
        asked[:] = [sha for sha in wants(clean) if not git.has(sha)]
        return list(asked)

    with _talking(url, "fetch from"):
        client, path = _client(url, thin)
        try:
            quarantine.fetch(git, client, path, determine, _report(progress))
        except quarantine.Refused as error:
            if refused is None:
                raise RemoteError(f"cannot fetch from {mask(url)}: {error}") from None
            for sha in sorted(asked):  # each alone: which ones are bad
                try:
                    quarantine.fetch(git, client, path, _only(git, sha), _report(progress))
                except quarantine.Refused as alone:
                    refused[sha] = str(alone)
    return chosen[0] if chosen else {}


def _only(git: Git, sha: bytes) -> Callable[..., list[bytes]]:
    """dulwich's `determine_wants` for one commit (none once the store has it)."""

    def determine(_refs: dict[bytes, bytes], depth: int | None = None) -> list[bytes]:
        return [] if git.has(sha) else [sha]

    return determine


def _fetch_stock(
    git: Git,
    url: str,
    wants: Callable[[dict[bytes, bytes]], list[bytes]],
    progress: Progress | None,
    name: str,
    env: Env,
    listed: dict[bytes, bytes] | None = None,
    track: bool = True,
    refused: dict[bytes, str] | None = None,
) -> dict[bytes, bytes]:
    """`fetch` by stock git: the refs listed (or `listed`, the caller's listing just
    before), the commits of the wanted ones the store lacks fetched by their ids (git
    writes no ref: a thousand loose ones cost it a second, and matching a thousand
    names more), their remote-tracking refs set at once with `track` (else the
    caller's own write names them, under the lock it holds). A ref that moved on the
    remote since the listing is fetched as listed (protocol v2 serves any id it has;
    a v0-only server refuses it, and the pull fails with one line: run it again)."""
    with _talking(url, "fetch from"):
        refs = _listing(git, url, env) if listed is None else dict(listed)
        wanted = {sha for sha in wants(refs) if not has(git, sha)}
        chosen = sorted(ref for ref, sha in refs.items() if sha in wanted)
        if not chosen:
            return refs
        tips: list[bytes] = []
        for ref in chosen:  # what this store has of each: its branch, its tracking ref
            here = [ref_value(git.path, r) for r in (ref, _tracking_name(name, ref))]
            if not any(here):
                tips = []  # a new one may share history with any: offer everything
                break
            tips += [sha for sha in here if sha is not None]
        relay = _report(progress, url=url)
        try:
            if not _fetched_locally(git, url, sorted(wanted), tips, env, progress):
                stockgit.fetch(git.path, url, sorted(wanted), env, relay, tips)
        except stockgit.ObjectsRefused:
            if refused is None:
                raise
            for sha in sorted(wanted):  # each alone: which ones are bad
                try:
                    stockgit.fetch(git.path, url, [sha], env, relay, tips)
                except stockgit.ObjectsRefused as alone:
                    refused[sha] = str(alone)
            chosen = [ref for ref in chosen if refs[ref] not in refused]
    git.rescan()
    lacking = sorted(sha for sha in wanted if not has(git, sha) and sha not in (refused or {}))
    if lacking:
        raise RemoteError(
            f"cannot fetch from {mask(url)}: commit {lacking[0].decode()[:12]} did not come"
        )
    if track:
        set_tracking(git, name, {ref: refs[ref] for ref in chosen})
    return refs


def _fetched_locally(
    git: Git,
    url: str,
    wanted: list[bytes],
    tips: list[bytes],
    env: Env,
    progress: Progress | None,
) -> bool:
    """Fetch `wanted` from a plain repository on this machine by its `pack-objects`
    piped into our `index-pack` (`stockgit.fetch_local`), offering the `tips` it
    holds as common ground; False when that is not for this remote (not plainly a
    repository here, no tip in common: a new session may share history with any, and
    `git fetch`'s negotiation finds it) or it failed (`git fetch` then runs and says
    what is wrong, if anything is)."""
    where = localremote.plain_directory(url, env)
    if where is None or not tips:
        return False
    from dulwich.object_store import DiskObjectStore

    reader = DiskObjectStore(str(where / "objects"))
    try:
        common = [sha for sha in sorted(set(tips)) if _holds_object(reader, sha)]
        if not common:
            return False
        stockgit.fetch_local(git.path, where, wanted, common, env, _report(progress, url=url))
    except stockgit.ObjectsRefused:
        raise
    except (StoreError, OSError, stockgit.GitFailed):
        return False
    finally:
        reader.close()
    return True


def _holds_object(objects: DiskObjectStore, sha: bytes) -> bool:
    """Whether the remote's objects hold `sha` readably (damaged: left to `git fetch`)."""
    from gitsessions.store.repo import UNREADABLE

    try:
        objects.get_raw(sha)
    except (KeyError, *UNREADABLE):
        return False
    return True


def _listing(git: Git, url: str, env: Env) -> dict[bytes, bytes]:
    """The remote's refs: read from its files when it is plainly a repository on this
    machine (`localremote`), else as `git ls-remote` lists them."""
    found = localremote.refs(url, env)
    return stockgit.ls_remote(git.path, url, env) if found is None else found


def send(
    git: GitStore,
    url: str,
    plan: dict[bytes, tuple[bytes | None, bytes]],
    progress: Progress | None = None,
    planned: Planned | None = None,
    env: Env = None,
) -> dict[bytes, str | None]:
    """Push `{ref: (the remote's value when looked at, or None; new)}` (ZERO_SHA
    deletes): each update is a compare-and-swap on the old value (the remote refuses a
    ref that moved since). Returns `{ref: None when it moved, else why not}`."""
    if stock():
        status: dict[bytes, str | None] = {}
        refs = sorted(plan)
        with _talking(url, "push to"):
            for start in range(0, len(refs), PUSH_BATCH):
                batch = {ref: plan[ref] for ref in refs[start : start + PUSH_BATCH]}
                sessions = {r: new for r, (_o, new) in batch.items() if _sent_by_glob(r, new)}
                with _sending(git, sessions) as space:
                    status |= stockgit.push(
                        git.path, url, batch, env, _report(progress, url=url), space, set(sessions)
                    )
        return status
    from dulwich.pack import generate_unpacked_objects

    asked: dict[bytes, bytes] = {}
    moved_meanwhile: list[bytes] = []

    def update_refs(old: dict[bytes, bytes]) -> dict[bytes, bytes]:
        for ref, (expected, new) in plan.items():
            if old.get(ref) != expected:  # the remote moved since we looked
                moved_meanwhile.append(ref)
            else:
                asked[ref] = new
        return dict(asked)

    def generate(have: set[bytes], want: set[bytes], **kwargs: object) -> object:
        if planned is not None and planned.haves == have and planned.wants == want:
            entries = planned.entries  # walked (and scanned) already
        else:
            entries = missing(git, want, have)
        if progress is not None:
            progress(f"sending {plural(len(entries), 'object')}")
        return len(entries), generate_unpacked_objects(
            git.repo.object_store,
            [(sha, None) for sha, _type, _path in entries],
            # the store's own packed deltas, never searched again; finding them reads
            # every record of every pack, so a small push sends its objects whole
            reuse_deltas=len(entries) >= REUSE_DELTAS_FROM,
            ofs_delta=bool(kwargs.get("ofs_delta", True)),
        )

    with _talking(url, "push to"):
        client, path = _client(url)
        result = client.send_pack(path, update_refs, generate, progress=_report(progress))  # type: ignore[attr-defined]
    status = dict(getattr(result, "ref_status", None) or {})
    out = {ref: _status(status.get(ref)) for ref in asked}
    for ref in moved_meanwhile:
        out[ref] = "changed on the remote meanwhile; run gitsessions pull"
    return out


def _sent_by_glob(ref: bytes, new: bytes) -> bool:
    return ref.startswith(SESSIONS) and new != ZERO_SHA


@contextlib.contextmanager
def _sending(git: Git, sessions: dict[bytes, bytes]) -> Iterator[bytes]:
    """Name the commits a push sends by refs of this process's own
    `refs/gitsessions/sending/<pid>/sessions/<id>` (one `packed-refs` write each way),
    so stock git pushes them with one glob refspec: a thousand explicit ones cost it a
    second and a half of matching. Those of a process that is gone are dropped too."""
    space = SENDING + str(os.getpid()).encode() + b"/"

    def rewrite(add: dict[bytes, bytes]) -> None:
        for name in read_loose(git.path):
            if _ours_or_stale(name, space):
                with contextlib.suppress(FileNotFoundError):
                    (git.path / os.fsdecode(name)).unlink()
        with packed_lock(git.path) as commit:
            packed = read_packed(git.path / "packed-refs")
            kept = {n: s for n, s in packed.items() if not _ours_or_stale(n, space)}
            if {**kept, **add} != packed:
                commit({**kept, **add})

    rewrite({space + ref[len(b"refs/heads/") :]: sha for ref, sha in sessions.items()})
    try:
        yield space
    finally:
        rewrite({})


def _ours_or_stale(name: bytes, space: bytes) -> bool:
    if not name.startswith(SENDING):
        return False
    if name.startswith(space):
        return True
    pid = name[len(SENDING) :].split(b"/", 1)[0]
    if not pid.isdigit():
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False


def _status(value: object) -> str | None:
    if value is None:
        return None
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
    return " ".join(text.split())[:200] or "refused"


# -- history and the tombstone set ---------------------------------------------------------


class Planned:
    """What a push will send, walked before it connects (so it can be scanned)."""

    def __init__(self, wants: set[bytes], haves: set[bytes], entries: list[Entry]) -> None:
        self.wants = wants
        self.haves = haves
        self.entries = entries


def missing(git: GitStore, wants: set[bytes], haves: set[bytes], env: Env = None) -> list[Entry]:
    """The objects `wants` need that the remote lacks, knowing it has `haves`. Stock
    git walks them when installed (`rev-list --objects`); otherwise commits down to the
    first one it has (session histories are linear), and of their trees what the trees
    of those boundary commits do not already hold, read raw as `gc`'s walk does."""
    known = {sha for sha in haves if has(git, sha)}
    if stock():
        try:
            return stockgit.objects(git.path, sorted(wants), sorted(known), env)
        except stockgit.GitFailed as error:
            raise StoreError(f"cannot list what a push sends: {error}") from None
    from gitsessions.store.maintenance import Walk, _walk_one

    boundary: list[bytes] = []
    frontier = [sha for sha in wants if sha not in known] if known else []  # none: no edge
    seen_commits: set[bytes] = set()
    while frontier:
        sha = frontier.pop()
        if sha in seen_commits:
            continue
        seen_commits.add(sha)
        for parent in parse_commit(git.raw(sha)[1]).parents:
            (boundary if parent in known else frontier).append(parent)
    reached = Walk()
    reached.seen |= known
    for sha in boundary:
        stack = [parse_commit(git.raw(sha)[1]).tree]
        while stack:
            tree = stack.pop()
            if tree in reached.seen:
                continue
            reached.seen.add(tree)
            for entry in parse_tree(git.raw(tree)[1]).items():
                if entry.mode == 0o040000:
                    stack.append(entry.sha)
                elif entry.mode != 0o160000:
                    reached.seen.add(entry.sha)
    for sha in sorted(wants):
        _walk_one(git, sha, reached, None)
    return reached.entries


def contents(git: Git, ids: list[bytes], env: Env = None) -> Iterator[bytes]:
    """The raw content of each object, in order (stock git reads them when it is
    installed: dulwich resolves the store's delta chains in Python)."""
    if stock():
        try:
            for sha, raw in zip(ids, stockgit.contents(git.path, ids, env), strict=True):
                if raw is None:
                    raise StoreError(f"object {sha.decode()[:12]} is missing from the store")
                yield raw
            return
        except stockgit.GitFailed as error:
            raise StoreError(f"cannot read what a push sends: {error}") from None
    for sha in ids:
        yield git.raw(sha)[1]


def hinted(
    git: Git, ids: list[bytes], needles: tuple[bytes, ...], env: Env = None
) -> set[int] | None:
    """The indexes of the objects in `ids` that hold one of `needles` in any ASCII case,
    searched by stock git and grep without reading the objects here; None when they
    are not installed (the caller reads and searches them itself)."""
    if not stock():
        return None
    try:
        return stockgit.hinted(git.path, ids, needles, env)
    except stockgit.GitFailed as error:
        raise StoreError(f"cannot read what a push sends: {error}") from None


def files_at(git: Git, wanted: list[tuple[bytes, str]], env: Env = None) -> list[bytes | None]:
    """The content of `path` in the tree of each `(commit, path)`, None where there is
    none; stock git reads them all in one go when it is installed."""
    if stock():
        names = [commit + b":" + path.encode() for commit, path in wanted]
        try:
            return list(stockgit.contents(git.path, names, env))
        except stockgit.GitFailed as error:
            raise StoreError(f"cannot read fetched sessions: {error}") from None
    out: list[bytes | None] = []
    for commit_id, path in wanted:
        kind, raw = git.raw(commit_id)
        tree = read_tree(git, parse_commit(raw).tree) if kind == COMMIT else None
        entry = path.encode()
        found = tree is not None and entry in tree
        out.append(read_blob(git, tree[entry][1]) if found else None)  # type: ignore[index]
    return out


def has(git: Git, sha: bytes) -> bool:
    return git.has(sha)


def ancestors(git: Git, sha: bytes, stop: set[bytes] | None = None) -> Iterator[bytes]:
    """`sha` and every commit it descends from, nearest first (breadth-first); a commit
    in `stop` is yielded but not walked past."""
    seen: set[bytes] = set()
    frontier = [sha]
    while frontier:
        following: list[bytes] = []
        for current in frontier:
            if current in seen:
                continue
            seen.add(current)
            yield current
            if stop is not None and current in stop:
                continue
            kind, raw = git.raw(current)
            if kind == COMMIT:
                following.extend(parse_commit(raw).parents)
        frontier = following


def is_ancestor(git: Git, older: bytes, newer: bytes) -> bool:
    return any(sha == older for sha in ancestors(git, newer))


def relation(git: Git, mine: bytes, theirs: bytes) -> str:
    """`behind` when `mine` is an ancestor of `theirs`, `ahead` when `theirs` is one of
    `mine`, else `diverged`. Both histories are walked a commit at a time in turn, so
    the answer costs the distance between the two, not a whole history."""
    walks = [ancestors(git, theirs), ancestors(git, mine)]
    targets, answers = [mine, theirs], ["behind", "ahead"]
    while walks:
        for n in range(len(walks) - 1, -1, -1):
            sha = next(walks[n], None)
            if sha is None:
                del walks[n], targets[n], answers[n]
            elif sha == targets[n]:
                return answers[n]
    return "diverged"


def merge_base(git: Git, one: bytes, other: bytes) -> bytes | None:
    """The nearest commit both descend from (session histories are linear)."""
    mine = set(ancestors(git, one))
    return next((sha for sha in ancestors(git, other) if sha in mine), None)


def tombstone_ids(git: Git, commit_id: bytes) -> set[str]:
    """The deleted session ids a tombstone commit lists (its `deleted` file)."""
    kind, raw = git.raw(commit_id)
    if kind != COMMIT:
        return set()
    kind, raw = git.raw(parse_commit(raw).tree)
    if kind != TREE:
        return set()
    tree = parse_tree(raw)
    if b"deleted" not in tree:
        return set()
    text = read_blob(git, tree[b"deleted"][1]).decode("ascii", "replace")
    return {line for line in text.split() if re.fullmatch(r"[0-9a-f]{32}", line)}


def tombstone_commit(git: GitStore, ids: set[str], parents: list[bytes], when: int) -> bytes:
    """A commit whose `deleted` file lists `ids` (sorted), on top of `parents`; its
    objects are written (the caller holds `git.locked()` and names it by a ref)."""
    from dulwich.objects import Blob, Commit, Tree

    blob = Blob.from_string("".join(f"{i}\n" for i in sorted(ids)).encode())
    tree = Tree()
    tree.add(b"deleted", 0o100644, blob.id)
    commit = Commit()
    commit.tree = tree.id
    commit.parents = parents
    commit.author = commit.committer = AUTHOR
    commit.author_time = commit.commit_time = when
    commit.author_timezone = commit.commit_timezone = 0
    commit.encoding = b"UTF-8"
    commit.message = f"tombstones: {len(ids)} deleted sessions\n".encode()
    git.add_objects([blob, tree, commit])
    return commit.id
