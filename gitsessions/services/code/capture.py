"""The tree of a snapshot: the working tree as it is now, written into a copy of the
project's index (objects only; snapshots.py records it).

Invariants:
- A copy of the real index (`GIT_INDEX_FILE`), so git's stat cache keeps an unchanged
  tree cheap; the user's index is read by one `git status` without optional locks, never
  written.
- The tree is what `git add -A` into that copy gives (ignored files out, tracked ones
  kept), walked once from the paths `git status` reports; files and links hashed
  `--no-filters` (no clean filter ever runs); files over `max_file_bytes` left out and
  named; mode 100755 for an owner-executable file (with `core.fileMode` false, the
  index's).
"""

import os
import shutil
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from stat import S_ISLNK, S_ISREG

from gitsessions.services.code.projectgit import filters_listed
from gitsessions.services.code.snapshots import Captured, Project, SnapshotError, git, out
from gitsessions.services.settings.config import DEFAULT_MAX_FILE_BYTES


@dataclass(frozen=True)
class Scan:
    """What `git status` says of the working tree against the index: the HEAD commit,
    and the paths whose working-tree side differs or that are untracked."""

    head: str | None
    changed: tuple[bytes, ...]
    raw: bytes


def scan(project: Project, env: Mapping[str, str]) -> Scan:
    """One read-only `git status` (no optional locks: the user's index is not even
    refreshed)."""
    done = git(
        project.root,
        env,
        "status",
        "--porcelain=v2",
        "-z",
        "--branch",
        "--untracked-files=all",
        "--no-renames",
        "--ignore-submodules=dirty",
        extra={"GIT_OPTIONAL_LOCKS": "0"},
    )
    head: str | None = None
    changed: list[bytes] = []
    for entry in done.stdout.split(b"\0"):
        if entry.startswith(b"# branch.oid "):
            oid = entry[len(b"# branch.oid ") :].decode()
            head = oid if oid != "(initial)" else None
        elif entry.startswith(b"1 "):
            fields = entry.split(b" ", 8)
            if fields[1][1:2] != b".":
                changed.append(fields[8])
        elif entry.startswith(b"u "):
            changed.append(entry.split(b" ", 10)[10])
        elif entry.startswith(b"? "):
            changed.append(entry[2:])
    return Scan(head, tuple(changed), done.stdout)


def capture(
    project: Project,
    env: Mapping[str, str],
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    scanned: Scan | None = None,
) -> Captured:
    """The tree of the working tree as it is now (objects written, no commit, no ref):
    the changed paths go into a copy of the real index, whose tree is written."""
    scanned = scanned or scan(project, env)
    keep, left_out = _by_size(project.root, scanned.changed, max_file_bytes)
    with tempfile.TemporaryDirectory(prefix="gitsessions-snap-") as scratch:
        index = Path(scratch) / "index"
        if project.index.exists():
            shutil.copyfile(project.index, index)
        extra = {"GIT_INDEX_FILE": str(index), "GIT_OPTIONAL_LOCKS": "0"}
        env = filters_listed(project.root, env)  # one listing for the commands below
        modes = _index_modes(project.root, env, extra)
        files, others = _hashed(project.root, env, keep, Path(scratch), modes)
        if others:  # gone (removed from the index) or a nested repository (a gitlink)
            payload = b"".join(p + b"\0" for p in others)
            git(project.root, env, "update-index", "--add", "--remove", "-z", "--stdin",
                input=payload, extra=extra)  # fmt: skip
        if files:
            git(project.root, env, "update-index", "-z", "--index-info",
                input=b"".join(files), extra=extra)  # fmt: skip
        tree = out(git(project.root, env, "write-tree", extra=extra))
    return Captured(tree, scanned.head, tuple(left_out))


def _index_modes(
    root: Path, env: Mapping[str, str], extra: Mapping[str, str]
) -> dict[bytes, bytes] | None:
    """None when the execute bit on disk counts (`core.fileMode`, git's default); else
    each index entry's mode, which a changed file then keeps (as `update-index` does)."""
    done = git(root, env, "config", "--type=bool", "core.fileMode", check=False)
    if out(done) != "false":
        return None
    listed = git(root, env, "ls-files", "-s", "-z", extra=extra).stdout.split(b"\0")
    return {e.split(b"\t", 1)[1]: e.split(b" ", 1)[0] for e in listed if b"\t" in e}


def _hashed(
    root: Path,
    env: Mapping[str, str],
    paths: Iterable[bytes],
    scratch: Path,
    modes: dict[bytes, bytes] | None = None,
) -> tuple[list[bytes], list[bytes]]:
    """Blobs of the regular files and symbolic links among `paths`, written with
    `hash-object -w --no-filters` (their bytes as they are: no clean filter or other
    conversion runs), as `--index-info -z` records; and the other paths (gone, or a
    directory: a nested repository), for `update-index --add --remove`. A file's mode
    is 100755 with its owner's execute bit, else 100644; with `modes` (core.fileMode
    false) a file in the index keeps its mode there."""
    entries: list[tuple[bytes, bytes]] = []  # (mode, path)
    sources: list[bytes] = []  # what hash-object reads for each entry
    others: list[bytes] = []
    for path in paths:
        full = os.path.join(bytes(root), path)
        try:
            st = os.lstat(full)
        except OSError:
            others.append(path)
            continue
        if S_ISLNK(st.st_mode):
            target = scratch / f"link-{len(sources)}"  # the blob of a link is its target
            target.write_bytes(os.readlink(full))
            entries.append((b"120000", path))
            sources.append(os.fsencode(target))
        elif S_ISREG(st.st_mode):
            mode = b"100755" if st.st_mode & 0o100 else b"100644"
            if modes is not None:
                mode = modes.get(path, b"100644")
                mode = mode if mode in (b"100644", b"100755") else b"100644"
            entries.append((mode, path))
            sources.append(full)
        else:
            others.append(path)
    if not entries:
        return [], others
    listed = b"".join(_c_quoted(source) + b"\n" for source in sources)
    done = git(root, env, "hash-object", "-w", "--no-filters", "--stdin-paths", input=listed)
    shas = done.stdout.split()
    if len(shas) != len(entries):
        raise SnapshotError(f"git hash-object failed in {root}: {len(shas)} of {len(entries)}")
    pairs = zip(entries, shas, strict=True)
    records = [mode + b" " + sha + b"\t" + path + b"\0" for (mode, path), sha in pairs]
    return records, others


def _c_quoted(path: bytes) -> bytes:
    """A path as one line of `--stdin-paths` (git unquotes a line that starts with `"`)."""
    if b"\n" not in path and not path.startswith(b'"'):
        return path
    escaped = path.replace(b"\\", b"\\\\").replace(b'"', b'\\"').replace(b"\n", b"\\n")
    return b'"' + escaped + b'"'


def _by_size(root: Path, paths: Iterable[bytes], limit: int) -> tuple[list[bytes], list[str]]:
    keep: list[bytes] = []
    left_out: list[str] = []
    for path in paths:
        try:
            stat = os.lstat(os.path.join(bytes(root), path))
        except OSError:
            keep.append(path)  # gone: update-index --remove takes it out
            continue
        if stat.st_size > limit and not os.path.islink(os.path.join(bytes(root), path)):
            left_out.append(path.decode("utf-8", "replace"))
        else:
            keep.append(path)
    return keep, left_out
