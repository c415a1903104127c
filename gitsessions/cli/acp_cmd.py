"""`gitsessions acp`: the agent served over the Agent Client Protocol (stdio), for Zed
and other ACP clients.

Invariant: stdout carries the protocol and nothing else (notes, the sandbox line and
warnings go to stderr, which editors log); stdin is read a line at a time, each line
capped at 16 MiB (cli/acp_lines.py: an over-long line is answered with a short error).
The protocol runs on its own thread's event loop (the `agent-client-protocol` package's
`run_agent`); the agent runs on the main thread (cli/acp_worker.py), built by
`build_agent` as `chat` and `exec` build it.
"""

import asyncio
import os
import stat
import threading
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import typer

from gitsessions.cli import options
from gitsessions.cli.acp_agent import GitsessionsAcp
from gitsessions.cli.acp_events import AcpApprover, AcpEvents
from gitsessions.cli.acp_lines import serve_stdio
from gitsessions.cli.acp_worker import Worker
from gitsessions.cli.agent_setup import Built, build_agent, warm_up
from gitsessions.cli.state import State
from gitsessions.values.errors import BadUsage, GitsessionsError


class ConnectionFailed(GitsessionsError):
    """The protocol's connection broke (not a request: those are answered with errors)."""


def check_stdio() -> None:
    """The protocol needs stdin and stdout it can wait on: pipes, sockets or a terminal
    (a regular file or /dev/null is refused with one line instead of a traceback)."""
    for name, fd in (("stdin", 0), ("stdout", 1)):  # by descriptor: nothing written here
        try:
            mode = os.fstat(fd).st_mode
            usable = stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(fd)
        except OSError:  # closed
            usable = False
        if not usable:
            raise BadUsage(
                f"acp talks to an editor over pipes ({name} is not one); start it from "
                'the editor (Zed: "agent_servers" with command "gitsessions", args ["acp"])'
            )


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
                title_in_background=True,  # the prompt answers without waiting for it
            )
        )

    def rows(cwd: Path | None) -> list[dict[str, Any]]:
        from gitsessions.cli.listing import session_rows

        return session_rows(state.catalog(), False, cwd)

    worker = Worker()
    server = GitsessionsAcp(worker, build, rows)
    serve(server, worker)


def serve(server: GitsessionsAcp, worker: Worker) -> None:
    """The protocol on its thread until the client closes stdin; the jobs here. A turn
    running when the client leaves is cancelled (and saved) as a cancel would."""
    failed: list[Exception] = []

    def protocol() -> None:
        try:
            asyncio.run(serve_stdio(server))
        except Exception as error:  # said once, as an error line, when the jobs are done
            failed.append(error)
        finally:
            if worker.turn_of is not None:  # the editor left mid-turn: stop it, save it
                worker.cancel(worker.turn_of)
            worker.stop()

    thread = threading.Thread(target=protocol, daemon=True, name="acp")
    try:
        worker.run(ready=thread.start)
    finally:
        server.close()
    if failed:
        raise ConnectionFailed(f"the ACP connection failed: {failed[0]}")


def register(app: typer.Typer) -> None:
    app.command("acp")(cmd_acp)
