"""What code snapshots leave in the project's `.git`, kept small: packed refs and objects.

Invariants:
- Only stock git writes, each step one `git gc` runs, safe beside the user's git (a lock
  held elsewhere: tried next time): `pack-objects` of what loose snapshot refs alone
  reach, `prune-packed`, `pack-refs --all`, and past `PACKS_AT` packs `repack -d -l
  --geometric=2`, which drops nothing.
- A tidy runs at `LOOSE_REFS_AT` loose snapshot refs, or every `TIDY_AFTER` snapshots of
  a process; `gc` always. Nothing here prunes: retention.py decides what may go, the
  project's own `git gc` removes it.
"""

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from gitsessions.services.code.snapshots import REF_PREFIX, Project, git, out
from gitsessions.values.ids import is_session_id

LOOSE_REFS_AT = 16
TIDY_AFTER = 16
PACKS_AT = 12


@dataclass(frozen=True)
class Tidied:
    """What one tidy packed: loose snapshot refs, and the objects of the new pack."""

    refs: int
    objects: int


@dataclass(frozen=True)
class Footprint:
    """Loose snapshot refs and the project's loose objects and packs (`count-objects`)."""

    loose_refs: int
    loose_objects: int
    packs: int


def _common(project: Project, env: Mapping[str, str]) -> Path:
    if project.common is not None:
        return project.common
    common = Path(out(git(project.root, env, "rev-parse", "--git-common-dir")))
    return common if common.is_absolute() else project.root / common


def loose_refs(project: Project, env: Mapping[str, str]) -> list[str]:
    """The session ids whose snapshot ref is a loose file."""
    folder = _common(project, env) / REF_PREFIX
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    return [n for n in names if is_session_id(n) and (folder / n).is_file()]


def footprint(project: Project, env: Mapping[str, str]) -> Footprint:
    done = git(project.root, env, "count-objects", "-v")
    counts = dict(line.split(": ", 1) for line in out(done).splitlines() if ": " in line)
    return Footprint(
        len(loose_refs(project, env)), int(counts.get("count", 0)), int(counts.get("packs", 0))
    )


def tidy(project: Project, env: Mapping[str, str], force: bool = False) -> Tidied | None:
    """Pack the loose snapshot refs and what they reach (see the module's docstring);
    None when there was nothing to do yet."""
    loose = loose_refs(project, env)
    if not loose or (not force and len(loose) < LOOSE_REFS_AT):
        return None
    mine = git(project.root, env, "for-each-ref", "--format=%(objectname)",
               *(REF_PREFIX + sid for sid in loose)).stdout.split()  # fmt: skip
    theirs = git(project.root, env, "for-each-ref", "--format=%(objectname)", "refs/heads",
                 "refs/tags", "refs/remotes").stdout.split()  # fmt: skip
    listed = git(project.root, env, "rev-list", "--objects", "--unpacked", "--stdin",
                 input=b"\n".join([*mine, *(b"^" + t for t in theirs)]) + b"\n").stdout  # fmt: skip
    objects = len(listed.splitlines())
    if objects:
        pack = out(git(project.root, env, "rev-parse", "--git-path", "objects/pack/pack"))
        git(project.root, env, "pack-objects", "-q", str(project.root / pack), input=listed)
        git(project.root, env, "prune-packed", "-q")
    git(project.root, env, "pack-refs", "--all")
    if footprint(project, env).packs >= (2 if force else PACKS_AT):
        git(project.root, env, "repack", "-d", "-l", "-q", "--geometric=2")
    return Tidied(len(loose), objects)
