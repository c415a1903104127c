"""The context budget an agent works in: the smaller of `--max-context-tokens` and the
context the model server says it holds (services/model/context_window.py, asked once
as the agent starts: by the assembly for exec and acp, by chat's endpoint probe).

Invariants:
- The budget never grows past the configured one: a server saying more changes nothing.
- What the server said is recorded with the session's settings
  (`server_context_tokens`, which a resume does not reuse: the server is asked again)
  and rides with the next commit; `info` shows the budget from it.
- A server holding too little for the system prompt, the tools and a turn is refused
  before anything is sent, naming the server and what it said.
"""

import json
from dataclasses import replace
from typing import TYPE_CHECKING

from gitsessions.agent.loop import Agent
from gitsessions.services.compaction.compaction_policy import Policy
from gitsessions.services.settings.config import ModelSettings, session_settings
from gitsessions.values.errors import BadUsage
from gitsessions.values.tokens import default_counter

if TYPE_CHECKING:
    from gitsessions.services.model.context_window import ServerContext


def least_budget(fixed: int) -> int:
    """The smallest context budget in which `fixed` tokens (system prompt and tools), a
    continuation note and one turn fit (in steps of 500)."""
    return -(-(fixed + Policy().summary_max_tokens + 1024) // 500) * 500


class ServerContextTooSmall(BadUsage):
    """The server's context cannot hold the system prompt, the tools and a turn."""


def use_server_context(agent: Agent, settings: ModelSettings, said: "ServerContext | None") -> int:
    """Limit `agent`'s budget to what the server `said` it holds; returns the budget."""
    recorded: dict[str, object] = session_settings(settings)
    if said is not None:
        recorded["server_context_tokens"] = said.tokens
    agent.session.note_header(settings=recorded)  # over what the assembly noted
    configured = agent.config.policy.max_context_tokens
    if said is None or said.tokens >= configured:
        return configured  # the server holds as much or more: the budget stays as set
    context = agent.session.context
    prompt = (context[0].get("content") or "") if context else ""
    upper = len(str(prompt).encode()) + len(json.dumps(agent.tools).encode()) + 200
    if said.tokens < least_budget(upper):
        system = [{"role": "system", "content": str(prompt)}]
        fixed = default_counter().estimate(system, agent.tools)
        if said.tokens < least_budget(fixed):
            raise ServerContextTooSmall(
                f"the model server at {settings.base_url} holds {said.tokens:,} tokens of "
                f"context ({said.said_by}); the system prompt and tool definitions alone "
                f"take {fixed:,}, and a turn needs at least {least_budget(fixed):,}: give "
                "the server a larger context (llama.cpp: --ctx-size; Ollama: num_ctx)"
            )
    policy = replace(agent.config.policy, max_context_tokens=said.tokens)
    agent.config = agent.config._replace(policy=policy)
    agent.budget.policy = policy
    return said.tokens
