"""The session store served to other agents (Claude Code, Codex, any MCP client) as an MCP
server over stdio, through the `mcp` SDK's low-level `Server` (tools only).

Owns: the tools offered (tools.py: names, schemas, annotations, the check of a call's
arguments) and their work on the store (server.py), scoped as the agent's own session
tools are (agent/scope.py, services/sessions/session_tools.py), every answer bounded;
the calls run off the event loop (calls.py), each answered within a deadline, and every
call read is answered before it exits at the end of its input (draining.py).
Never: blocks its event loop on a tool call (`ping` and stdin's end are always heard),
writes unless started with --allow-writes (and then only through the services the CLI
uses), reads the environment (cli/mcp_cmd.py hands it over), prints, or writes
anything to stdout but protocol messages; a failure is one line, never a traceback.
"""
