"""What a write_file or edit_file call would do to its file, read before it is approved.

`file_change` reads the file the call names (through the workspace's confinement, as the
tool will) and gives its text now and its text after the call, so an approval can say
"creates" or "replaces" and show a diff with the file's own line numbers. It reads only,
never writes; a path the tool would refuse, a directory, a binary or very large file
give what is known (`exists`, `note`) without the text. The file may still change
between the approval and the run: this is what the user is shown, not a lock.
"""

import os
from collections.abc import Mapping
from typing import Any, NamedTuple

from gitsessions.services.tools.errors import ToolError
from gitsessions.services.tools.workspace import Workspace
from gitsessions.store.regular import NotRegularFile, open_regular

MAX_PREVIEW_BYTES = 1024 * 1024  # a file larger is not read to be compared
SNIFF_BYTES = 8192


class FileChange(NamedTuple):
    """A file before and after a call. `before` is None when the file is not read
    (`exists` False: there is none; else `note` says why); `after` is None when the
    call would fail (an edit whose `old` is not in the file exactly once)."""

    path: str
    exists: bool
    before: str | None
    after: str | None
    size: int = 0  # of the file now, in bytes
    note: str = ""


def file_change(workspace: Workspace, name: str, arguments: Mapping[str, Any]) -> FileChange | None:
    """The change a write_file or edit_file call would make; None for any other call, a
    path the tool would refuse or one that is no regular file (the tool then fails with
    its own error). An edit that would fail has `after` None and says why in `note`."""
    path = arguments.get("path")
    if name not in ("write_file", "edit_file") or not isinstance(path, str):
        return None
    try:
        real = workspace.resolve_for_write(path)
    except ToolError:
        return None
    shown = workspace.display(real)
    if not os.path.lexists(real):
        content = arguments.get("content")
        after = content if name == "write_file" and isinstance(content, str) else None
        return FileChange(shown, False, None, after)
    if not os.path.isfile(real):
        return None
    try:
        size = os.path.getsize(real)
        if size > MAX_PREVIEW_BYTES:
            return FileChange(shown, True, None, None, size, "too large to compare")
        with open_regular(real) as handle:  # never waited on: a FIFO swapped in is refused
            data = handle.read(MAX_PREVIEW_BYTES + 1)
    except OSError as error:
        return FileChange(shown, True, None, None, 0, error.strerror or "unreadable")
    except NotRegularFile:
        return None
    if b"\0" in data[:SNIFF_BYTES]:
        return FileChange(shown, True, None, None, len(data), "a binary file")
    before = data.decode("utf-8", errors="replace")
    if name == "write_file":
        content = arguments.get("content")
        after = content if isinstance(content, str) else None
        return FileChange(shown, True, before, after, len(data))
    # the file tools: 2.5 ms, only to preview an edit
    from gitsessions.services.tools.files import EditFailed, locate_edit

    old, new = arguments.get("old"), arguments.get("new")
    if not isinstance(old, str) or not isinstance(new, str) or not old or old == new:
        return FileChange(shown, True, before, None, len(data), "the edit would fail")
    try:
        at, old, new = locate_edit(before, old, new, shown)
    except EditFailed as error:
        return FileChange(shown, True, before, None, len(data), f"the edit would fail: {error}")
    return FileChange(shown, True, before, before[:at] + new + before[at + len(old) :], len(data))
