"""Building an agent for `chat` and `exec`: settings, session, lease, tools, client."""

import json
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitsessions.agent.assembly import Built
from gitsessions.agent.loop import Agent, AgentConfig, Events
from gitsessions.agent.prompts import system_prompt
from gitsessions.agent.scope import Scope
from gitsessions.agent.session import AgentSession
from gitsessions.agent.session_tools import register_session_tools
from gitsessions.cli.opening import Printer
from gitsessions.cli.options import workspace_dir
from gitsessions.cli.plain import one_line, vtext
from gitsessions.cli.resuming import Resuming, pick, place
from gitsessions.cli.state import State, err
from gitsessions.services.code.workspace import NO_REPOSITORY_NOTE, describe, head_of, no_repository
from gitsessions.services.compaction.compaction_policy import Policy
from gitsessions.services.model.model import ModelClient, preload
from gitsessions.services.model.pricing import estimate_cost
from gitsessions.services.settings.config import (
    ModelSettings,
    ShellSettings,
    SnapshotSettings,
    session_settings,
    with_session_settings,
)
from gitsessions.services.tools import BUILTIN_TOOLS, SESSION_TOOLS, Approver, create_registry
from gitsessions.services.tools.sandbox import Sandbox, workspace_write
from gitsessions.services.tools.shell_env import shell_environment
from gitsessions.store.lease import Lease
from gitsessions.store.sessions import Head, SessionStore
from gitsessions.values.errors import BadUsage
from gitsessions.values.ids import short
from gitsessions.values.records import USAGE_TOTAL_KEYS
from gitsessions.values.tokens import default_counter

if TYPE_CHECKING:
    from gitsessions.services.tools.mcp_hub import McpHub
    from gitsessions.store.catalog import Catalog

RETRIES = 3  # a 429 or 5xx is sent again up to 3 times (Retry-After honoured)


def warm_up(chat: bool = False, after: threading.Event | None = None) -> None:
    """Import the model client (the openai SDK) in a background thread: `chat` starts
    it when its prompt shows (the user types meanwhile: `after` is set then, and each
    thread waits for it, so none competes with the prompt for the interpreter), `exec`
    first thing, so it overlaps reading the prompt and the store; the first request
    then waits less or not at all. `chat` also loads the
    tokenizer (its status line counts the context) and the markdown renderer; `exec`
    loads the tokenizer only if a context gets near the budget."""
    preload(after)
    if chat:
        default_counter().warm_up(after)  # a thread of its own: the first request counts first
        threading.Thread(
            target=_import_markdown, args=(after,), daemon=True, name="warm-up"
        ).start()


def _import_markdown(after: threading.Event | None) -> None:
    if after is not None:
        after.wait(2.0)
    import rich.markdown  # noqa: F401 - the first reply renders markdown


def pick_session(
    store: SessionStore, resume: str | None, continue_: bool, workspace: Path
) -> Head | None:
    """The session to resume, or None for a new one."""

    def catalog() -> "Catalog":
        from gitsessions.store.catalog import Catalog  # sqlite: only for --continue

        return Catalog(store)

    return pick(store, resume, continue_, workspace, catalog)


def cost_function(
    settings: ModelSettings, home: Path | None = None
) -> Callable[[str, int, int], float]:
    """Costs by the settings' prices; a model without one is said once (per process,
    and with `home` once in that home: cli/once.py)."""
    unknown: set[str] = set()

    def cost(model: str, prompt: int, completion: int) -> float:
        value, known = estimate_cost(model, prompt, completion, settings.prices)
        if not known and model not in unknown:
            unknown.add(model)
            if home is not None:
                from gitsessions.cli.once import first_time

                if not first_time(home, "no price", model):
                    return value
            err.print(
                f"note: no price known for model {one_line(model)}; tokens are recorded, cost "
                'counts as 0 (set [prices."MODEL"] in config.toml)',
                markup=False,
                highlight=False,
                style="dim",
            )
        return value

    return cost


def shell_sandbox(shell: ShellSettings, workspace: Path, notes: Printer = err) -> Sandbox | None:
    """The sandbox run_shell runs in, None for `--sandbox none`; says so in `notes`.
    Raises SandboxUnavailable (exit 2) when the kernel cannot enforce it."""
    if shell.sandbox != "workspace-write":
        return None
    sandbox = workspace_write(
        workspace, network=shell.sandbox_network, allow_git=shell.sandbox_allow_git
    )
    network = "allowed" if sandbox.network else "blocked"
    git = f"; {sandbox.read_only[0]} read-only" if sandbox.read_only else ""
    notes.print(
        vtext(
            f"sandbox: run_shell writes only in {', '.join(sandbox.writable[:2])}{git}; "
            f"network {network}",
            style="dim",
        ),
        highlight=False,
    )
    return sandbox


