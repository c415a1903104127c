"""config.toml itself: where it is, reading it, its unknown keys, `redact`.

Every command that writes reads the config (its unknown keys are reported, `redact`
decides what a commit stores), so this part is kept apart from the model settings
(`services/settings/config.py`, which names all of it too). Reading commands (`list`,
`info`, `show`, `log`) read no settings, so a malformed config.toml does not stop them.
"""

import difflib
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gitsessions.values.errors import GitsessionsError

CONFIG_FILE = "config.toml"
# the top-level keys config.toml may hold: the model settings (`config._LOOKUP`, in its
# order; tests/test_startup.py checks), and the tables
KNOWN_KEYS = (
    "model",
    "base_url",
    "api_key",
    "summary_model",
    "timeout",
    "summary_timeout",
    "max_context_tokens",
    "ledger_share",
    "user_words_share",
    "compact_target",
    "exec_summary",
    "redact",
    "prices",
    "shell",
    "snapshots",
    "hooks",
    "mcp_servers",
)


class ConfigError(GitsessionsError):
    """A setting or the config file is invalid."""

    exit_code = 2


def config_path(home: Path) -> Path:
    """Where the config file lives under `$GITSESSIONS_HOME`."""
    return home / CONFIG_FILE


def load_config(path: Path | str) -> dict[str, Any]:
    """The parsed TOML at `path`; {} when the file does not exist."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"cannot read config file {path}: {error}") from error
    import tomllib  # only with a config file: every command reads the config

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        reason = str(error)
        match = re.search(r"\(at line (\d+), column (\d+)\)", reason)
        where = f"line {match.group(1)}" if match else "somewhere"
        reason = reason[: match.start()].strip() if match else reason
        raise ConfigError(f"malformed config file {path}, {where}: {reason}") from error
    except ValueError as error:  # an integer of 4,300+ digits
        reason = str(error).split(";")[0]
        raise ConfigError(f"malformed config file {path}: {reason}") from None


# keys older releases read, ignored now with a note of why (never an error)
RETIRED_KEYS = {"client": "the openai SDK is the only model client"}


def unknown_keys(config: Mapping[str, Any]) -> list[str]:
    """One line per top-level key gitsessions does not know, naming the nearest known
    key: `unknown key 'modle' (did you mean 'model'?); it is ignored`; a retired key
    says why: `key 'client' is no longer used (...); it is ignored`."""
    retired = [
        f"key {key!r} is no longer used ({why}); it is ignored"
        for key, why in RETIRED_KEYS.items()
        if key in config
    ]
    unknown = sorted(k for k in config if k not in KNOWN_KEYS and k not in RETIRED_KEYS)
    if not unknown:
        return retired

    lines = []
    for key in unknown:
        near = difflib.get_close_matches(key, KNOWN_KEYS, n=1, cutoff=0.6)
        hint = f" (did you mean {near[0]!r}?)" if near else f" (known: {', '.join(KNOWN_KEYS)})"
        lines.append(f"unknown key {key!r}{hint}; it is ignored")
    return retired + lines


def redact_setting(config: Mapping[str, Any], config_source: str = CONFIG_FILE) -> bool:
    """`redact = true|false` from config.toml: whether secrets are redacted before they
    are stored (on unless the file turns it off)."""
    value = config.get("redact", True)
    if not isinstance(value, bool):
        raise ConfigError(f"{config_source}: redact must be true or false, got {value!r}")
    return value
