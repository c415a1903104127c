"""The session store served to other agents (Claude Code, Codex, any MCP client) as an MCP
server over stdio: the `mcp` SDK's high-level `MCPServer` holds the tools, its
low-level `Server` speaks the protocol (tools only; server.py says why both).

Owns: the tools offered (tools.py: names, annotations, the line a misfit argument
gets), their work on the store as typed functions the SDK derives their schemas
from (work.py), scoped as the agent's own session
tools are (agent/scope.py, services/sessions/session_tools.py), every answer bounded;
the calls run off the event loop (calls.py), each answered within a deadline, and every
call read is answered before it exits at the end of its input (draining.py).
Never: blocks its event loop on a tool call (`ping` and stdin's end are always heard),
writes unless started with --allow-writes (and then only through the services the CLI
uses), reads the environment (cli/mcp_cmd.py hands it over), prints, or writes
anything to stdout but protocol messages; a failure is one line, never a traceback.
"""
