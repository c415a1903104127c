"""`[mcp_servers.NAME]` tables of `config.toml`: the MCP servers whose tools the agent
offers the model, in the shape of Codex's `config.toml` (so a user copies theirs).

A stdio server: `command`, `args`, `env`, `cwd`. A streamable HTTP one: `url`,
`http_headers`, `env_http_headers` (header -> the name of the variable holding its
value), `bearer_token_env_var`. Both: `enabled`, `enabled_tools`, `disabled_tools`,
`startup_timeout_sec` (default 10), `tool_timeout_sec` (default 60). Every value is
checked against `SERVER_SHAPE` (values/shapes.py, the project's one check of a JSON
shape); a bad one is a `ConfigError` of one line naming the server and the key.
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gitsessions.values.errors import GitsessionsError
from gitsessions.values.shapes import Misfit, check, described

CONFIG_FILE = "config.toml"


class ConfigError(GitsessionsError):
    """An `[mcp_servers]` table is invalid (bad usage, as every config error)."""

    exit_code = 2


TABLE = "mcp_servers"
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


STRINGS = described({"type": "array", "items": {"type": "string"}}, "must be a list of strings")
TABLE_OF_STRINGS = described(
    {"type": "object", "additionalProperties": {"type": "string"}}, "must be a table of strings"
)
SECONDS = described(
    {"type": "number", "exclusiveMinimum": 0, "maximum": 3600},
    "must be a number of seconds between 0 and 3600",
)
# a server's table (values/shapes.py): what each key must be, and no other key
SERVER_SHAPE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "command": described({"type": "string", "minLength": 1}, "must be a program name or path"),
        "args": STRINGS,
        "env": TABLE_OF_STRINGS,
        "cwd": described({"type": "string"}, "must be a path"),
        "url": described(
            {"type": "string", "pattern": "^https?://"}, "must be an http:// or https:// URL"
        ),
        "http_headers": TABLE_OF_STRINGS,
        "env_http_headers": TABLE_OF_STRINGS,
        "bearer_token_env_var": described(
            {"type": "string", "minLength": 1}, "must name a variable"
        ),
        "enabled": described({"type": "boolean"}, "must be true or false"),
        "enabled_tools": STRINGS,
        "disabled_tools": STRINGS,
        "startup_timeout_sec": SECONDS,
        "tool_timeout_sec": SECONDS,
    },
    "additionalProperties": False,
}
KEYS = frozenset(SERVER_SHAPE["properties"])


def _checked(table: Mapping[str, Any], where: str) -> dict[str, Any]:
    """`table` as it fits `SERVER_SHAPE`, or the `ConfigError` naming the key."""
    try:
        checked: dict[str, Any] = check(dict(table), SERVER_SHAPE)
    except Misfit as misfit:
        if misfit.kind == "unknown":
            known = ", ".join(sorted(KEYS))
            raise ConfigError(
                f"{where}: unknown key {misfit.value[0]!r} (known: {known})"
            ) from None
        key = misfit.path[0]
        schema = SERVER_SHAPE["properties"][key]
        apart = ":" if schema["type"] in ("string", "boolean") else ""  # as it always was
        raise ConfigError(f"{where}{apart} {key} {schema['description']}") from None
    return checked


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
        table = _checked(table, where)
        if not table.get("enabled", True):
            continue
        command, url = table.get("command"), table.get("url")
        if (command is None) == (url is None):
            raise ConfigError(f"{where}: give either command (stdio) or url (streamable HTTP)")
        enabled = table.get("enabled_tools")
        found.append(
            McpServer(
                name=name,
                command=command,
                args=tuple(table.get("args", ())),
                env=table.get("env", {}),
                cwd=table.get("cwd"),
                url=url,
                headers=table.get("http_headers", {}),
                env_headers=table.get("env_http_headers", {}),
                bearer_env=table.get("bearer_token_env_var"),
                enabled_tools=None if enabled is None else tuple(enabled),
                disabled_tools=tuple(table.get("disabled_tools", ())),
                startup_timeout=float(table.get("startup_timeout_sec", 10)),
                tool_timeout=float(table.get("tool_timeout_sec", 60)),
            )
        )
    return found
