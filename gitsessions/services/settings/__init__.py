"""Settings: config.toml, flags and environment, per-session settings."""
