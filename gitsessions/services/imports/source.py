"""A source session as a format's reader found it (`Source`), what its import did
(`Outcome`), and where the import of a session stood when it passed a line a branch of
its file leaves from (`Snapshot`): what a branch's import goes on from.
"""

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gitsessions.services.imports.assemble import Assembler, Item
from gitsessions.services.imports.lines import Tally


@dataclass
class Snapshot:
    """An import as it stood right before the first line past a branch's fork line:
    the assembler (a copy), the outputs taken and their digest; then the commit the
    import ended there (None: none of this import's), the outputs it holds (the reply
    being read closed first, when the next line would close it anyway) and their digest."""

    assembler: Assembler
    outputs: int
    digest: str
    commit: bytes | None = None
    committed: int = 0
    committed_digest: str = ""


@dataclass
class Source:
    """One session of a source, as its format's reader found it (first pass done)."""

    format: str  # "claude-code", "codex"
    path: Path
    source_id: str
    session_id: str
    tally: Tally
    items: Callable[[], Iterator[Item]]  # the second pass
    title: str | None = None
    summary: str | None = None
    cwd: str | None = None
    branch: str | None = None
    first_time: str | None = None
    last_time: str | None = None
    parent: str | None = None  # the store id of the session it was forked from
    extra: dict[str, Any] = field(default_factory=dict)  # more of `imported`
    # a source read from where its last import stopped (`imported.resume`): the outputs
    # and digest so far, the turn and step, and the line it was read from
    start: dict[str, Any] | None = None
    # where the next import may start reading, once this one has read to the end
    resume_point: Callable[[Assembler], dict[str, Any] | None] | None = None
    # nothing more will be written to the file (`finished.is_finished`): its end settles
    # everything, a call never answered stubbed; else what may still grow is held back
    finished: bool = False
    # a branch of the file: the store id of the session it leaves (its fork point is the
    # last commit of that session its outputs begin with; `fork_base`)
    fork_of: str | None = None
    # the lines after which this import ends a commit (where a branch of it leaves it),
    # and where it records how it stood there (shared with its branches' sources)
    cuts: list[int] = field(default_factory=list)
    snapshots: dict[int, Snapshot] = field(default_factory=dict)
    # a branch: the last line it shares with the session it leaves (in `snapshots`), and
    # its items past a line
    fork_line: int | None = None
    items_after: Callable[[int], Iterator[Item]] | None = None
    # the assembler to go on with (a branch's, from its fork line's snapshot)
    assembler: Assembler | None = None
    # where the session holds another path of the file than this one (its import
    # diverged): this path as a branch of it, given the session's header (None: none)
    moved: Callable[[dict[str, Any]], "Source | None"] | None = None


@dataclass
class Outcome:
    """What an import of one source did. `status`: created, appended, unchanged, or
    (nothing written) shortened, rewritten, diverged, continued, empty."""

    source: Source
    status: str
    messages: int = 0  # transcript messages written now
    compactions: int = 0
    held: int | None = None  # the first line held back (may still grow)
    orphans: int = 0  # tool results without their call
    stubbed: int = 0  # calls the source holds no result for (given a stub result)
    read_from_line: int | None = None  # only the lines from here on were read
    redacted: dict[str, int] = field(default_factory=dict)
    detail: str = ""
    moved_from: str | None = None  # a path that moved in the source: the session it left

    @property
    def wrote(self) -> bool:
        return self.status in ("created", "appended")
