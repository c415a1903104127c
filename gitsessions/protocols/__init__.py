"""Adapters that speak to other programs: over stdio, the agent to editors over the Agent
Client Protocol (acp/) and the session store to MCP clients (mcp_server/); over HTTP on
127.0.0.1, the store to a browser (web/, read-only).

Owns: each protocol's framing, its messages and their mapping onto the agent and the
services; the limits on what a client may send.
Never: parses a command line, reads the environment, prints, or imports typer or rich
(the CLI's commands hand an adapter what it needs: settings, an agent builder, a place
for log lines); never writes to stdout but the protocol's own messages. Imports only
agent/ and below (tests/test_layering.py).
"""
