"""The tools of the agents sessions are imported from, and this agent's tool for the
same job: what a refusal of a source's tool suggests instead (nothing is ever run
under another tool's name: arguments differ)."""

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
