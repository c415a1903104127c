"""An agent assembled from settings, as chat, exec and the ACP adapter run it: the
project's prompt and instructions, the budget check, the sandbox, the session (a draft
until its first checkpoint, or the one resumed, re-read under its lease), code
snapshots, the tools (built-in, session, MCP servers'), the model client, the `Agent`.

Its notes (the sandbox, instruction files, snapshots, MCP servers) are handed to `notes`
as (text, style) (the CLI prints them: `chat` later, once its prompt shows); which
session and folder, and the cost function, the CLI resolves before (cli/agent_setup.py).
"""

import json
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple, Protocol

from gitsessions.agent.loop import Agent
from gitsessions.agent.prompts import system_prompt
from gitsessions.agent.scope import Scope
from gitsessions.agent.server_budget import least_budget, use_server_context
from gitsessions.agent.session import AgentSession
from gitsessions.agent.session_tools import register_session_tools
from gitsessions.agent.turns import AgentConfig, Events
from gitsessions.services.code import instructions
from gitsessions.services.code.workspace import (
    NO_REPOSITORY_NOTE,
    describe,
    head_of,
    no_repository,
    repo_root,
)
from gitsessions.services.compaction.compaction_policy import Policy
from gitsessions.services.hooks.hooks import Hooks
from gitsessions.services.imports.tool_names import equivalent
from gitsessions.services.model import context_window
from gitsessions.services.model.context_window import ServerContext
from gitsessions.services.model.model import ModelClient
from gitsessions.services.settings.config import (
    ModelSettings,
    ShellSettings,
    SnapshotSettings,
    session_settings,
)
from gitsessions.services.settings.config_file import config_path
from gitsessions.services.tools import (
    BUILTIN_TOOLS,
    SESSION_TOOLS,
    Approver,
    ToolRegistry,
    create_registry,
)
from gitsessions.services.tools.mcp_hub import McpHub, definition
from gitsessions.services.tools.mcp_settings import resolve_mcp_servers
from gitsessions.services.tools.sandbox import Sandbox, workspace_write
from gitsessions.services.tools.shell_env import shell_environment
from gitsessions.store import here
from gitsessions.store.lease import Lease
from gitsessions.store.sessions import Head, SessionStore
from gitsessions.values.errors import BadUsage
from gitsessions.values.tokens import default_counter

RETRIES = 3  # a 429 or 5xx is sent again up to 3 times (Retry-After honoured)
# a note for the user: (text, style); the CLI prints it
Say = Callable[[str, str], None]


class Home(Protocol):
    """What the assembly reads of a gitsessions home (cli/state.py's State is one)."""

    home: Path
    env: Mapping[str, str]

    @property
    def store(self) -> SessionStore: ...

    @property
    def hooks(self) -> "Hooks": ...

    def config(self) -> dict[str, Any]: ...


class Built(NamedTuple):
    agent: Agent
    settings: ModelSettings
    workspace: Path
    resumed: bool


def shell_sandbox(shell: ShellSettings, workspace: Path, notes: Say) -> Sandbox | None:
    """The sandbox run_shell runs in, None for `--sandbox none`; says so in `notes`.
    Raises SandboxUnavailable (exit 2) when the kernel cannot enforce it."""
    if shell.sandbox != "workspace-write":
        return None
    sandbox = workspace_write(
        workspace, network=shell.sandbox_network, allow_git=shell.sandbox_allow_git
    )
    network = "allowed" if sandbox.network else "blocked"
    git = f"; {sandbox.read_only[0]} read-only" if sandbox.read_only else ""
    notes(
        f"sandbox: run_shell writes only in {', '.join(sandbox.writable[:2])}{git}; "
        f"network {network}",
        "dim",
    )
    return sandbox


