"""config.toml's tables checked by values/shapes.py (issue 43, item 4), the check the
tools' and the MCP server's arguments pass: the same lines as before, and the same
rules (a whole number may be written 2.0; NaN is no number)."""

import math
import tomllib

import pytest

from gitsessions.services.hooks.hooks import hook_timeout
from gitsessions.services.settings.config import resolve_snapshot_settings
from gitsessions.services.settings.config_file import ConfigError
from gitsessions.services.tools.mcp_settings import ConfigError as McpConfigError
from gitsessions.services.tools.mcp_settings import resolve_mcp_servers


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("[snapshots]\nenabled = 1", "config.toml [snapshots]: enabled must be true or false"),
        ('[snapshots]\nmax_file_bytes = "10M"',
         "config.toml [snapshots]: max_file_bytes must be a whole number of bytes >= 0"),
        ("[snapshots]\nbudget_bytes = -1",
         "config.toml [snapshots]: budget_bytes must be a whole number of bytes >= 0"),
        ("[snapshots]\nbudget_bytes = 1.5",
         "config.toml [snapshots]: budget_bytes must be a whole number of bytes >= 0"),
        ("[snapshots]\nbudget = 1", "config.toml [snapshots]: unknown key 'budget'; known keys "
         "are enabled, max_file_bytes, budget_bytes"),
        ("snapshots = 1", "config.toml: [snapshots] must be a table"),
    ],
)  # fmt: skip
def test_a_snapshots_table_that_does_not_fit_is_one_line(text, said):
    with pytest.raises(ConfigError) as raised:
        resolve_snapshot_settings(False, tomllib.loads(text))
    assert str(raised.value) == said


@pytest.mark.parametrize("value", [0, -1, 601, math.nan, math.inf, "5", True])
def test_a_hook_timeout_out_of_range_is_one_line(value):
    with pytest.raises(ConfigError) as raised:
        hook_timeout({"hooks": {"timeout": value}})
    assert (
        str(raised.value) == "config.toml [hooks]: timeout must be a number of seconds in (0, 600]"
    )


def test_a_whole_number_written_with_a_point_is_that_number():
    """TOML's `1048576.0` is the whole number JSON Schema's integer allows (it was refused
    as not a whole number)."""
    text = "[snapshots]\nmax_file_bytes = 1048576.0\nbudget_bytes = 0"
    found = resolve_snapshot_settings(False, tomllib.loads(text))
    assert found.max_file_bytes == 1048576 and isinstance(found.max_file_bytes, int)
    assert found.budget_bytes == 0 and hook_timeout({"hooks": {"timeout": 600}}) == 600.0


SERVER = "config.toml: [mcp_servers.x]"


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('command = ""', ": command must be a program name or path"),
        ("command = 5", ": command must be a program name or path"),
        ('url = "ftp://host"', ": url must be an http:// or https:// URL"),
        ('command = "a"\nargs = ["-v", 1]', " args must be a list of strings"),
        ('command = "a"\nenv = { A = 1 }', " env must be a table of strings"),
        ('command = "a"\ncwd = 1', ": cwd must be a path"),
        ('url = "http://h"\nhttp_headers = "x"', " http_headers must be a table of strings"),
        ('url = "http://h"\nbearer_token_env_var = ""',
         ": bearer_token_env_var must name a variable"),
        ('command = "a"\nenabled = "no"', ": enabled must be true or false"),
        ('command = "a"\ndisabled_tools = "t"', " disabled_tools must be a list of strings"),
        ('command = "a"\nstartup_timeout_sec = 0',
         " startup_timeout_sec must be a number of seconds between 0 and 3600"),
        ('command = "a"\ntool_timeout_sec = 3601',
         " tool_timeout_sec must be a number of seconds between 0 and 3600"),
        ('command = "a"\ntool_timeout_sec = nan',
         " tool_timeout_sec must be a number of seconds between 0 and 3600"),
        ('command = "a"\ntool_timeout_sec = true',
         " tool_timeout_sec must be a number of seconds between 0 and 3600"),
        ('command = "a"\nurl = "http://h"',
         ": give either command (stdio) or url (streamable HTTP)"),
        ('command = "a"\ncommnd = "b"',
         ": unknown key 'commnd' (known: args, bearer_token_env_var,"),
    ],
)  # fmt: skip
def test_an_mcp_server_table_that_does_not_fit_is_one_line(text, said):
    """`[mcp_servers.NAME]` is checked by the same values/shapes.py as the other tables."""
    with pytest.raises(McpConfigError) as raised:
        resolve_mcp_servers(tomllib.loads(f"[mcp_servers.x]\n{text}"))
    assert str(raised.value).startswith(f"{SERVER}{said}"), str(raised.value)
    assert "\n" not in str(raised.value)


def test_an_mcp_server_table_that_fits_is_read_whole():
    text = (
        '[mcp_servers.x]\nurl = "https://h/mcp"\nhttp_headers = { A = "b" }\n'
        'env_http_headers = { T = "TOKEN" }\nbearer_token_env_var = "KEY"\n'
        'enabled_tools = ["t"]\ntool_timeout_sec = 2.5\n'
        '[mcp_servers.off]\nenabled = false\ncommand = "a"\n'
    )
    (server,) = resolve_mcp_servers(tomllib.loads(text))
    assert (server.name, server.url, server.headers, server.env_headers) == (
        "x", "https://h/mcp", {"A": "b"}, {"T": "TOKEN"}
    )  # fmt: skip
    assert (server.bearer_env, server.enabled_tools, server.disabled_tools) == ("KEY", ("t",), ())
    assert (server.startup_timeout, server.tool_timeout) == (10.0, 2.5)
