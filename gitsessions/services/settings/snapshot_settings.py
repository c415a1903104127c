"""The `[snapshots]` table of config.toml: whether turns take code snapshots, and the
size over which a file is left out of one.

Invariant: the `--no-snapshots` flag wins, then `[snapshots]`, then the defaults (on,
10 MiB). An unknown key in the table is an error, not ignored.
"""

from collections.abc import Mapping
from typing import Any, NamedTuple

from gitsessions.services.settings.config import config_table
from gitsessions.services.settings.config_file import CONFIG_FILE, ConfigError

DEFAULT_MAX_FILE_BYTES = 10 * 1024 * 1024  # a file over 10 MiB is left out of a snapshot
TABLE = "snapshots"
KEYS = ("enabled", "max_file_bytes")
DEFAULT_MAX_FILE_BYTES = 10 * 1024 * 1024  # a file over 10 MiB is left out of a snapshot


class SnapshotSettings(NamedTuple):
    enabled: bool = True
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES


def resolve_snapshot_settings(
    no_snapshots: bool, config: Mapping[str, Any], *, config_source: str = CONFIG_FILE
) -> SnapshotSettings:
    table, where = config_table(config, TABLE, KEYS, config_source)
    enabled = table.get("enabled", True)
    if not isinstance(enabled, bool):
        raise ConfigError(f"{where}: enabled must be true or false")
    limit = table.get("max_file_bytes", DEFAULT_MAX_FILE_BYTES)
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise ConfigError(f"{where}: max_file_bytes must be a whole number of bytes >= 0")
    return SnapshotSettings(enabled=enabled and not no_snapshots, max_file_bytes=limit)