@contextmanager
def assemble(
    state: Home,
    settings: ModelSettings,
    shell: ShellSettings,
    *,
    picked: Head | None,
    workspace: Path,
    lease: Lease | None,
    approve: Approver,
    events: Events,
    cost: Callable[[str, int, int], float],
    notes: Say,
    stderr: Say,
    max_steps: int = 50,
    stream: bool = True,
    all_sessions: bool = False,
    snapshots: SnapshotSettings | None = None,
    summary: str = "background",
    ask_server: bool = True,
) -> Iterator[Built]:
    """The agent for `picked` (None: a new session, a draft until its first
    checkpoint) working in `workspace`, its session leased (`lease`: one taken before,
    for `picked`). Its first notes go to `notes`, those of later turns (snapshots) to
    `stderr`. The lease is released here, however the build ends. `ask_server`: the
    server's context, asked at once through the agent's model client (then made here,
    first), bounds the budget from the first request (agent/server_budget.py)."""
    early = ModelClient(settings, retries=RETRIES, wait=events.retrying) if ask_server else None
    asked = asking(settings, early) if early is not None else lambda: None
    store = state.store
    env = dict(state.env)
    prompt, in_force = project_prompt(
        workspace, state.home, env, notes, settings.max_context_tokens
    )
    check_budget(settings.max_context_tokens, prompt)
    sandbox = shell_sandbox(shell, workspace, notes)  # before anything is created
    session: AgentSession | None = None
    hub: McpHub | None = None
    try:
        if picked is not None and lease is None:
            lease = Lease(store.home, picked.id)
        session = open_session(store, picked, settings, prompt, workspace, env, notes)
        if picked is None:
            lease = Lease(store.home, session.id)
        if picked is None or picked.header.get("instructions") != in_force:
            session.note_header(instructions=in_force)
        snapshot = code_snapshots(
            snapshots or SnapshotSettings(), workspace, env, session.id, notes, stderr
        )
        registry = create_registry(
            workspace,
            shell_environment(env, shell.env_keep, session=session.id),
            approve=approve,
            sandbox=sandbox,
            output_limit=max(1000, min(16_000, settings.max_context_tokens)),
        )
        register_session_tools(registry, session, Scope(None if all_sessions else workspace, env))
        if picked is not None:
            refuse_imported_tools(registry, session.head.header.get("imported"), notes)
        hub = mcp_tools(state, env, registry, notes, settings.max_context_tokens, prompt)
        if hub is not None:
            check_budget(settings.max_context_tokens, prompt, registry.definitions())
        config = agent_config(settings, max_steps=max_steps, stream=stream, summary=summary)
        with early or ModelClient(settings, retries=RETRIES, wait=events.retrying) as client:
            agent = Agent(
                session, client, registry, default_counter(), config, cost, events,
                workspace_head=lambda: head_of(workspace, env), code_snapshot=snapshot,
                hooks=state.hooks, mcp=hub,
            )  # fmt: skip
            if ask_server:  # waited for at the first request, which needs httpx as well
                agent.budget.first = lambda: use_server_context(agent, settings, asked())
            yield Built(agent, settings, workspace, picked is not None)
    finally:
        if early is not None:
            early.close()  # when the build failed before using it (closing twice is harmless)
        if hub is not None:
            hub.close()
        if lease is not None and session is not None and session.is_draft:
            lease.discard()  # never stored: leave no lease file behind
        elif lease is not None:
            lease.release()


def asking(settings: ModelSettings, client: ModelClient) -> Callable[[], ServerContext | None]:
    """What the server says its context holds, asked through `client` (the agent's) in a
    thread from now on; the function returned waits for it (at most
    `context_window.ASK_SECONDS` once the client is made)."""
    said: list[ServerContext | None] = [None]
    thread = threading.Thread(
        target=lambda: said.__setitem__(0, context_window.ask(settings, client)),
        daemon=True,
        name="ask-context",
    )
    thread.start()

    def wait() -> ServerContext | None:
        thread.join(context_window.ASK_SECONDS + 1)
        return said[0]

    return wait


