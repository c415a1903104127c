"""What a fetch brought, checked against the session layout before any ref names it (what
git's fsck, run before on every object, does not check).

Invariants: every tree the fetched commits reach and no ref here reaches yet is read, each
entry a layout name (`[A-Za-z0-9][A-Za-z0-9._-]*`, never `.git` in any case or `git~1`)
and a mode the store writes (file or directory: no symlink, no executable). A commit
reaching one bad tree is refused whole (`{commit: why}`): no ref names it and the next
`gc` removes its objects. Trees are read `BATCH` at a time.
"""

import re
from collections.abc import Mapping
from pathlib import Path

from dulwich.errors import ObjectFormatException
from dulwich.objects import parse_tree

from gitsessions.store import stockgit
from gitsessions.store.errors import StoreError

NAME = re.compile(rb"[A-Za-z0-9][A-Za-z0-9._-]{0,254}")
MODES = frozenset({0o100644, 0o040000})  # what the session layout holds
# a whole raw tree of such entries (`<mode> <name>\0<20-byte id>`), matched in one go;
# only a tree that fails it is parsed, to name the entry
LAYOUT = re.compile(rb"(?:(?:100644|40000) [A-Za-z0-9][A-Za-z0-9._-]{0,254}\x00.{20})*", re.S)
BATCH = 16384  # trees read in one `cat-file --batch` (a few MB)


class Refused(StoreError):
    """A tree that came holds an entry outside the session layout."""


def check_entries(tree_id: str, raw: bytes) -> None:
    """A tree's entries, each a name and mode of the session layout (else `Refused`).
    (`NAME` never starts with `.` nor holds `~`: no `.git` in any case, no `git~1`.)"""
    if LAYOUT.fullmatch(raw):
        return
    try:
        entries = list(parse_tree(raw, 20))
    except (ObjectFormatException, ValueError) as error:
        raise Refused(f"object {tree_id[:12]}: a tree that cannot be read ({error})") from None
    for name, mode, _sha in entries:
        shown = name.decode("utf-8", "replace")
        if not NAME.fullmatch(name) or name.lower().rstrip(b". ") in (b".git", b"git~1"):
            raise Refused(f"object {tree_id[:12]}: tree entry {shown!r} is not a session file")
        if mode not in MODES:
            raise Refused(f"object {tree_id[:12]}: tree entry {shown!r} has mode {mode:o}")


def refused(store: Path, commits: list[bytes], env: Mapping[str, str] | None) -> dict[bytes, str]:
    """`{commit: why}` for each of `commits` that reaches a tree, new to the store, with
    an entry outside the session layout; empty when all pass."""
    trees = stockgit.trees(store, commits, env)
    bad: dict[bytes, str] = {}
    for start in range(0, len(trees), BATCH):
        chunk = trees[start : start + BATCH]
        for sha, raw in zip(chunk, stockgit.contents(store, chunk, env), strict=True):
            try:
                if raw is None:
                    raise Refused(f"object {sha.decode()[:12]} did not come")
                check_entries(sha.decode(), raw)
            except Refused as error:
                bad[sha] = f"the remote's objects fail the checks ({error})"
    if not bad:
        return {}
    if len(commits) == 1:
        return {commits[0]: next(iter(bad.values()))}
    out: dict[bytes, str] = {}
    for commit in commits:  # which ones: each one's own trees
        hit = next((sha for sha in stockgit.trees(store, [commit], env) if sha in bad), None)
        if hit is not None:
            out[commit] = bad[hit]
    return out