@contextmanager
def build_agent(
    state: State,
    settings: ModelSettings,
    shell: ShellSettings,
    *,
    resume: str | None,
    continue_: bool,
    workspace_flag: Path | None,
    approve: Approver,
    events: Events,
    max_steps: int = 50,
    stream: bool = True,
    all_sessions: bool = False,
    snapshots: SnapshotSettings | None = None,
    notes: Printer = err,
    resuming: Resuming | None = None,
    title_in_background: bool = False,
) -> Iterator[Built]:
    """The agent, its session leased. Its notes (the workspace, the sandbox, snapshots)
    go to `notes`: `chat` builds it while the user types and prints them later. A
    session `resuming` names was found, said and leased before (cli/resuming.py); the
    lease is released here, however the build ends."""
    store = state.store
    if resuming is not None:  # found and said before the prompt; re-read under its lease
        picked: Head | None = store.head(resuming.session_id)
        settings, workspace = resuming.settings, resuming.workspace
    else:
        workspace = workspace_dir(workspace_flag)
        picked = pick_session(store, resume, continue_, workspace)
    if picked is not None and resuming is None:  # its own model, endpoint and budget
        settings = with_session_settings(settings, picked.header.get("settings"), short(picked.id))
        workspace, said = place(picked, workspace, workspace_flag, state.home, state.env)
        for text, style in said:
            notes.print(vtext(text, style=style), highlight=False)
    env = dict(state.env)
    prompt, in_force = project_prompt(
        workspace, state.home, env, notes, settings.max_context_tokens
    )
    check_budget(settings.max_context_tokens, prompt)
    sandbox = shell_sandbox(shell, workspace, notes)  # before anything is created
    lease = None
    session: AgentSession | None = None
    hub: McpHub | None = None
    try:
        if picked is not None:
            lease = resuming.lease if resuming is not None else Lease(store.home, picked.id)
        if picked is None:
            # a draft: stored with its first prompt, so a chat opened and left makes none
            session = AgentSession.draft(
                store,
                prompt,
                describe(workspace, env),
                settings.model,
                session_settings(settings),
            )
            lease = Lease(store.home, session.id)
        else:
            session = AgentSession(store, store.head(picked.id))  # re-read under the lease
            if session.head.header.get("settings") != session_settings(settings):
                session.note_header(settings=session_settings(settings))
            if session.use_system_prompt(prompt):
                notes.print(
                    vtext(
                        "note: the system prompt stored with this session is not sent; "
                        "gitsessions' own prompt for this workspace replaces it",
                        style="yellow",
                    ),
                    highlight=False,
                )
        if picked is None or picked.header.get("instructions") != in_force:
            session.note_header(instructions=in_force)
        snapshot = code_snapshots(
            snapshots or SnapshotSettings(), workspace, env, session.id, notes
        )
        registry = create_registry(
            workspace,
            shell_environment(env, shell.env_keep, session=session.id),
            approve=approve,
            sandbox=sandbox,
            output_limit=max(1000, min(16_000, settings.max_context_tokens)),
        )
        register_session_tools(registry, session, Scope(None if all_sessions else workspace, env))
        imported = session.head.header.get("imported") if picked is not None else None
        if isinstance(imported, dict) and imported.get("tools"):
            from gitsessions.services.imports.tool_names import equivalent

            source = str(imported.get("from"))
            lacking = [t for t in imported["tools"] if t not in registry.names]
            instead = {t: e for t in lacking if (e := equivalent(source, t, registry.names))}
            registry.refuse_foreign(lacking, source, instead)
            if lacking:
                notes.print(
                    vtext(
                        f"note: imported from {source}: its tools {', '.join(lacking)} are"
                        " not this agent's; a call to them is refused (this agent's own"
                        " tools do those jobs)",
                        style="yellow",
                    ),
                    highlight=False,
                )
        hub = mcp_tools(state, env, registry, notes, settings.max_context_tokens, prompt)
        if hub is not None:
            check_budget(settings.max_context_tokens, prompt, registry.definitions())
        config = AgentConfig(
            model=settings.model,
            summary_model=settings.summary_model,
            policy=Policy(
                max_context_tokens=settings.max_context_tokens,
                ledger_share=settings.ledger_share,
                target=settings.compact_target,
            ),
            max_steps=max_steps,
            stream=stream,
            title_in_background=title_in_background,
        )
        with ModelClient(settings, retries=RETRIES, wait=events.retrying) as client:
            agent = Agent(
                session,
                client,
                registry,
                default_counter(),
                config,
                cost_function(settings, state.home),
                events,
                workspace_head=lambda: head_of(workspace, env),
                code_snapshot=snapshot,
                hooks=state.hooks,
                mcp=hub,
            )
            yield Built(agent, settings, workspace, picked is not None)
    finally:
        if hub is not None:
            hub.close()
        if lease is not None and session is not None and session.is_draft:
            lease.discard()  # never stored: leave no lease file behind
        elif lease is not None:
            lease.release()


