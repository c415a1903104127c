"""The tree tools: list_files and search_files, confined to the workspace.

The walk never follows a symlink (a symlinked file or directory is listed, never read
or entered), so it cannot leave the workspace; it skips version-control and cache
directories (named in the listing, not entered) and is capped, saying so when a cap
is hit. Paths in the output are relative to the workspace root, so they can be passed
straight back to the other tools.
"""

import io
import os
import re
from collections.abc import Iterator

from gitsessions.services.tools.errors import ToolError
from gitsessions.services.tools.files import SNIFF_BYTES, open_file
from gitsessions.services.tools.result import ToolResult
from gitsessions.services.tools.workspace import Workspace

SKIPPED_DIRS = frozenset(
    {
        ".git", ".hg", ".svn", "node_modules", ".venv", "venv", "__pycache__",
        ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox", ".nox", ".eggs",
    }
)  # fmt: skip
MAX_LIST_ENTRIES = 1000
MAX_MATCHES = 200
MAX_MATCH_CHARS = 300
MAX_SEARCH_FILE_BYTES = 5 * 1024 * 1024


class InvalidPattern(ToolError):
    """A search pattern is not a valid Python regular expression."""


def _walk(start: str) -> Iterator[tuple[os.DirEntry[str], bool]]:
    """Entries below `start` in sorted pre-order, with whether each is a skipped directory."""
    stack: list[str] = [start]
    while stack:
        directory = stack.pop()
        try:
            with os.scandir(directory) as scan:
                entries = sorted(scan, key=lambda entry: entry.name)
        except OSError:
            continue
        below: list[str] = []
        for entry in entries:
            is_dir = entry.is_dir(follow_symlinks=False)
            skipped = is_dir and entry.name in SKIPPED_DIRS
            yield entry, skipped
            if is_dir and not skipped:
                below.append(entry.path)
        # Depth-first: the next directory popped is the first subdirectory of this one.
        stack.extend(reversed(below))


def _describe(workspace: Workspace, entry: os.DirEntry[str], skipped: bool) -> str:
    name = workspace.display(entry.path)
    if entry.is_symlink():
        try:
            target = os.readlink(entry.path)
        except OSError:
            target = "?"
        return f"{name}@ -> {target}"
    if entry.is_dir(follow_symlinks=False):
        return f"{name}/ (skipped)" if skipped else f"{name}/"
    return name


def list_files(workspace: Workspace, path: str | None = None) -> ToolResult:
    """Every file and directory below `path` (default: the root); directories end in '/'."""
    real = workspace.resolve(path or ".")
    name = workspace.display(real)
    if not os.path.exists(real):
        raise ToolError(f"{path!r} does not exist")
    if not os.path.isdir(real):
        return ToolResult(f"{name}\n")
    lines: list[str] = []
    for entry, skipped in _walk(real):
        if len(lines) >= MAX_LIST_ENTRIES:
            lines.append(
                f"[listing stopped at {MAX_LIST_ENTRIES:,} entries; "
                "list a subdirectory to see more]"
            )
            break
        lines.append(_describe(workspace, entry, skipped))
    if not lines:
        return ToolResult(f"({name} is an empty directory)\n")
    return ToolResult("\n".join(lines) + "\n")


def _matches(real: str, regex: re.Pattern[str]) -> Iterator[tuple[int, str]]:
    with io.TextIOWrapper(open_file(real), encoding="utf-8", errors="replace",
                          newline="") as handle:  # fmt: skip
        for number, line in enumerate(handle, start=1):
            if regex.search(line.rstrip("\r\n")):
                yield number, line.rstrip("\r\n")


def _searchable(real: str) -> bool:
    with open_file(real) as handle:  # a FIFO, device or socket: ToolError, never waited on
        if os.fstat(handle.fileno()).st_size > MAX_SEARCH_FILE_BYTES:
            return False
        return b"\0" not in handle.read(SNIFF_BYTES)


def search_files(workspace: Workspace, pattern: str, path: str | None = None) -> ToolResult:
    """Lines matching the regex `pattern` in text files below `path`, as `path:line: text`."""
    try:
        regex = re.compile(pattern)
    except re.error as error:
        raise InvalidPattern(
            f"invalid regular expression {pattern!r}: {error}; "
            "patterns use Python re syntax (escape literal characters like ( [ . with \\)"
        ) from None
    real = workspace.resolve(path or ".")
    if not os.path.exists(real):
        raise ToolError(f"{path!r} does not exist")
    if os.path.isdir(real):
        files = [entry.path for entry, _ in _walk(real) if entry.is_file(follow_symlinks=False)]
    else:
        files = [real]
    found: list[str] = []
    skipped = 0
    full = False
    for file in files:
        try:
            if not _searchable(file):
                skipped += 1
                continue
            for number, line in _matches(file, regex):
                if len(found) >= MAX_MATCHES:
                    full = True
                    break
                if len(line) > MAX_MATCH_CHARS:
                    line = line[:MAX_MATCH_CHARS] + " ..."
                found.append(f"{workspace.display(file)}:{number}: {line}")
        except OSError:
            skipped += 1
        except ToolError:  # not a regular file: named when it is the path asked for
            if file == real:
                shown = workspace.display(real)
                raise ToolError(
                    f"{shown!r} is not a regular file (a device, socket or pipe)"
                ) from None
            skipped += 1
        if full:
            found.append(f"[stopped after {MAX_MATCHES} matches; narrow the pattern or the path]")
            break
    where = workspace.display(real)
    if not found:
        note = f" ({skipped} binary, large or unreadable files skipped)" if skipped else ""
        return ToolResult(f"no matches for {pattern!r} in {where}{note}\n")
    return ToolResult("\n".join(found) + "\n")