def agent_config(
    settings: ModelSettings, *, max_steps: int, stream: bool, summary: str
) -> AgentConfig:
    """What the loop runs with, from the model settings and the command's choices."""
    policy = Policy(
        max_context_tokens=settings.max_context_tokens,
        ledger_share=settings.ledger_share,
        user_words_share=settings.user_words_share,
        target=settings.compact_target,
    )
    return AgentConfig(
        model=settings.model,
        summary_model=settings.summary_model,
        policy=policy,
        max_steps=max_steps,
        stream=stream,
        summary=summary,
    )


def open_session(
    store: SessionStore,
    picked: Head | None,
    settings: ModelSettings,
    prompt: str,
    workspace: Path,
    env: Mapping[str, str],
    notes: Say,
) -> AgentSession:
    """A draft for a new session (stored with its first prompt, so a chat opened and
    left makes none), else `picked` re-read (under its lease): the settings it now runs
    with and this workspace's system prompt ride with its next commit. The endpoint it
    runs with is one this home chose (store/here.py): a resumed session's own only when
    this home ran with it before."""
    here.remember_endpoint(store.home, settings.base_url)
    if picked is None:
        return AgentSession.draft(
            store, prompt, describe(workspace, env), settings.model, session_settings(settings)
        )
    session = AgentSession(store, store.head(picked.id))
    if session.head.header.get("settings") != session_settings(settings):
        session.note_header(settings=session_settings(settings))
    if session.use_system_prompt(prompt):
        notes(
            "note: the system prompt stored with this session is not sent; "
            "gitsessions' own prompt for this workspace replaces it",
            "yellow",
        )
    return session


def refuse_imported_tools(registry: ToolRegistry, imported: Any, notes: Say) -> None:
    """An imported session's calls to the other agent's tools are refused, naming this
    agent's tool that does the job where there is one (said once in `notes`)."""
    if not isinstance(imported, dict) or not imported.get("tools"):
        return
    source = str(imported.get("from"))
    lacking = [t for t in imported["tools"] if t not in registry.names]
    instead = {t: e for t in lacking if (e := equivalent(source, t, registry.names))}
    registry.refuse_foreign(lacking, source, instead)
    if lacking:
        notes(
            f"note: imported from {source}: its tools {', '.join(lacking)} are"
            " not this agent's; a call to them is refused (this agent's own"
            " tools do those jobs)",
            "yellow",
        )


def code_snapshots(
    settings: SnapshotSettings,
    workspace: Path,
    env: Mapping[str, str],
    session_id: str,
    notes: Say,
    stderr: Say,
) -> Callable[[str], str | None] | None:
    """The snapshot taker for the agent (None when snapshots are off); its notes (no
    repository, files left out for size, a git failure) go to `stderr`, each once (the
    first ones, made here, to `notes`)."""
    if not settings.enabled:
        return None
    if no_repository(workspace, env):  # said without loading the snapshot machinery
        notes(NO_REPOSITORY_NOTE, "yellow")  # before the prompt: with the other notes
        return None
    from gitsessions.services.code.snapshotter import Snapshotter  # 6 ms, only with git

    snapshotter = Snapshotter(
        workspace, env, session_id, settings.max_file_bytes, settings.budget_bytes
    )

    def flush(to: Say = stderr) -> None:
        for note in snapshotter.notes:
            to(note, "yellow")
        snapshotter.notes.clear()

    if snapshotter.project() is None:
        flush(notes)
        return None

    def take(message: str) -> str | None:
        commit = snapshotter(message)
        flush()
        return commit

    return take


