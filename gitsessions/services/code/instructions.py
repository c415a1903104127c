"""Project instructions for the system prompt: `<home>/AGENTS.md`, then one `AGENTS.md` (or
`CLAUDE.md`) per folder from the repository root down to the workspace, nearest last.

Invariants:
- A file is read only when it resolves inside the tree it was found in (no link out of
  the project), opened without blocking and only when regular (a FIFO is never waited
  on), each skip said in a note.
- At most `MAX_FILE` bytes a file and `MAX_TOTAL` in all; a cut is said in the prompt and
  in `info`, never silently.
- Read again at every start or resume; compaction never summarises the system prompt.
"""

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

NAMES = ("AGENTS.md", "CLAUDE.md")  # the first a folder has is its file
MAX_FILE = 32 * 1024
MAX_TOTAL = 64 * 1024


@dataclass(frozen=True)
class Instruction:
    path: Path
    text: str  # what the model is given (cut when `cut`)
    size: int  # the file's bytes
    cut: bool

    def as_record(self) -> dict[str, Any]:
        """What the session header records (`info` shows it): path, size, tokens, cut."""
        return {
            "path": str(self.path),
            "bytes": self.size,
            "tokens": approximate_tokens(self.text),
            "cut": self.cut,
        }


def approximate_tokens(text: str) -> int:
    """About how many tokens `text` is (four bytes a token: no tokenizer is loaded)."""
    return -(-len(text.encode("utf-8")) // 4)


def _inside(path: Path, top: Path) -> bool:
    try:
        return Path(os.path.realpath(path)).is_relative_to(os.path.realpath(top))
    except (OSError, ValueError):
        return False


def _read(path: Path, top: Path, budget: int) -> tuple[Instruction | None, str | None]:
    """The instruction at `path` (None when there is none), or a note why it was skipped."""
    if not os.path.lexists(path):
        return None, None
    if not _inside(path, top):
        return None, f"note: {path} points outside {top}; not read as instructions"
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)  # a FIFO opens at once (O_NONBLOCK), and is refused below
        with open(fd, "rb") as file:
            status = os.fstat(fd)
            if stat.S_ISDIR(status.st_mode):
                return None, None  # a folder named AGENTS.md: the next name is tried
            if not stat.S_ISREG(status.st_mode):
                return None, f"note: {path} is not a regular file; not read as instructions"
            size = status.st_size
            raw = file.read(min(MAX_FILE, budget) + 1)
    except OSError as error:
        return None, f"note: {path} cannot be read ({error.strerror}); not used"
    keep = min(MAX_FILE, budget)
    cut = len(raw) > keep or size > len(raw)
    if cut:
        raw = raw[:keep]
        raw = raw[: raw.rfind(b"\n") + 1] or raw
    return Instruction(path, raw.decode("utf-8", "replace"), size, cut), None


def find(workspace: Path, root: Path | None, home: Path) -> tuple[list[Instruction], list[str]]:
    """The instructions in force in `workspace` (`root`: its repository, None outside
    one), the user's first; and the notes of files skipped."""
    found: list[Instruction] = []
    notes: list[str] = []
    budget = MAX_TOTAL
    workspace = Path(os.path.realpath(workspace))
    root = Path(os.path.realpath(root)) if root is not None else None
    top = root if root is not None and workspace.is_relative_to(root) else workspace
    folders = [top, *reversed([p for p in workspace.parents if p.is_relative_to(top) and p != top])]
    if workspace != top:
        folders.append(workspace)
    places = [(home, home), *((folder, top) for folder in folders)]
    for folder, within in places:
        for name in NAMES:
            if budget <= 0:
                break
            instruction, note = _read(folder / name, within, budget)
            if note:
                notes.append(note)
            if instruction is not None:
                found.append(instruction)
                budget -= len(instruction.text.encode("utf-8"))
                break
            if note:
                break
    return found, notes


def prompt_section(instructions: list[Instruction]) -> str:
    """The system prompt's part that gives them, with their paths; empty without any."""
    if not instructions:
        return ""
    parts = [
        "\nProject instructions, from these files (the user's first, then the project's "
        "from its root down: the nearest folder's last, and it wins where they differ):"
    ]
    for item in instructions:
        parts.append(f'<instructions path="{item.path}">\n{item.text.rstrip()}\n</instructions>')
        if item.cut:  # after the element, which stays well formed
            parts.append(
                f"(cut: only its first {len(item.text.encode()):,} of {item.size:,} bytes of"
                f" {item.path} are given above)"
            )
    return "\n".join(parts) + "\n"
