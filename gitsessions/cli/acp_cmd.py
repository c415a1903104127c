"""`gitsessions acp`: its arguments parsed, the agent's settings resolved, and the ACP
adapter (protocols/acp/) served with them: how it builds an agent (`build_agent`, as
`chat` and `exec` build it), lists sessions, and where its notes go (stderr, which
editors log: stdout carries the protocol and nothing else).
"""

from contextlib import ExitStack
from pathlib import Path
from typing import Any

import typer

from gitsessions.agent.assembly import Built
from gitsessions.cli import options
from gitsessions.cli.agent_setup import build_agent, warm_up
from gitsessions.cli.listing import session_rows
from gitsessions.cli.state import State, err
from gitsessions.protocols.acp.agent import GitsessionsAcp
from gitsessions.protocols.acp.events import AcpApprover, AcpEvents
from gitsessions.protocols.acp.serve import check_stdio, serve
from gitsessions.protocols.acp.worker import Worker


def cmd_acp(
    ctx: typer.Context,
    model: options.Model = None,
    base_url: options.BaseUrl = None,
    summary_model: options.SummaryModel = None,
    max_context_tokens: options.MaxContext = None,
    all_sessions: options.AllSessions = False,
    sandbox: options.Sandbox = None,
    sandbox_network: options.SandboxNetwork = None,
    sandbox_allow_git: options.SandboxAllowGit = None,
    no_snapshots: options.NoSnapshots = False,
) -> None:
    """Serve the agent to editors such as Zed over ACP (stdio).

    ACP is the Agent Client Protocol. For Zed: "agent_servers" in its settings.json,
    with command "gitsessions" and args ["acp"]. An editor's new session is a
    gitsessions session in the folder it names; session/list lists that project's
    sessions; session/load opens any stored session (its transcript replayed).
    write_file, edit_file, run_shell and MCP tools ask the editor first (allow once,
    always, or reject); a cancel stops the turn as Ctrl-C does in chat, and the
    session is saved. The server stops when its input closes.
    """
    state: State = ctx.obj
    check_stdio()
    warm_up()
    settings, shell, snapshots = options.agent_settings(
        state,
        model=model,
        base_url=base_url,
        summary_model=summary_model,
        max_context_tokens=max_context_tokens,
        sandbox=sandbox,
        sandbox_network=sandbox_network,
        sandbox_allow_git=sandbox_allow_git,
        no_snapshots=no_snapshots,
    )

    def build(
        stack: ExitStack,
        cwd: Path,
        session_id: str | None,
        approver: AcpApprover,
        events: AcpEvents,
    ) -> Built:
        return stack.enter_context(
            build_agent(
                state,
                settings,
                shell,
                resume=session_id,
                continue_=False,
                workspace_flag=cwd,
                approve=approver,
                events=events,
                all_sessions=all_sessions,
                snapshots=snapshots,
            )
        )

    def rows(cwd: Path | None) -> list[dict[str, Any]]:
        return session_rows(state.catalog(), False, cwd)

    def say(line: str) -> None:
        err.print(line, markup=False, highlight=False)

    worker = Worker()
    server = GitsessionsAcp(worker, build, rows, say)
    serve(server, worker)


def register(app: typer.Typer) -> None:
    app.command("acp")(cmd_acp)
