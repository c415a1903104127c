"""The file tools: read_file, write_file and edit_file, confined to the workspace.

Every path goes through `Workspace.resolve` (or `resolve_for_write`) first and only the
resolved real path is opened; writes open it with O_NOFOLLOW, so a symlink swapped in
after the check is refused rather than followed; reads open without blocking and read
only a regular file (a FIFO, device or socket is one error, never waited on: `open_file`,
the tree tools' too). Text is UTF-8: reading replaces
undecodable bytes, editing refuses them (it would corrupt the file), and a file with a
NUL byte in its first 8 KiB is binary and refused. `edit_file` changes a file only when
`old` occurs exactly once.
"""

import io
import os
from typing import BinaryIO

from gitsessions.services.tools.errors import ToolError
from gitsessions.services.tools.result import ToolResult
from gitsessions.services.tools.schemas import DEFAULT_READ_LINES
from gitsessions.services.tools.workspace import Workspace
from gitsessions.store.regular import NotRegularFile, open_regular
from gitsessions.values.plural import plural

MAX_LINE_CHARS = 2000
SNIFF_BYTES = 8192


class NotText(ToolError):
    """A file is binary (or not UTF-8 where exact text is required)."""


class EditFailed(ToolError):
    """`edit_file` could not apply the edit; the file is unchanged."""


def open_file(real_path: str) -> BinaryIO:
    """The regular file at `real_path`, opened for reading without waiting on it: a FIFO,
    device or socket (one swapped in since a check, too) is a `ToolError`."""
    try:
        return open_regular(real_path)
    except NotRegularFile:
        raise ToolError(f"{real_path!r} is not a regular file (a device, socket or pipe)") from None


def is_binary(real_path: str) -> bool:
    """Whether the file has a NUL byte in its first 8 KiB."""
    with open_file(real_path) as handle:
        return b"\0" in handle.read(SNIFF_BYTES)


def _require_file(workspace: Workspace, path: str, real: str, *, for_edit: bool = False) -> None:
    shown = workspace.display(real)
    if os.path.isdir(real):
        raise ToolError(f"{shown!r} is a directory; use list_files to see what it contains")
    if not os.path.exists(real):
        hint = "use write_file to create it" if for_edit else "use list_files to find the path"
        raise ToolError(f"{path!r} does not exist; {hint}")
    if not os.path.isfile(real):
        raise ToolError(f"{shown!r} is not a regular file (a device, socket or pipe)")
    if is_binary(real):
        size = os.path.getsize(real)
        raise NotText(f"{shown!r} is a binary file ({size:,} bytes); only text files are supported")


def _numbered(number: int, line: str) -> str:
    line = line.rstrip("\r\n")
    if len(line) > MAX_LINE_CHARS:
        extra = len(line) - MAX_LINE_CHARS
        line = f"{line[:MAX_LINE_CHARS]}... [line truncated, {extra:,} more characters]"
    return f"{number:>6}\t{line}\n"


def read_file(
    workspace: Workspace,
    path: str,
    offset: int | None = None,
    limit: int | None = None,
    *,
    max_chars: int,
) -> ToolResult:
    """Lines `offset`.. (1-based) of a text file, numbered, at most `limit` lines.

    The output also stays under `max_chars`: it stops early and says where to continue,
    so a long file is read page by page instead of being cut in the middle.
    """
    real = workspace.resolve(path)
    _require_file(workspace, path, real)
    first = 1 if offset is None else offset
    count = DEFAULT_READ_LINES if limit is None else limit
    if first < 1:
        raise ToolError(f"offset must be 1 or more (the first line is 1), got {first}")
    if count < 1:
        raise ToolError(f"limit must be 1 or more, got {count}")
    budget = max_chars - 200
    shown: list[str] = []
    size = 0
    last = first - 1
    total = 0
    full = False
    with io.TextIOWrapper(open_file(real), encoding="utf-8", errors="replace",
                          newline="") as handle:  # fmt: skip
        for total, line in enumerate(handle, start=1):
            if total < first or full:
                continue
            text = _numbered(total, line)
            if len(shown) >= count or (shown and size + len(text) > budget):
                full = True
                continue
            shown.append(text)
            size += len(text)
            last = total
    name = workspace.display(real)
    if total == 0:
        return ToolResult(f"({name} is empty)")
    if first > total:
        raise ToolError(f"offset {first} is past the end of {name!r} ({total:,} lines)")
    body = "".join(shown)
    if last < total:
        body += (
            f"[showing lines {first:,}-{last:,} of {total:,}; "
            f"call read_file with offset={last + 1} to continue]\n"
        )
    return ToolResult(body)


