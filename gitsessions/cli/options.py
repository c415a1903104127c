"""Options shared by the commands that talk to a model, and how they become settings."""

from pathlib import Path
from typing import Annotated, Any, NamedTuple

import typer

from gitsessions.cli.state import State
from gitsessions.services.settings.config import (
    ModelSettings,
    ShellSettings,
    SnapshotSettings,
    resolve_model_settings,
    resolve_shell_settings,
    resolve_snapshot_settings,
)
from gitsessions.services.settings.config_file import config_path
from gitsessions.values.errors import InvalidInput

AUTO_APPROVE_BANNER = "auto-approve is on: write_file, edit_file and run_shell run without asking"

Model = Annotated[
    str | None, typer.Option("--model", help="Model name [env GITSESSIONS_MODEL; default gemma4].")
]
BaseUrl = Annotated[
    str | None,
    typer.Option(
        "--base-url",
        help="OpenAI-compatible endpoint "
        "[env GITSESSIONS_BASE_URL, OPENAI_BASE_URL; "
        "default Ollama at http://localhost:11434/v1].",
    ),
]
SummaryModel = Annotated[
    str | None,
    typer.Option(
        "--summary-model", help="Model that writes compaction summaries [default: --model]."
    ),
]
MaxContext = Annotated[
    int | None,
    typer.Option(
        "--max-context-tokens",
        min=512,
        help="Context budget; compaction starts at 80% of it [default 24000].",
    ),
]
Workspace = Annotated[
    Path | None,
    typer.Option("--workspace", help="Project directory [default: the current directory]."),
]
Resume = Annotated[
    str | None,
    typer.Option(
        "--resume",
        metavar="ID",
        help="Resume this session (`chat --resume` without an id picks one of this "
        "workspace's recent sessions).",
    ),
]
Continue = Annotated[
    bool,
    typer.Option("--continue", help="Resume the newest non-archived session of this workspace."),
]
AutoApprove = Annotated[
    bool,
    typer.Option("--auto-approve", help="Run write_file, edit_file and run_shell without asking."),
]

AllSessions = Annotated[
    bool,
    typer.Option(
        "--all-sessions",
        help="Let read_session and search_sessions reach every session, not only those "
        "of this workspace and their forks.",
    ),
]
Sandbox = Annotated[
    str | None,
    typer.Option(
        "--sandbox",
        metavar="MODE",
        help="run_shell sandbox: none, or workspace-write (Linux Landlock: writes only in "
        "the workspace and the temp dir, the project's .git read-only, no network) "
        "[config [shell] sandbox; default none].",
    ),
]
SandboxNetwork = Annotated[
    bool | None,
    typer.Option(
        "--sandbox-network/--no-sandbox-network",
        help="Let a workspace-write sandboxed shell use the network "
        "[config [shell] sandbox_network; default no].",
    ),
]
SandboxAllowGit = Annotated[
    bool | None,
    typer.Option(
        "--sandbox-allow-git/--no-sandbox-allow-git",
        help="Let a workspace-write sandboxed shell write the project's .git (commit, "
        "branch, config, hooks); without it .git is read-only (and, on a kernel without "
        "user namespaces, the workspace's top level takes no new entries from the shell) "
        "[config [shell] sandbox_allow_git; default no].",
    ),
]

NoSnapshots = Annotated[
    bool,
    typer.Option(
        "--no-snapshots",
        help="Take no code snapshots of the workspace at each turn [config [snapshots] "
        "enabled; default: on in a git repository].",
    ),
]


def model_settings(state: State, **flags: Any) -> ModelSettings:
    """Settings from flags > environment > config.toml > defaults."""
    path = config_path(state.home)
    return resolve_model_settings(flags, state.env, state.config(), config_source=str(path))


def shell_settings(state: State, **flags: Any) -> ShellSettings:
    """run_shell settings from flags > config.toml [shell] > defaults."""
    path = config_path(state.home)
    return resolve_shell_settings(flags, state.config(), config_source=str(path))


def snapshot_settings(state: State, no_snapshots: bool) -> SnapshotSettings:
    """Code snapshot settings from --no-snapshots > config.toml [snapshots] > defaults."""
    path = config_path(state.home)
    return resolve_snapshot_settings(no_snapshots, state.config(), config_source=str(path))


class AgentSettings(NamedTuple):
    model: ModelSettings
    shell: ShellSettings
    snapshots: SnapshotSettings


def agent_settings(
    state: State,
    *,
    model: str | None,
    base_url: str | None,
    summary_model: str | None,
    max_context_tokens: int | None,
    sandbox: str | None,
    sandbox_network: bool | None,
    sandbox_allow_git: bool | None,
    no_snapshots: bool,
) -> AgentSettings:
    """What `chat`, `exec` and `acp` run an agent with: the model, run_shell and code
    snapshot settings, each from its flags > config.toml > defaults."""
    return AgentSettings(
        model_settings(
            state,
            model=model,
            base_url=base_url,
            summary_model=summary_model,
            max_context_tokens=max_context_tokens,
        ),
        shell_settings(
            state,
            sandbox=sandbox,
            sandbox_network=sandbox_network,
            sandbox_allow_git=sandbox_allow_git,
        ),
        snapshot_settings(state, no_snapshots),
    )


def workspace_dir(flag: Path | None) -> Path:
    """The project directory: `--workspace`, else the current one."""
    path = (flag or Path.cwd()).expanduser().absolute()
    if not path.is_dir():
        raise InvalidInput(f"workspace {path} is not a directory")
    return path
