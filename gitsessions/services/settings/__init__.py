"""Settings: config.toml read and its unknown keys (`config_file.py`: all every command
needs, kept apart so that `list` imports no more of the settings), and what each
setting resolves to (`config.py`: the model's settings by flag, environment,
config.toml, default, a resumed session's recorded ones under flags and environment;
the [shell] and [snapshots] tables).

Owns: what a setting resolves to. Must never read the environment itself (cli/ hands
it over) nor write config.toml.
Uses: nothing above the store.
"""
