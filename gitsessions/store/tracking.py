"""The refs a sync writes in the store: remote-tracking refs, the branches a pull creates
or fast-forwards, and the `sending` refs a push names its commits by.

Invariants:
- A branch moves only through `update_refs_if_equal`: compare-and-swap from the value
  seen, its new head in `headlog` first; a ref that moved is reported, never
  overwritten. A branch that exists moves under its flock; one created takes none (a
  pull creates thousands), and one a writer here created meanwhile is found after the
  write by its flock and loose file and reported as not moved (its value stands).
- A pull's created branches, tracking refs and first 256 fast-forwards go in one
  `packed-refs` write (`refpack`); a loose file holding the old value is removed only
  after (a kill leaves the old value). Unless nothing packed goes and the refs that
  change are few beside `packed-refs` (`LOOSE_PER_PACKED`: a file and an fsync each
  against 100,000 lines rewritten at 50,000 sessions): then each is a loose file,
  written aside (`gitsessions/newref-<pid>`), fsynced, and linked in (a create: never
  over a file there) or renamed over the old, the created ones named in
  `packed-refs.lock` first (what `doctor` calls unfinished after a kill), and only the
  tracking refs that moved are written; maintenance packs them later.
- Tracking refs are named only for layout refs; no file is read by a name breaking git's
  rules: nothing a remote lists reaches a path outside `refs/`.
- The caller has fetched and checked every object first, under the shared lock.
- `sending/<pid>/` refs live while their push runs (a dead process's are dropped);
  `forget_session` drops a deleted session's with its tracking refs, so a purge reaches them.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from gitsessions.store import headlog
from gitsessions.store.projectrefs import PROJECTS
from gitsessions.store.refnames import BadRefName, check, of_layout, shown
from gitsessions.store.refpack import (
    fsync_dir,
    name_creating,
    packed_lock,
    read_loose,
    read_packed,
    read_ref_file,
)
from gitsessions.store.repo import GitStore
from gitsessions.store.storelock import ref_lock_name

Git = GitStore  # what a pull, a push, a fork read through

SESSIONS = b"refs/heads/sessions/"
TOMBSTONES = b"refs/gitsessions/tombstones"
# a loose file (written and fsynced alone) costs about what this many `packed-refs` lines
# do rewritten: a pull writes loose only what is fewer files than the packed lines / this
LOOSE_PER_PACKED = 128
SENDING = b"refs/gitsessions/sending/"  # + pid + /sessions/<id>, /projects/..: a push's
NEWREF = "newref-"  # + pid: a loose ref file written aside in `gitsessions/`


def tracking_prefix(name: str) -> bytes:
    return b"refs/remotes/" + name.encode() + b"/"


def tracking_name(name: str, remote_ref: bytes) -> bytes:
    """Where the remote `name`'s `remote_ref` is tracked here; `BadRefName` unless
    `remote_ref` is a name of the store's layout (`refnames.of_layout`)."""
    out = _tracked(name, remote_ref)
    check(out)
    return out


def _tracked(name: str, remote_ref: bytes) -> bytes:
    """`tracking_name` unchecked against git's rules (for a `packed-refs` write, whose
    `commit` checks every name at once)."""
    if not of_layout(remote_ref):
        raise BadRefName(f"not a ref a remote of sessions holds: {shown(remote_ref)}")
    if remote_ref.startswith(b"refs/heads/sessions/"):
        return tracking_prefix(name) + remote_ref[len(b"refs/heads/") :]
    return tracking_prefix(name) + remote_ref[len(b"refs/") :]


@dataclass
class Tracking:
    """Remote-tracking refs of remote `name` to set: `{remote ref: sha, or None to remove
    it}`; with `replace`, every other one of this remote goes too."""

    name: str
    refs: dict[bytes, bytes | None]
    replace: bool = False

    def apply(self, packed: dict[bytes, bytes], loose: dict[bytes, bytes]) -> dict[bytes, bytes]:
        """`packed` as it is to be written: this remote's `loose` refs (stock git writes
        them) folded in unless replaced, then `refs` set."""
        prefix = tracking_prefix(self.name)
        if self.replace:
            new = {n: s for n, s in packed.items() if not n.startswith(prefix)}
        else:
            new = {**packed, **loose}
        for ref, sha in self.refs.items():  # the names checked as `packed-refs` is written
            if sha is None:
                new.pop(_tracked(self.name, ref), None)
            else:
                new[_tracked(self.name, ref)] = sha
        return new

    def changes(
        self, packed: dict[bytes, bytes], loose: dict[bytes, bytes]
    ) -> tuple[dict[bytes, bytes], list[bytes]] | None:
        """What `apply` changes as loose files: (the tracking refs whose value differs
        from the one they hold, the loose ones to remove); None when a packed one goes
        (only a `packed-refs` write removes it)."""
        prefix = tracking_prefix(self.name)
        held = {n: s for n, s in packed.items() if n.startswith(prefix)}  # tracking name: sha
        held.update(loose)
        now = {_remote_ref(prefix, n): n for n in held}  # remote ref: its tracking name
        write: dict[bytes, bytes] = {}
        gone: list[bytes] = []
        for ref, sha in self.refs.items():
            name = now.get(ref)
            if sha is None:
                gone += [] if name is None else [name]
            elif name is None or held[name] != sha:  # only what moved is named anew
                write[_tracked(self.name, ref)] = sha
        if self.replace:
            gone += [n for ref, n in now.items() if ref not in self.refs]
        if any(n in packed for n in gone):
            return None
        return write, gone


