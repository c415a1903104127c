"""`[mcp_servers.NAME]` tables of `config.toml`: the MCP servers whose tools the agent
offers the model, in the shape of Codex's `config.toml` (so a user copies theirs).

A stdio server: `command`, `args`, `env`, `cwd`. A streamable HTTP one: `url`,
`http_headers`, `env_http_headers` (header -> the name of the variable holding its
value), `bearer_token_env_var`. Both: `enabled`, `enabled_tools`, `disabled_tools`,
`startup_timeout_sec` (default 10), `tool_timeout_sec` (default 60). Every value is
checked here; a bad one is a `ConfigError` naming the server and the key.
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gitsessions.values.errors import GitsessionsError

CONFIG_FILE = "config.toml"


class ConfigError(GitsessionsError):
    """An `[mcp_servers]` table is invalid (bad usage, as every config error)."""

    exit_code = 2


TABLE = "mcp_servers"
KEYS = frozenset({
    "command", "args", "env", "cwd", "url", "http_headers", "env_http_headers",
    "bearer_token_env_var", "enabled", "enabled_tools", "disabled_tools",
    "startup_timeout_sec", "tool_timeout_sec",
})  # fmt: skip
NAME = re.compile(r"[A-Za-z0-9_-]{1,40}")  # matched in full  # it prefixes the tools' names


@dataclass(frozen=True)
class McpServer:
    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)  # fixed ones
    env_headers: Mapping[str, str] = field(default_factory=dict)  # header -> variable
    bearer_env: str | None = None  # the variable holding an `Authorization: Bearer` token
    enabled_tools: tuple[str, ...] | None = None
    disabled_tools: tuple[str, ...] = ()
    startup_timeout: float = 10.0
    tool_timeout: float = 60.0

    def offers(self, tool: str) -> bool:
        """Whether the server's `tool` is offered to the model."""
        if self.enabled_tools is not None and tool not in self.enabled_tools:
            return False
        return tool not in self.disabled_tools


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where} must be a list of strings")
    return tuple(value)


def _table(value: Any, where: str) -> dict[str, str]:
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ConfigError(f"{where} must be a table of strings")
    return dict(value)


def _seconds(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 3600:
        raise ConfigError(f"{where} must be a number of seconds between 0 and 3600")
    return float(value)


def resolve_mcp_servers(
    config: Mapping[str, Any], *, config_source: str = CONFIG_FILE
) -> list[McpServer]:
    """The enabled servers of `config` (none when it has no `[mcp_servers]`)."""
    servers = config.get(TABLE, {})
    if not isinstance(servers, Mapping):
        raise ConfigError(f"{config_source}: [{TABLE}] must be a table of servers")
    found: list[McpServer] = []
    for name, table in servers.items():
        where = f"{config_source}: [{TABLE}.{name}]"
        if not isinstance(name, str) or not NAME.fullmatch(name) or "__" in name:
            raise ConfigError(
                f"{where}: a server's name is 1-40 letters, digits, - or _, without __"
                " (which separates it from its tools' names in mcp__<server>__<tool>)"
            )
        if not isinstance(table, Mapping):
            raise ConfigError(f"{where} must be a table")
        unknown = sorted(set(table) - KEYS)
        if unknown:
            raise ConfigError(
                f"{where}: unknown key {unknown[0]!r} (known: {', '.join(sorted(KEYS))})"
            )
        if table.get("enabled", True) is False:
            continue
        command, url = table.get("command"), table.get("url")
        if (command is None) == (url is None):
            raise ConfigError(f"{where}: give either command (stdio) or url (streamable HTTP)")
        if command is not None and (not isinstance(command, str) or not command):
            raise ConfigError(f"{where}: command must be a program name or path")
        if url is not None and (
            not isinstance(url, str) or not url.startswith(("http://", "https://"))
        ):
            raise ConfigError(f"{where}: url must be an http:// or https:// URL")
        env_headers = _table(table.get("env_http_headers", {}), f"{where} env_http_headers")
        token = table.get("bearer_token_env_var")
        if token is not None and (not isinstance(token, str) or not token):
            raise ConfigError(f"{where}: bearer_token_env_var must name a variable")
        cwd = table.get("cwd")
        if cwd is not None and not isinstance(cwd, str):
            raise ConfigError(f"{where}: cwd must be a path")
        enabled = table.get("enabled_tools")
        found.append(
            McpServer(
                name=name,
                command=command,
                args=_strings(table.get("args", []), f"{where} args"),
                env=_table(table.get("env", {}), f"{where} env"),
                cwd=cwd,
                url=url,
                headers=_table(table.get("http_headers", {}), f"{where} http_headers"),
                env_headers=env_headers,
                bearer_env=token,
                enabled_tools=None
                if enabled is None
                else _strings(enabled, f"{where} enabled_tools"),
                disabled_tools=_strings(table.get("disabled_tools", []), f"{where} disabled_tools"),
                startup_timeout=_seconds(
                    table.get("startup_timeout_sec", 10), f"{where} startup_timeout_sec"
                ),
                tool_timeout=_seconds(
                    table.get("tool_timeout_sec", 60), f"{where} tool_timeout_sec"
                ),
            )
        )
    return found
