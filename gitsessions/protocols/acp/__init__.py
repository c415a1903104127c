"""The agent served to editors (Zed and other clients) over the Agent Client Protocol,
through the `agent-client-protocol` package's `run_agent` on a stdio transport of its own.

Owns: the protocol's requests (initialize, session/list, /new, /load, /prompt, /cancel),
the agent's events as session updates, approvals as permission requests, the order of
what is sent, the line framing and its 16 MiB cap, and the thread model (the protocol on
a thread of its own, every agent on the main thread, a cancel as SIGINT to it).
Never: builds an agent itself (cli/acp_cmd.py hands it a builder), reads the
environment, prints, or writes anything to stdout but protocol messages.
"""
