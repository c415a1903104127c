"""Settings: config.toml read and its unknown keys (`config_file.py`: all every command
needs), settings precedence (`config.py`: flag, environment, config.toml, default; a
resumed session's recorded settings under flags and environment), the [shell] and
[snapshots] tables (`shell_settings.py`, `snapshot_settings.py`).

Owns: what a setting resolves to. Must never read the environment itself (cli/ hands
it over) nor write config.toml.
Uses: nothing above the store.
"""