def project_prompt(
    workspace: Path, home: Path, env: Mapping[str, str], notes: Say, budget: int
) -> tuple[str, list[dict[str, Any]]]:
    """The system prompt for `workspace` with its project instructions (AGENTS.md, read
    again at every start and resume), and the record of which files are in force; one
    warning when they take more than a quarter of the context `budget` (in tokens)."""
    found, skipped = instructions.find(workspace, repo_root(workspace, env), home)
    for line in skipped:
        notes(line, "yellow")
    for item in found:
        if item.cut:
            notes(
                f"note: {item.path} is {item.size:,} bytes; the model gets its first "
                f"{len(item.text.encode()):,}",
                "yellow",
            )
    records = [item.as_record() for item in found]
    tokens = sum(record["tokens"] for record in records)
    if tokens * 4 > budget:
        notes(
            f"warning: the instruction files take about {tokens:,} tokens, "
            f"{tokens * 100 // budget}% of the {budget:,}-token context budget "
            "(see `info` for each file's share)",
            "yellow",
        )
    section = instructions.prompt_section(found)
    return system_prompt(str(workspace), section), records


def mcp_tools(
    state: Home,
    env: Mapping[str, str],
    registry: Any,
    notes: Say,
    budget: int,
    prompt: str,
) -> "McpHub | None":
    """The `[mcp_servers]` of config.toml started, and their tools registered (each
    needing approval, its arguments checked by its server); None without any. A server
    whose tools do not fit what the context `budget` leaves them (half of it at most,
    and never so much that the system prompt, the tools and a turn no longer fit) is
    left out, in one line naming it and the tokens it needs; the agent starts anyway."""
    servers = resolve_mcp_servers(state.config(), config_source=str(config_path(state.home)))
    if not servers:
        return None

    def say(line: str) -> None:
        notes(line, "yellow")

    hub = McpHub(servers, env, state.home / "mcp")
    hub.start(say)
    by_server: dict[str, list[dict[str, Any]]] = {}
    for offered, (server, tool) in hub.tools.items():
        by_server.setdefault(server, []).append(definition(offered, tool))
    # What the MCP tools may take: half the budget, and what the prompt, the other tools
    # and a turn leave. Bytes bound tokens from above (a token is at least one byte), so
    # the tokenizer is loaded only when bytes do not settle it.
    system = [{"role": "system", "content": prompt}]
    fixed = len(prompt.encode()) + len(json.dumps(registry.definitions()).encode()) + 200
    room = min(budget // 2, budget - least_budget(fixed))
    counted = False
    used = 0
    for server, definitions in by_server.items():
        need = len(json.dumps(definitions).encode())
        if used + need > room and not counted:
            fixed = default_counter().estimate(system, registry.definitions())
            room, counted = min(budget // 2, budget - least_budget(fixed)), True
        if used + need > room:
            need = default_counter().estimate([], definitions)
        if used + need > room:
            hub.leave_out(server, f"its tools need about {need:,} tokens of the context budget")
            say(
                f"mcp: server {server}'s tools need about {need:,} tokens, more than the "
                f"context budget leaves them ({max(room - used, 0):,} of --max-context-tokens "
                f"{budget:,}); they are not offered"
            )
            continue
        used += need
    for offered, (_server, tool) in hub.tools.items():
        registry.register(
            offered,
            definition(offered, tool),
            lambda arguments, offered=offered: hub.call(offered, arguments),
            needs_approval=True,
            checks=False,
        )
    return hub


def check_budget(
    max_context_tokens: int, prompt: str, tools: list[dict[str, Any]] | None = None
) -> None:
    """Refuse a budget the agent can never work in, before a session is created: the
    system prompt and tool schemas (with `tools`: these, MCP servers' included), a
    continuation note and one turn must fit."""
    tools = tools if tools is not None else [*BUILTIN_TOOLS, *SESSION_TOOLS.values()]
    least = least_budget

    # A token is at least one byte: a budget over this bound fits without loading the
    # tokenizer (a few hundred milliseconds `chat` spends while the user types instead).
    upper = len(prompt.encode()) + len(json.dumps(tools).encode()) + 200
    if max_context_tokens >= least(upper):
        return
    fixed = default_counter().estimate([{"role": "system", "content": prompt}], tools)
    minimum = least(fixed)
    if max_context_tokens < minimum:
        raise BadUsage(
            f"--max-context-tokens {max_context_tokens} is too small: the system prompt and "
            f"tool definitions alone take {fixed} tokens; use at least {minimum}"
        )
