"""The session store served to MCP clients (Claude Code, Codex...) over stdio: the SDK's
high-level `MCPServer` holds the tools, its low-level `Server` speaks the protocol.

Owns: the tools offered (tools.py), their work as typed functions the SDK derives schemas
from (work.py), scoped as the agent's session tools are, every answer bounded; calls run
off the event loop within a deadline (calls.py), and every call read is answered before
exit (draining.py).
Never: blocks its event loop on a call, writes unless --allow-writes (then only through
the CLI's services), reads the environment, prints, or writes to stdout anything but
protocol messages; a failure is one line, never a traceback.
"""