def _remote_ref(prefix: bytes, name: bytes) -> bytes:
    """The remote's ref a tracking ref `name` (under `prefix`) tracks: `_tracked`
    reversed."""
    tail = name[len(prefix) :]
    return (b"refs/heads/" if tail.startswith(b"sessions/") else b"refs/") + tail


def set_tracking(
    git: Git, name: str, refs: dict[bytes, bytes | None], *, replace: bool = False
) -> int:
    """Set the remote-tracking refs of `name` for `refs` (remote ref names; None removes
    one), in one `packed-refs` write; with `replace`, every other one of this remote
    goes too. Returns how many were removed."""
    prefix = tracking_prefix(name)
    before = {**read_packed(git.path / "packed-refs"), **read_loose(git.path, prefix)}
    update_refs_if_equal(git, {}, Tracking(name, refs, replace))
    after = {**read_packed(git.path / "packed-refs"), **read_loose(git.path, prefix)}
    return len([n for n in before if n.startswith(prefix) and n not in after])


def update_refs_if_equal(
    git: Git,
    moves: dict[bytes, tuple[bytes | None, bytes]],
    tracking: Tracking | None = None,
) -> set[bytes]:
    """Move each ref of `moves` from its old value (None: absent, loose or packed) to
    its new one, only if it still holds the old value (compare-and-swap), all in one
    fsynced `packed-refs` write with `tracking`: one transaction. A ref that exists
    here is moved holding its branch's flock (the caller bounds how many: one file
    each); a ref created takes none (`_created_meanwhile`). A loose file holding the
    old value goes after the write (until then it shadows the new one: a kill in
    between leaves the old value). When nothing packed goes and the files are few
    beside `packed-refs` (`LOOSE_PER_PACKED`), each ref is a loose file instead
    (`_write_loose`) and `packed-refs` stays. Returns the names moved. The caller
    holds `git.locked()`."""
    held = sorted(ref for ref, (old, _new) in moves.items() if old is not None)
    created = sorted(ref for ref, (old, _new) in moves.items() if old is None)
    with contextlib.ExitStack() as stack:
        for ref in held:
            stack.enter_context(git.ref_locked(ref))
        loose: dict[bytes, bytes] = {}
        with packed_lock(git.path) as commit:
            packed = read_packed(git.path / "packed-refs")
            moved = [ref for ref in held if _holds(git.path, ref, packed, moves[ref][0])]
            made = _absent(git.path, created, packed)
            if tracking is not None:
                loose = read_loose(git.path, tracking_prefix(tracking.name))
            plan = ({}, []) if tracking is None else tracking.changes(packed, loose)
            files = len(moved) + len(made) + (0 if plan is None else len(plan[0]))
            if plan is not None and files * LOOSE_PER_PACKED <= len(packed):
                # nothing packed goes, and the files (an fsync each) cost less than
                # `packed-refs` rewritten: loose files, `packed-refs` as it is
                name_creating(git.path, {ref: moves[ref][1] for ref in made})
                headlog.record(git.path, _session_heads(moved + made, moves))
                made = _write_loose(git.path, moved, made, moves, *plan)
                stale = []  # the moved branches' files hold the new values
                loose = {}
            else:
                new = tracking.apply(packed, loose) if tracking is not None else packed
                new = {**new, **{ref: moves[ref][1] for ref in moved + made}}
                headlog.record(git.path, _session_heads(moved + made, moves))
                if new != packed:
                    commit(new)
                stale = moved  # a loose file holding the old value goes after the write
        for ref in stale:
            with contextlib.suppress(FileNotFoundError):
                (git.path / os.fsdecode(ref)).unlink()
        _drop_loose(git, loose)
    return {*moved, *made} - _created_meanwhile(git, made, moves)