def code_snapshots(
    settings: SnapshotSettings,
    workspace: Path,
    env: Mapping[str, str],
    session_id: str,
    notes: Printer = err,
) -> Callable[[str], str | None] | None:
    """The snapshot taker for the agent (None when snapshots are off); its notes (no
    repository, files left out for size, a git failure) go to stderr, each once (the
    first ones, made here, to `notes`)."""
    if not settings.enabled:
        return None
    if no_repository(workspace, env):  # said without loading the snapshot machinery
        err.print(vtext(NO_REPOSITORY_NOTE, style="yellow"), highlight=False)
        return None
    from gitsessions.services.code.snapshots import Snapshotter

    snapshotter = Snapshotter(
        workspace, env, session_id, settings.max_file_bytes, settings.budget_bytes
    )

    def flush(to: Printer = err) -> None:
        for note in snapshotter.notes:
            to.print(vtext(note, style="yellow"), highlight=False)
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
    workspace: Path, home: Path, env: Mapping[str, str], notes: Printer, budget: int
) -> tuple[str, list[dict[str, Any]]]:
    """The system prompt for `workspace` with its project instructions (AGENTS.md, read
    again at every start and resume), and the record of which files are in force; one
    warning when they take more than a quarter of the context `budget` (in tokens)."""
    from gitsessions.services.code import instructions
    from gitsessions.services.code.workspace import repo_root

    found, skipped = instructions.find(workspace, repo_root(workspace, env), home)
    for line in skipped:
        notes.print(vtext(line, style="yellow"), highlight=False)
    for item in found:
        if item.cut:
            notes.print(
                vtext(f"note: {item.path} is {item.size:,} bytes; the model gets its first "
                      f"{len(item.text.encode()):,}", style="yellow"),
                highlight=False,
            )  # fmt: skip
    records = [item.as_record() for item in found]
    tokens = sum(record["tokens"] for record in records)
    if tokens * 4 > budget:
        notes.print(
            vtext(f"warning: the instruction files take about {tokens:,} tokens, "
                  f"{tokens * 100 // budget}% of the {budget:,}-token context budget "
                  "(see `info` for each file's share)", style="yellow"),
            highlight=False,
        )  # fmt: skip
    section = instructions.prompt_section(found)
    return system_prompt(str(workspace), section), records


def mcp_tools(
    state: State,
    env: Mapping[str, str],
    registry: Any,
    notes: Printer,
    budget: int,
    prompt: str,
) -> "McpHub | None":
    """The `[mcp_servers]` of config.toml started, and their tools registered (each
    needing approval, its arguments checked by its server); None without any. A server
    whose tools do not fit what the context `budget` leaves them (half of it at most,
    and never so much that the system prompt, the tools and a turn no longer fit) is
    left out, in one line naming it and the tokens it needs; the agent starts anyway."""
    from gitsessions.services.settings.config_file import config_path
    from gitsessions.services.tools.mcp_settings import resolve_mcp_servers

    servers = resolve_mcp_servers(state.config(), config_source=str(config_path(state.home)))
    if not servers:
        return None
    from gitsessions.services.tools.mcp_hub import McpHub, definition

    def say(line: str) -> None:
        notes.print(vtext(line, style="yellow"), highlight=False)

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


def least_budget(fixed: int) -> int:
    """The smallest context budget in which `fixed` tokens (system prompt and tools), a
    continuation note and one turn fit (in steps of 500)."""
    return -(-(fixed + Policy().summary_max_tokens + 1024) // 500) * 500


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


def turn_usage(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, Any]:
    delta = {k: after.get(k, 0) - before.get(k, 0) for k in USAGE_TOTAL_KEYS}
    delta["cost_usd"] = round(delta["cost_usd"], 8)
    return delta
