"""The tools of the agents sessions are imported from, and this agent's tool for the
same job: what a refusal of a source's tool suggests instead (nothing is ever run
under another tool's name: arguments differ). And a source's tool name as a name the
API accepts (`api_name`): the same name when it is one, else a valid name derived from
it, the same each time, distinct for distinct names."""

import hashlib
import re

VALID = re.compile(r"[a-zA-Z0-9_-]{1,64}")  # what the chat API accepts as a function name

EQUIVALENTS: dict[str, dict[str, str]] = {
    "claude-code": {
        "Bash": "run_shell",
        "Read": "read_file",
        "Write": "write_file",
        "Edit": "edit_file",
        "MultiEdit": "edit_file",
        "NotebookEdit": "edit_file",
        "Glob": "list_files",
        "LS": "list_files",
        "Grep": "search_files",
        "TodoWrite": "update_plan",
    },
    "codex": {
        "shell": "run_shell",
        "local_shell": "run_shell",
        "exec_command": "run_shell",
        "apply_patch": "edit_file",
    },
}


def equivalent(source: str, tool: str, ours: tuple[str, ...]) -> str | None:
    """This agent's tool for what `source`'s `tool` did, when it has one."""
    name = EQUIVALENTS.get(source, {}).get(tool)
    return name if name in ours else None


def api_name(name: str) -> str:
    """`name` when the API accepts it (`VALID`, the whole name), else its valid letters
    (others replaced by `_`, at most 55) and 8 hex digits of its SHA-256."""
    if VALID.fullmatch(name):
        return name
    base = re.sub(r"[^a-zA-Z0-9_-]+", "_", name).strip("_")[:55] or "tool"
    return f"{base}_{hashlib.sha256(name.encode('utf-8', 'replace')).hexdigest()[:8]}"
