"""Settings resolution: pure functions of (flags, environment, config.toml) for the model,
the `[shell]` and `[snapshots]` tables (config_file.py reads the file); the environment
is handed in, never read here.

Invariants:
- Model settings: flag, environment, config.toml, default (a resumed session's recorded
  ones under flags and environment); `sources` names where each came from, for error
  lines; the API key's value never appears in one. Each resolved value is checked
  against its shape (`SETTING_SHAPES`, `PRICES`, values/shapes.py), text read as a number.
- `[shell]`: flag, table, default; no environment variable (what the shell may reach
  must not change with an inherited variable). `[snapshots]`: `--no-snapshots`, table,
  defaults (on, 10 MiB a file, 1 GiB a project).
- An unknown key in `[shell]` or `[snapshots]` is an error: a misspelt
  `sandbox_network` must not silently weaken the sandbox (`config_table`, values/shapes.py).
"""

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple
from urllib.parse import urlsplit

from gitsessions.services.settings.config_file import CONFIG_FILE, ConfigError
from gitsessions.services.settings.config_file import KNOWN_KEYS as KNOWN_KEYS  # beside _LOOKUP
from gitsessions.values.shapes import Misfit, check, described, types_of

DEFAULT_BASE_URL = "http://localhost:11434/v1"  # Ollama's OpenAI-compatible endpoint
DEFAULT_MODEL = "gemma4"
DEFAULT_API_KEY = "not-needed"  # local servers ignore the key, the openai client wants one
DEFAULT_TIMEOUT = 120.0
# a compaction's summary: a slow local model reads the whole older context (14-141 s on
# 2 cores for a 0.5B model at 8,000 tokens), so it gets a deadline of its own
DEFAULT_SUMMARY_TIMEOUT = 600.0
DEFAULT_MAX_CONTEXT_TOKENS = 24_000
DEFAULT_LEDGER_SHARE = 0.1  # of max_context_tokens, for a continuation note's ledger
DEFAULT_USER_WORDS_SHARE = 0.1  # of max_context_tokens, for the note's quotes of the user
DEFAULT_COMPACT_TARGET = 0.5  # of max_context_tokens: where a compaction aims to end
# when a fresh exec's list summary is asked: by a process of its own after exec exits,
# by exec after it printed its reply, or never
EXEC_SUMMARY = ("background", "wait", "off")

# setting -> (CLI flag or None, environment variables in priority order)
_LOOKUP: dict[str, tuple[str | None, tuple[str, ...]]] = {
    "model": ("--model", ("GITSESSIONS_MODEL",)),
    "base_url": ("--base-url", ("GITSESSIONS_BASE_URL", "OPENAI_BASE_URL")),
    "api_key": (None, ("OPENAI_API_KEY",)),  # never a flag: it would show in `ps`
    "summary_model": ("--summary-model", ("GITSESSIONS_SUMMARY_MODEL",)),
    "timeout": ("--timeout", ("GITSESSIONS_TIMEOUT",)),
    "summary_timeout": (None, ("GITSESSIONS_SUMMARY_TIMEOUT",)),
    "max_context_tokens": ("--max-context-tokens", ("GITSESSIONS_MAX_CONTEXT_TOKENS",)),
    "ledger_share": (None, ("GITSESSIONS_LEDGER_SHARE",)),
    "user_words_share": (None, ("GITSESSIONS_USER_WORDS_SHARE",)),
    "compact_target": ("--target", ("GITSESSIONS_COMPACT_TARGET",)),
    "exec_summary": (None, ("GITSESSIONS_EXEC_SUMMARY",)),
}


# what a session records in its header (`settings`) and a resume reuses
SESSION_KEYS = ("model", "base_url", "max_context_tokens")


@dataclass(frozen=True)
class ModelSettings:
    """Everything needed to talk to a model server, and where each value came from."""

    model: str
    base_url: str
    api_key: str = field(repr=False)  # never shown, whatever prints these settings
    summary_model: str
    timeout: float = DEFAULT_TIMEOUT
    summary_timeout: float = DEFAULT_SUMMARY_TIMEOUT
    max_context_tokens: int = DEFAULT_MAX_CONTEXT_TOKENS
    ledger_share: float = DEFAULT_LEDGER_SHARE
    user_words_share: float = DEFAULT_USER_WORDS_SHARE
    compact_target: float = DEFAULT_COMPACT_TARGET
    exec_summary: str = EXEC_SUMMARY[0]
    prices: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    sources: Mapping[str, str] = field(default_factory=dict)

    @property
    def summary_seconds(self) -> float:
        """The deadline of a compaction's summary request: `summary_timeout`, never
        shorter than a turn's `timeout`."""
        return max(self.timeout, self.summary_timeout)


