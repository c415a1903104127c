"""Shell settings resolution: the `[shell]` table of config.toml under the CLI flags
(`env_keep`, `sandbox`, `sandbox_network`, `sandbox_allow_git`).

Invariant: each setting takes the CLI flag when given, else `[shell]` in config.toml,
else its default (no environment variables: what the shell may reach is not something
an inherited variable should change). A key in `[shell]` this module does not know is an
error, not ignored: a misspelt `sandbox_network` must not silently weaken the sandbox.
`sources` names where each value came from, like `ModelSettings.sources`.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gitsessions.services.settings.config import config_table
from gitsessions.services.settings.config_file import CONFIG_FILE, ConfigError

TABLE = "shell"
KEYS = ("env_keep", "sandbox", "sandbox_network", "sandbox_allow_git")
DEFAULT_SANDBOX = "none"
# The run_shell sandbox modes (services/tools/sandbox.py builds workspace-write); kept here
# so resolving the settings imports none of the tools (`chat` resolves them before its prompt).
MODES = ("none", "workspace-write")


# no generated __eq__/__repr__: nothing compares or prints it, and each costs start-up
@dataclass(frozen=True, eq=False, repr=False)
class ShellSettings:
    """What run_shell may see and reach: kept variables, sandbox mode, network, and
    whether the sandbox lets it write the project's git directory."""

    env_keep: tuple[str, ...] = ()
    sandbox: str = DEFAULT_SANDBOX
    sandbox_network: bool = False
    sandbox_allow_git: bool = False
    sources: Mapping[str, str] = field(default_factory=dict)


def resolve_shell_settings(
    flags: Mapping[str, Any], config: Mapping[str, Any], *, config_source: str = CONFIG_FILE
) -> ShellSettings:
    """Resolve `sandbox`, `sandbox_network` and `sandbox_allow_git` (flags: None means
    not given) and `env_keep` (config only) by precedence flag > config > default;
    validate them."""
    table, where = config_table(config, TABLE, KEYS, config_source)
    sources: dict[str, str] = {}
    values: dict[str, Any] = {}
    for name, flag, default in (
        ("sandbox", "--sandbox", DEFAULT_SANDBOX),
        ("sandbox_network", "--sandbox-network", False),
        ("sandbox_allow_git", "--sandbox-allow-git", False),
        ("env_keep", None, []),
    ):
        if flag is not None and flags.get(name) is not None:
            values[name], sources[name] = flags[name], f"flag {flag}"
        elif table.get(name) is not None:
            values[name], sources[name] = table[name], where
        else:
            values[name], sources[name] = default, "default"
    if values["sandbox"] not in MODES:
        raise ConfigError(
            f"sandbox {values['sandbox']!r} from {sources['sandbox']} must be one of: "
            + ", ".join(MODES)
        )
    for name in ("sandbox_network", "sandbox_allow_git"):
        if not isinstance(values[name], bool):
            raise ConfigError(f"{name} from {sources[name]} must be true or false")
    keep = values["env_keep"]
    if not isinstance(keep, list) or not all(isinstance(p, str) and p for p in keep):
        raise ConfigError(
            f"env_keep from {sources['env_keep']} must be a list of variable names or globs, "
            'e.g. ["GH_TOKEN", "AWS_*"]'
        )
    return ShellSettings(
        env_keep=tuple(keep),
        sandbox=values["sandbox"],
        sandbox_network=values["sandbox_network"],
        sandbox_allow_git=values["sandbox_allow_git"],
        sources=sources,
    )