def write_file(workspace: Workspace, path: str, content: str) -> ToolResult:
    """Create or overwrite a file with `content` (UTF-8), creating parent directories."""
    real = workspace.resolve_for_write(path)
    if os.path.isdir(real):
        raise ToolError(f"{workspace.display(real)!r} is a directory; give a file path")
    existed = os.path.exists(real)
    if existed and not os.path.isfile(real):
        raise ToolError(f"{workspace.display(real)!r} is not a regular file; refusing to write")
    os.makedirs(os.path.dirname(real), exist_ok=True)
    _write(real, content.encode("utf-8"))
    name = workspace.display(real)
    lines = content.count("\n") + (0 if content.endswith("\n") or not content else 1)
    verb = "overwrote" if existed else "created"
    return ToolResult(
        f"{verb} {name} ({_count(len(content.encode('utf-8')), 'byte')}, {_count(lines, 'line')})"
    )


def _write(real: str, data: bytes) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    descriptor = os.open(real, flags, 0o666)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(data)


def _count(number: int, noun: str) -> str:
    return f"{number:,} {noun}" if number == 1 else f"{number:,} {noun}s"


def _positions(text: str, needle: str) -> list[int]:
    """Every start index of `needle` in `text`, overlapping matches included."""
    found: list[int] = []
    start = text.find(needle)
    while start != -1:
        found.append(start)
        start = text.find(needle, start + 1)
    return found


def locate_edit(text: str, old: str, new: str, name: str) -> tuple[int, str, str]:
    """Where `old` occurs once in `text` (the file `name`), and `old` and `new` as they
    apply there (with CRLF line ends when the file has them and `old` matches only so);
    EditFailed when it occurs never or more than once."""
    positions = _positions(text, old)
    if not positions and "\r\n" in text and "\n" in old and "\r\n" not in old:
        old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
        positions = _positions(text, old)
    if not positions:
        hint = "read_file it and copy the text exactly, indentation and whitespace included"
        if old.strip() and old.strip() in text:
            hint = "it occurs with different leading/trailing whitespace; copy it exactly"
        raise EditFailed(f"old text not found in {name!r}; {hint}")
    if len(positions) > 1:
        lines = ", ".join(str(text.count("\n", 0, at) + 1) for at in positions[:10])
        raise EditFailed(
            f"old text found {plural(len(positions), 'time')} in {name!r} (lines {lines}); "
            "include more surrounding lines to make it unique"
        )
    return positions[0], old, new


def edit_file(workspace: Workspace, path: str, old: str, new: str) -> ToolResult:
    """Replace the one occurrence of `old` with `new`; refuse when it is absent or repeated."""
    real = workspace.resolve_for_write(path)
    _require_file(workspace, path, real, for_edit=True)
    name = workspace.display(real)
    if old == "":
        raise EditFailed(
            "old is empty; give the exact text to replace (use write_file for new files)"
        )
    if old == new:
        raise EditFailed("old and new are identical; there is nothing to change")
    with open_file(real) as handle:
        raw = handle.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise NotText(
            f"{name!r} is not valid UTF-8 (byte {error.start}); edit_file would corrupt it, "
            "use run_shell instead"
        ) from None
    at, old, new = locate_edit(text, old, new, name)
    _write(real, (text[:at] + new + text[at + len(old) :]).encode("utf-8"))
    line = text.count("\n", 0, at) + 1
    removed, added = old.count("\n") + 1, new.count("\n") + 1
    return ToolResult(
        f"edited {name}: replaced {_count(removed, 'line')} at line {line} "
        f"with {_count(added, 'line')}"
    )
