"""What only this home knows it did (`store.git/gitsessions/`, never pushed, pulled,
exported or imported): a pulled header can say anything, so it is never proof that this
home chose a session or an endpoint. These lists are:

- `sessions-here`: the sessions this home created, forked or the user resumed by id;
  `--continue` picks only among them. Started, when first needed, with every session
  the store then holds; a pull starts it first, so a pulled session is not on it.
- `endpoints`: the model base URLs an agent of this home ran with; a resumed session's
  recorded endpoint is used only when listed (or config.toml names it).

Appended (O_APPEND, one write a line), read at most `MAX_LIST` bytes, a malformed line
ignored; a list that cannot be written is not an error (a read-only home).
"""

import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path

MAX_LIST = 32 * 1024 * 1024
MAX_URL = 2048
_SESSION_ID = re.compile(r"[0-9a-f]{32}")
_URL = re.compile(r"https?://[!-~]+")


def _dir(home: Path) -> Path:
    return home / "store.git" / "gitsessions"


def _sessions_file(home: Path) -> Path:
    return _dir(home) / "sessions-here"


def _endpoints_file(home: Path) -> Path:
    return _dir(home) / "endpoints"


def _read(path: Path) -> list[str] | None:
    """The file's lines, or None when it is not there."""
    try:
        with open(path, "rb") as file:
            raw = file.read(MAX_LIST)
    except FileNotFoundError:
        return None
    except OSError:
        return []
    return raw.decode("utf-8", "replace").splitlines()


def _append(path: Path, lines: Iterable[str]) -> None:
    data = "".join(f"{line}\n" for line in lines).encode()
    if not data or not path.parent.parent.is_dir():  # no store here: nothing to remember
        return
    try:
        path.parent.mkdir(mode=0o700, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
    except OSError:
        return


def start(home: Path, existing: Callable[[], Iterable[str]]) -> None:
    """Start the list of sessions here, if it is not there yet, with `existing()` (the
    sessions the store holds now)."""
    path = _sessions_file(home)
    if path.exists() or not path.parent.parent.is_dir():
        return
    ids = sorted(s for s in existing() if _SESSION_ID.fullmatch(s))
    temporary = path.with_name(f".sessions-here.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(mode=0o700, exist_ok=True)
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, "".join(f"{s}\n" for s in ids).encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        if not path.exists():  # another process may have started it meanwhile
            os.replace(temporary, path)
    except OSError:
        pass
    finally:
        temporary.unlink(missing_ok=True)


def sessions_here(home: Path, existing: Callable[[], Iterable[str]]) -> set[str]:
    """The sessions this home made or the user resumed here (the list started with
    `existing()` when it is not there yet)."""
    start(home, existing)
    return {line for line in _read(_sessions_file(home)) or [] if _SESSION_ID.fullmatch(line)}


def remember_session(home: Path, session_id: str, existing: Callable[[], Iterable[str]]) -> None:
    """Put `session_id` on the list of sessions here (made here, or resumed by the user)."""
    if not _SESSION_ID.fullmatch(session_id):
        return
    if session_id in sessions_here(home, existing):
        return
    _append(_sessions_file(home), [session_id])


def endpoints(home: Path) -> set[str]:
    """The model endpoints an agent of this home ran with."""
    return {line for line in _read(_endpoints_file(home)) or [] if _URL.fullmatch(line)}


def remember_endpoint(home: Path, url: str) -> None:
    """Put `url` on the list of endpoints this home ran with."""
    if len(url) > MAX_URL or not _URL.fullmatch(url) or url in endpoints(home):
        return
    _append(_endpoints_file(home), [url])
