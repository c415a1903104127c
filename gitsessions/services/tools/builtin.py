"""The six workspace tools wired into a registry: the agent's default tool set.

`create_registry` binds the file tools to one `Workspace` and `run_shell` to that root
and to the environment the caller passes (nothing here reads the process environment).
write_file, edit_file and run_shell are registered as needing approval; the session tools
(update_plan, read_session, search_sessions) are not registered here: the agent layer
adds them with `registry.register(name, SESSION_TOOLS[name], handler)`. The handlers'
modules (files, listing, shell) are imported at a tool's first call: a turn that calls
no tool never loads them.
"""

import os
from collections.abc import Mapping
from typing import Any

from gitsessions.services.tools.output import DEFAULT_OUTPUT_LIMIT
from gitsessions.services.tools.preview import FileChange, file_change
from gitsessions.services.tools.registry import Approver, Output, ToolRegistry, deny_all
from gitsessions.services.tools.result import ToolResult
from gitsessions.services.tools.sandbox import Sandbox
from gitsessions.services.tools.schemas import (
    DEFAULT_TIMEOUT,
    EDIT_FILE,
    LIST_FILES,
    MUTATING_TOOLS,
    READ_FILE,
    RUN_SHELL,
    SEARCH_FILES,
    WRITE_FILE,
)
from gitsessions.services.tools.workspace import Workspace


def create_registry(
    root: str | os.PathLike[str],
    env: Mapping[str, str],
    *,
    approve: Approver = deny_all,
    output_limit: int = DEFAULT_OUTPUT_LIMIT,
    default_timeout: int = DEFAULT_TIMEOUT,
    sandbox: "Sandbox | None" = None,
) -> ToolRegistry:
    """A registry holding read_file, write_file, edit_file, list_files, search_files and
    run_shell, confined to `root`, with `env` as run_shell's whole environment and
    `sandbox` (when given) confining run_shell's writes and network, and the file
    tools' writes to what it leaves writable in the workspace (not its `read_only`)."""
    workspace = Workspace(root, sandbox.read_only if sandbox is not None else ())
    child_env = dict(env)
    said: set[str] = set()  # run_shell's notes given once per registry (a session)
    registry = ToolRegistry(approve=approve, output_limit=output_limit)

    # Each tool's module is imported when the model first calls it (files, listing and
    # shell: 7-10 ms together, which an exec turn that calls no tool never pays).
    def do_read(a: dict[str, Any]) -> ToolResult:
        from gitsessions.services.tools.files import read_file

        return read_file(workspace, a["path"], a["offset"], a["limit"], max_chars=output_limit)

    def do_write(a: dict[str, Any]) -> ToolResult:
        from gitsessions.services.tools.files import write_file

        return write_file(workspace, a["path"], a["content"])

    def do_edit(a: dict[str, Any]) -> ToolResult:
        from gitsessions.services.tools.files import edit_file

        return edit_file(workspace, a["path"], a["old"], a["new"])

    def do_list(a: dict[str, Any]) -> ToolResult:
        from gitsessions.services.tools.listing import list_files

        return list_files(workspace, a["path"])

    def do_search(a: dict[str, Any]) -> ToolResult:
        from gitsessions.services.tools.listing import search_files

        return search_files(workspace, a["pattern"], a["path"])

    def do_shell(a: dict[str, Any], output: Output) -> ToolResult:
        from gitsessions.services.tools.shell import run_shell

        timeout = default_timeout if a["timeout"] is None else a["timeout"]
        return run_shell(
            a["command"], cwd=workspace.root, env=child_env, timeout=timeout,
            output_limit=output_limit, sandbox=sandbox, said=said, on_output=output,
        )  # fmt: skip

    def preview(name: str, a: Mapping[str, Any]) -> FileChange | None:
        return file_change(workspace, name, a)

    for definition, handler in (
        (READ_FILE, do_read),
        (WRITE_FILE, do_write),
        (EDIT_FILE, do_edit),
        (LIST_FILES, do_list),
        (SEARCH_FILES, do_search),
        (RUN_SHELL, do_shell),
    ):
        name = definition["function"]["name"]
        registry.register(
            name,
            definition,
            handler,
            needs_approval=name in MUTATING_TOOLS,
            preview=preview if name in ("write_file", "edit_file") else None,
            streams=handler is do_shell,
        )
    return registry