def _write_loose(
    store_path: Path,
    moved: list[bytes],
    made: list[bytes],
    moves: dict[bytes, tuple[bytes | None, bytes]],
    tracked: dict[bytes, bytes],
    gone: list[bytes],
) -> list[bytes]:
    """Write the branches `moved` (their flocks held) and `made` (each created only if
    no file is there: `os.link`), then the tracking refs `tracked`, as loose files, each
    whole (written and fsynced aside, then linked or renamed in); remove the loose
    tracking refs `gone` that still hold what was read. Returns those of `made` created."""
    folders: set[Path] = set()
    (store_path / "gitsessions").mkdir(mode=0o700, exist_ok=True)
    _sweep_aside(store_path / "gitsessions")
    for ref in moved:
        _put(store_path, ref, moves[ref][1], folders, create=False)
    made = [ref for ref in made if _put(store_path, ref, moves[ref][1], folders, create=True)]
    for ref, sha in tracked.items():
        check(ref)
        _put(store_path, ref, sha, folders, create=False)
    for ref in gone:
        file = store_path / os.fsdecode(ref)
        with contextlib.suppress(FileNotFoundError):
            if read_ref_file(file) is not None:
                file.unlink()
                folders.add(file.parent)
    for folder in sorted(folders):
        fsync_dir(folder)
    return made


def _sweep_aside(folder: Path) -> None:
    """Remove the files aside (`newref-<pid>`) of processes that are gone (killed)."""
    for entry in os.listdir(folder):
        pid = entry[len(NEWREF) :]
        if entry.startswith(NEWREF) and pid.isdigit() and not _alive(int(pid)):
            with contextlib.suppress(FileNotFoundError):
                (folder / entry).unlink()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _put(store_path: Path, ref: bytes, sha: bytes, folders: set[Path], *, create: bool) -> bool:
    """Write `sha` to `ref`'s loose file through a file aside (`gitsessions/newref-<pid>`):
    linked in when `create` (False when a file is there), else renamed over it."""
    target = store_path / os.fsdecode(ref)
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    aside = store_path / "gitsessions" / f"{NEWREF}{os.getpid()}"
    aside.unlink(missing_ok=True)  # a killed process's of this pid
    fd = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, sha + b"\n")
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        if create:
            os.link(aside, target)
        else:
            os.replace(aside, target)
    except FileExistsError:
        return False
    finally:
        aside.unlink(missing_ok=True)
    folders.add(target.parent)
    return True


def _absent(store_path: Path, refs: list[bytes], packed: dict[bytes, bytes]) -> list[bytes]:
    """Those of `refs` neither packed nor loose (each folder's loose files listed once,
    not a lookup each)."""
    listed: dict[str, set[str]] = {}
    out: list[bytes] = []
    for ref in refs:
        check(ref)
        folder, _slash, leaf = os.fsdecode(ref).rpartition("/")
        if folder not in listed:
            try:
                listed[folder] = set(os.listdir(store_path / folder))
            except (FileNotFoundError, NotADirectoryError):
                listed[folder] = set()
        if ref not in packed and leaf not in listed[folder]:
            out.append(ref)
    return out


def _created_meanwhile(
    git: Git, created: list[bytes], moves: dict[bytes, tuple[bytes | None, bytes]]
) -> set[bytes]:
    """Of the refs just created in `packed-refs`, those a writer here created meanwhile
    (its loose file shadows ours: its value stands, ours stays named by the
    remote-tracking ref, and the next pull judges the two). Only a branch whose flock
    file exists can have such a writer (a writer makes the file before it reads the
    ref; one that makes it now reads our value): its flock is taken, so a writer under
    way is waited for, and its loose file read."""
    try:
        locks = set(os.listdir(git.path / "locks"))
    except FileNotFoundError:
        return set()
    out: set[bytes] = set()
    for ref in created:
        if ref_lock_name(ref) not in locks:
            continue
        with git.ref_locked(ref):
            found = read_ref_file(git.path / os.fsdecode(ref))
        if found is not None and found != moves[ref][1]:
            out.add(ref)
    return out


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
    check(ref)
    found = read_ref_file(store_path / os.fsdecode(ref))
    return packed.get(ref) == value if found is None else found == value


def _drop_loose(git: Git, loose: dict[bytes, bytes]) -> None:
    """Remove loose refs now in `packed-refs` (each only if it still holds the value
    that went there: another process's fetch may have written it again)."""
    for name, sha in loose.items():
        file = git.path / os.fsdecode(name)
        if read_ref_file(file) == sha:
            with contextlib.suppress(FileNotFoundError):
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


@contextlib.contextmanager
def sending(git: Git, sessions: dict[bytes, bytes]) -> Iterator[bytes]:
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

    rewrite({staged_name(space, ref): sha for ref, sha in sessions.items()})
    try:
        yield space
    finally:
        rewrite({})


def staged_name(space: bytes, ref: bytes) -> bytes:
    """Where a push stages `ref` (a session branch, or a project index ref) in `space`:
    `<space>sessions/<id>`, `<space>projects/<key>/<id>`."""
    if ref.startswith(b"refs/heads/"):
        return space + ref[len(b"refs/heads/") :]
    assert ref.startswith(PROJECTS), ref
    return space + b"projects/" + ref[len(PROJECTS) :]


def _ours_or_stale(name: bytes, space: bytes) -> bool:
    if not name.startswith(SENDING):
        return False
    if name.startswith(space):
        return True
    pid = name[len(SENDING) :].split(b"/", 1)[0]
    return not pid.isdigit() or not _alive(int(pid))
