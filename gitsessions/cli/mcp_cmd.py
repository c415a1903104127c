"""`gitsessions mcp`: its arguments parsed and the session store served over MCP
(protocols/mcp_server/), scoped to the project of the directory it starts in unless
`--all-sessions`, read-only unless `--allow-writes`; its --help names the tools from the
server's own list (`tools.TOOLS`, without the SDK)."""

from pathlib import Path
from typing import Annotated, Any

import typer

from gitsessions.cli.args import state_of
from gitsessions.cli.listing import session_rows
from gitsessions.protocols.mcp_server.calls import DEADLINE
from gitsessions.protocols.mcp_server.server import build, serve
from gitsessions.protocols.mcp_server.tools import TOOLS


def _names(writes: bool) -> str:
    """The tools the server offers (read ones, or the write ones), as --help names them:
    from the server's own list, so the help cannot leave one out."""
    *rest, last = [spec.name for spec in TOOLS if spec.writes is writes]
    return f"{', '.join(rest)} and {last}" if rest else last


HELP = (
    f"Serve the session store over MCP (stdio): {_names(False)}; scoped to this project's "
    "sessions unless --all-sessions, read-only unless --allow-writes. A tool call runs off "
    "the protocol's loop: `ping` is always answered, a call is answered an error after "
    "--timeout, and the server ends when stdin closes. Add it to Claude Code "
    "with `claude mcp add gitsessions -- gitsessions mcp`, to Codex with "
    '`[mcp_servers.gitsessions]` `command = "gitsessions"`, `args = ["mcp"]`.'
)


def cmd_mcp(
    ctx: typer.Context,
    all_sessions: Annotated[
        bool, typer.Option("--all-sessions", help="Serve every session, not only this project's.")
    ] = False,
    allow_writes: Annotated[
        bool, typer.Option("--allow-writes", help=f"Also offer {_names(True)}.")
    ] = False,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout",
            metavar="SECONDS",
            min=1,
            max=3600,
            help="Answer a tool call that has not ended after this long with an error.",
        ),
    ] = DEADLINE,
) -> None:
    """Serve the session store over MCP (stdio); its help (`HELP`) names the tools."""
    state = state_of(ctx)

    def rows(include_archived: bool, workspace: Path | None) -> list[dict[str, Any]]:
        return session_rows(state.store, include_archived, workspace)

    server = build(state.store, state.env, Path.cwd(), rows, all_sessions, allow_writes, timeout)
    serve(server)


def register(app: typer.Typer) -> None:
    app.command("mcp", help=HELP)(cmd_mcp)
