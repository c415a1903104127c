"""The snapshot chains of a project: each session's snapshot ref and the snapshots it
holds, read by one `git rev-list` (retention prunes them, blame walks them).

Invariants:
- Read-only: only `for-each-ref` and `rev-list` run, stopped at the user's branches,
  tags and remotes; nothing here writes, prints or reads the environment.
- A keep commit's first parent is the snapshot it holds, its second what the ref named
  before; an old-style chain links snapshots through their second parent (`linked`).
"""

from collections.abc import Mapping
from dataclasses import dataclass, field

from gitsessions.services.code.projectgit import OBJECT_ID
from gitsessions.services.code.snapshots import (
    KEEP_SUBJECT,
    REF_PREFIX,
    SNAPSHOT_SUBJECT,
    TIME_TRAILER,
    Project,
    git,
    out,
)
from gitsessions.values.ids import is_session_id


@dataclass(frozen=True)
class Node:
    """A gitsessions commit in the project: its parents, commit time, kind, tree and
    subject."""

    parents: tuple[str, ...]
    time: int
    keep: bool  # a keep commit (else a snapshot)
    tree: str = ""
    subject: str = ""
    nanos: int = 0  # its `Snapshot-Time` trailer: when it was taken, in ns (0: none)


@dataclass
class Chain:
    """One session's snapshot ref: what it names and the snapshots it holds, newest
    first; `linked` are the old-style ones whose second parent is the previous one."""

    session: str
    tip: str
    snapshots: list[str] = field(default_factory=list)
    linked: set[str] = field(default_factory=set)


def snapshot_refs(project: Project, env: Mapping[str, str]) -> dict[str, str]:
    """`{session id: what its ref names}` for every snapshot ref of the project."""
    done = git(project.root, env, "for-each-ref", "--format=%(objectname) %(refname)",
               REF_PREFIX)  # fmt: skip
    refs: dict[str, str] = {}
    for line in out(done).splitlines():
        sha, _, name = line.partition(" ")
        sid = name[len(REF_PREFIX) :]
        if is_session_id(sid):
            refs[sid] = sha
    return refs


def _nodes(project: Project, env: Mapping[str, str]) -> dict[str, Node]:
    """Every gitsessions snapshot and keep commit the snapshot refs reach (one walk,
    stopped at the user's branches, tags and remotes)."""
    done = git(
        project.root,
        env,
        "rev-list",
        "--parents",
        f"--format=%ct %(trailers:key={TIME_TRAILER},valueonly,separator=)%x1f%T %s",
        f"--glob={REF_PREFIX}*",
        "--not",
        "--branches",
        "--tags",
        "--remotes",
    )
    nodes: dict[str, Node] = {}
    lines = out(done).splitlines()
    for header, body in zip(lines[0::2], lines[1::2], strict=False):
        shas = header.split()[1:]
        stamp, _, rest = body.partition(" ")
        nanos, _, rest = rest.partition("\x1f")
        tree, _, subject = rest.partition(" ")
        if not OBJECT_ID.fullmatch(tree):  # a forged trailer's separator: not ours
            continue
        if subject.startswith(KEEP_SUBJECT) or subject.startswith(SNAPSHOT_SUBJECT):
            keep = subject.startswith(KEEP_SUBJECT)
            taken = int(nanos) if nanos.isdigit() and len(nanos) < 20 else 0
            nodes[shas[0]] = Node(tuple(shas[1:]), int(stamp or 0), keep, tree, subject, taken)
    return nodes


def chains(project: Project, env: Mapping[str, str]) -> tuple[list[Chain], dict[str, Node]]:
    """Each snapshot ref's chain, and the commits they are made of."""
    nodes = _nodes(project, env)
    found: list[Chain] = []
    for sid, tip in snapshot_refs(project, env).items():
        chain = Chain(sid, tip)
        node: str | None = tip
        while node is not None and node in nodes:
            info = nodes[node]
            if info.keep:
                chain.snapshots.append(info.parents[0])
                node = info.parents[1] if len(info.parents) > 1 else None
                continue
            chain.snapshots.append(node)
            below = next((p for p in info.parents if p in nodes), None)
            if below is not None:
                chain.linked.add(node)
            node = below
        found.append(chain)
    return found, nodes
