"""config.toml's tables checked by values/shapes.py (issue 43, item 4), the check the
tools' and the MCP server's arguments pass: the same lines as before, and the same
rules (a whole number may be written 2.0; NaN is no number)."""

import math
import tomllib

import pytest

from gitsessions.services.hooks.hooks import hook_timeout
from gitsessions.services.settings.config import resolve_snapshot_settings
from gitsessions.services.settings.config_file import ConfigError


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