def table_shape(**keys: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON Schema of a config.toml table holding `keys` and no other: each key's
    schema says in its `description` what its value must be (`true or false`); a key
    without a `type` is checked by its reader."""
    return {"type": "object", "properties": keys, "additionalProperties": False}


def config_table(
    config: Mapping[str, Any], name: str, shape: Mapping[str, Any], source: str = CONFIG_FILE
) -> tuple[Mapping[str, Any], str]:
    """The table `[name]` of config.toml (empty when absent), checked against `shape`
    (`table_shape`: values/shapes.py), and how errors name it (`config.toml [name]`);
    `ConfigError` when it is not a table, holds a key `shape` does not list, or a value
    that does not fit its key's schema."""
    table = config.get(name, {})
    where = f"{source} [{name}]"
    if not isinstance(table, Mapping):
        raise ConfigError(f"{source}: [{name}] must be a table")
    keys: Mapping[str, Any] = shape["properties"]
    try:
        checked: dict[str, Any] = check(dict(table), shape)
    except Misfit as misfit:
        if misfit.kind == "unknown":
            known = ", ".join(keys)
            raise ConfigError(
                f"{where}: unknown key {misfit.value[0]!r}; known keys are {known}"
            ) from None
        key = str(misfit.path[0])
        raise ConfigError(f"{where}: {key} must be {keys[key]['description']}") from None
    return checked, where


def session_settings(settings: ModelSettings) -> dict[str, Any]:
    """What a session records in its header's `settings`."""
    return {name: getattr(settings, name) for name in SESSION_KEYS}


def with_session_settings(
    settings: ModelSettings, recorded: Any, session_label: str, trusted: Collection[str] = ()
) -> tuple[ModelSettings, str | None]:
    """The settings a resumed session runs with: those it recorded, except where a flag
    or the environment gives one (config.toml and the defaults do not override them),
    and a note, or None.

    A header may come from anywhere (a pull), so its endpoint is used only when it is
    the one these settings name (a flag, the environment, config.toml, the default) or
    one of `trusted` (the endpoints this home ran with: store/here.py). Otherwise none
    of what it recorded is used (its model and budget were another server's) and the
    note says so; nothing is sent to the recorded endpoint."""
    if not isinstance(recorded, Mapping):
        return settings, None
    where = f"session {session_label}"
    endpoint = recorded.get("base_url")
    if endpoint is not None and not sources_say(settings, "base_url", ("flag", "env")):
        try:
            endpoint = _check_url(endpoint, where)
        except ConfigError:  # not a URL at all: never used, only named (cut) in the note
            endpoint = repr(endpoint)[:200]
        if endpoint != settings.base_url and endpoint not in trusted:
            shown = endpoint[:200]
            return settings, (
                f"note: session {session_label} was made against another model server "
                f"({shown}); it runs with this home's, {settings.base_url} "
                f"(from {settings.sources.get('base_url', 'settings')})"
            )
    sources = dict(settings.sources)
    changes: dict[str, Any] = {}
    for name in SESSION_KEYS:
        value = recorded.get(name)
        if value is None or sources.get(name, "").startswith(("flag", "env")):
            continue
        if name == "base_url":
            value = _check_url(value, where)
        else:
            value = _setting(name, value, where)
            value = value.strip() if name == "model" else value
        changes[name], sources[name] = value, where
    if "model" in changes and sources.get("summary_model", "").startswith("same as model"):
        changes["summary_model"] = changes["model"]
        sources["summary_model"] = f"same as model ({where})"
    return (replace(settings, **changes, sources=sources) if changes else settings), None


def sources_say(settings: ModelSettings, name: str, kinds: tuple[str, ...]) -> bool:
    """Whether setting `name` came from one of `kinds` ("flag", "env", ...)."""
    return settings.sources.get(name, "").startswith(kinds)


def resolve_model_settings(
    flags: Mapping[str, Any],
    env: Mapping[str, str],
    config: Mapping[str, Any],
    *,
    config_source: str = CONFIG_FILE,
) -> ModelSettings:
    """Resolve model settings by precedence flag > env > config > default; validate them.

    `flags` holds CLI option values by setting name (None means not given; `api_key` is
    ignored there). `config_source` is how sources name the config file.
    """
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for name, (flag, env_names) in _LOOKUP.items():
        found = _lookup(name, flag, env_names, flags, env, config, config_source)
        if found is not None:
            values[name], sources[name] = found

    defaults = {
        "model": DEFAULT_MODEL,
        "base_url": DEFAULT_BASE_URL,
        "api_key": DEFAULT_API_KEY,
        "timeout": DEFAULT_TIMEOUT,
        "summary_timeout": DEFAULT_SUMMARY_TIMEOUT,
        "max_context_tokens": DEFAULT_MAX_CONTEXT_TOKENS,
        "ledger_share": DEFAULT_LEDGER_SHARE,
        "user_words_share": DEFAULT_USER_WORDS_SHARE,
        "compact_target": DEFAULT_COMPACT_TARGET,
        "exec_summary": EXEC_SUMMARY[0],
    }
    for name, default in defaults.items():
        if name not in values:
            values[name], sources[name] = default, "default"
    if "summary_model" not in values:
        values["summary_model"] = values["model"]
        sources["summary_model"] = f"same as model ({sources['model']})"

    for name in ("model", "summary_model", "api_key"):
        _setting(name, values[name], sources[name])
    return ModelSettings(
        model=values["model"].strip(),
        base_url=_check_url(values["base_url"], sources["base_url"]),
        api_key=values["api_key"],
        summary_model=values["summary_model"].strip(),
        **{name: _setting(name, values[name], sources[name]) for name in CHECKED_LATER},
        prices=_check_prices(config.get("prices", {}), config_source),
        sources=sources,
    )


def _lookup(
    name: str,
    flag: str | None,
    env_names: tuple[str, ...],
    flags: Mapping[str, Any],
    env: Mapping[str, str],
    config: Mapping[str, Any],
    config_source: str,
) -> tuple[Any, str] | None:
    if flag is not None and flags.get(name) is not None:
        return flags[name], f"flag {flag}"
    for env_name in env_names:
        if env.get(env_name, "").strip():
            return env[env_name].strip(), f"env {env_name}"
    if config.get(name) is not None:
        return config[name], config_source
    return None


TEXT = described({"type": "string", "pattern": r"\S"}, "must be a non-empty string")
SECONDS = described(
    {"type": "number", "exclusiveMinimum": 0}, "must be a positive number of seconds"
)
FRACTION = described(
    {"type": "number", "exclusiveMinimum": 0, "maximum": 1}, "must be a fraction in (0, 1]"
)
# each model setting's shape, once resolved (its value is never shown when it is text:
# the API key's must not be)
SETTING_SHAPES: dict[str, dict[str, Any]] = {
    "model": TEXT,
    "summary_model": TEXT,
    "api_key": TEXT,
    "timeout": SECONDS,
    "summary_timeout": SECONDS,
    "max_context_tokens": described(
        {"type": "integer", "exclusiveMinimum": 0}, "must be a positive integer"
    ),
    "ledger_share": FRACTION,
    "user_words_share": FRACTION,
    "compact_target": described(
        {"type": "number", "exclusiveMinimum": 0, "maximum": 0.8},
        "must be a fraction in (0, 0.8] (compaction starts at 0.8 of max_context_tokens)",
    ),
    "exec_summary": described(
        {"enum": list(EXEC_SUMMARY)}, f"must be one of {', '.join(EXEC_SUMMARY)}"
    ),
}
TEXTS = ("model", "summary_model", "api_key")  # checked first, with the URL
CHECKED_LATER = tuple(name for name in SETTING_SHAPES if name not in TEXTS)  # in this order


def _setting(name: str, value: Any, source: str) -> Any:
    """Setting `name`'s `value` as it fits its shape (a number written as text, as the
    environment holds it, read as that number; a `number` as a float, an `integer` as
    an int), or the `ConfigError` saying what it must be and where it came from."""
    shape = SETTING_SHAPES[name]
    kinds = types_of(shape)
    numeric = "number" in kinds or "integer" in kinds
    try:
        fitting = check(_read_number(value) if numeric else value, shape)
    except Misfit:
        shown = "" if "string" in kinds else f" {value!r}"
        raise ConfigError(f"{name}{shown} from {source} {shape['description']}") from None
    return float(fitting) if "number" in kinds else fitting  # seconds, shares: floats


def _read_number(value: Any) -> Any:
    """`value`, a number when it is the text of one (as flags and the environment give
    it)."""
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    return value


def _check_url(value: Any, source: str) -> str:
    text = value.strip() if isinstance(value, str) else value
    try:
        parts = urlsplit(text) if isinstance(text, str) else None
        _ = parts.port if parts is not None else None  # `[::1`, a port out of range: unread
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(
            f"base_url {value!r} from {source} is not an http(s) URL;"
            f" expected something like {DEFAULT_BASE_URL}"
        )
    return text.rstrip("/")


PRICE = {"type": "number", "minimum": 0}
PRICES = {
    "type": "object",
    "additionalProperties": {
        "type": "object",
        "properties": {"prompt": PRICE, "completion": PRICE},
        "required": ["prompt", "completion"],
    },
}


def _check_prices(table: Any, source: str) -> dict[str, dict[str, float]]:
    """`[prices]`: a table of per-model tables of `prompt` and `completion` prices."""
    try:
        prices: dict[str, Any] = check(table, PRICES)
    except Misfit as misfit:
        if not misfit.path:
            raise ConfigError(f"{source}: [prices] must be a table of per-model tables") from None
        where = f'{source}: [prices."{misfit.path[0]}"]'
        if len(misfit.path) == 1 and misfit.kind != "missing":
            raise ConfigError(f"{where} must be a table") from None
        key = misfit.value if misfit.kind == "missing" else misfit.path[1]
        raise ConfigError(f"{where} {key} must be a number (USD per 1M tokens, >= 0)") from None
    return {
        model: {key: float(entry[key]) for key in ("prompt", "completion")}
        for model, entry in prices.items()
    }


# -- [shell] ----------------------------------------------------------------------------

SHELL_TABLE = "shell"
# checked with the flags, once merged (`resolve_shell_settings`)
SHELL_SHAPE = table_shape(env_keep={}, sandbox={}, sandbox_network={}, sandbox_allow_git={})
DEFAULT_SANDBOX = "none"
# The run_shell sandbox modes (services/tools/sandbox.py builds workspace-write); kept here
# so resolving the settings imports none of the tools (`chat` resolves them before its prompt).
SANDBOX_MODES = ("none", "workspace-write")


@dataclass(frozen=True)
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
    table, where = config_table(config, SHELL_TABLE, SHELL_SHAPE, config_source)
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
    if values["sandbox"] not in SANDBOX_MODES:
        raise ConfigError(
            f"sandbox {values['sandbox']!r} from {sources['sandbox']} must be one of: "
            + ", ".join(SANDBOX_MODES)
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


# -- [snapshots] ------------------------------------------------------------------------

SNAPSHOT_TABLE = "snapshots"
DEFAULT_MAX_FILE_BYTES = 10 * 1024 * 1024  # a file over 10 MiB is left out of a snapshot
DEFAULT_BUDGET_BYTES = 1 << 30  # a project's snapshots past 1 GiB: one warning a process


BYTES = {"type": "integer", "minimum": 0, "description": "a whole number of bytes >= 0"}
SNAPSHOT_SHAPE = table_shape(
    enabled={"type": "boolean", "description": "true or false"},
    max_file_bytes=BYTES,
    budget_bytes=BYTES,
)


class SnapshotSettings(NamedTuple):
    enabled: bool = True
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    budget_bytes: int = DEFAULT_BUDGET_BYTES


def resolve_snapshot_settings(
    no_snapshots: bool, config: Mapping[str, Any], *, config_source: str = CONFIG_FILE
) -> SnapshotSettings:
    table, _where = config_table(config, SNAPSHOT_TABLE, SNAPSHOT_SHAPE, config_source)
    enabled = table.get("enabled", True)
    limit = table.get("max_file_bytes", DEFAULT_MAX_FILE_BYTES)
    budget = table.get("budget_bytes", DEFAULT_BUDGET_BYTES)
    return SnapshotSettings(
        enabled=enabled and not no_snapshots, max_file_bytes=limit, budget_bytes=budget
    )
