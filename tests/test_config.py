"""Settings resolution: precedence flag > env > config.toml > default, sources, validation,
and the config file loader. Never reads the real environment or home directory."""

from pathlib import Path

import pytest

from gitsessions.services.model.pricing import estimate_cost
from gitsessions.services.settings.config import (
    DEFAULT_BASE_URL,
    DEFAULT_MODEL,
    resolve_model_settings,
)
from gitsessions.services.settings.config_file import (
    ConfigError,
    config_path,
    load_config,
    unknown_keys,
)


def test_defaults_target_a_local_ollama() -> None:
    settings = resolve_model_settings({}, {}, {})
    assert settings.base_url == DEFAULT_BASE_URL == "http://localhost:11434/v1"
    assert settings.model == DEFAULT_MODEL == "gemma4"
    assert settings.summary_model == "gemma4"
    assert settings.api_key == "not-needed"
    assert settings.timeout == 120.0
    assert settings.sources["base_url"] == "default"
    assert settings.sources["summary_model"] == "same as model (default)"


def test_precedence_flag_over_env_over_config() -> None:
    config = {
        "model": "cfg-model",
        "base_url": "http://cfg:1/v1",
        "api_key": "cfg-key",
        "summary_model": "cfg-small",
        "timeout": 30,
    }
    env = {
        "GITSESSIONS_MODEL": "env-model",
        "OPENAI_BASE_URL": "http://openai-env:2/v1",
        "OPENAI_API_KEY": "env-key",
    }
    flags = {"model": "flag-model", "base_url": None, "api_key": "ignored-flag-key"}
    settings = resolve_model_settings(flags, env, config)
    assert settings.model == "flag-model"
    assert settings.sources["model"] == "flag --model"
    assert settings.base_url == "http://openai-env:2/v1"
    assert settings.sources["base_url"] == "env OPENAI_BASE_URL"
    assert settings.api_key == "env-key"
    assert settings.sources["api_key"] == "env OPENAI_API_KEY"
    assert settings.summary_model == "cfg-small"
    assert settings.sources["summary_model"] == "config.toml"
    assert settings.timeout == 30.0
    assert settings.sources["timeout"] == "config.toml"


def test_gitsessions_base_url_beats_openai_base_url() -> None:
    env = {"GITSESSIONS_BASE_URL": "http://mine:1/v1/", "OPENAI_BASE_URL": "http://theirs/v1"}
    settings = resolve_model_settings({}, env, {})
    assert settings.base_url == "http://mine:1/v1"
    assert settings.sources["base_url"] == "env GITSESSIONS_BASE_URL"


def test_empty_env_values_count_as_unset() -> None:
    settings = resolve_model_settings({}, {"GITSESSIONS_MODEL": " "}, {"model": "cfg"})
    assert (settings.model, settings.sources["model"]) == ("cfg", "config.toml")


def test_summary_model_follows_the_resolved_model() -> None:
    settings = resolve_model_settings({}, {"GITSESSIONS_MODEL": "qwen3"}, {})
    assert settings.summary_model == "qwen3"
    assert settings.sources["summary_model"] == "same as model (env GITSESSIONS_MODEL)"
    flagged = resolve_model_settings({"summary_model": "tiny"}, {}, {})
    assert flagged.summary_model == "tiny"
    assert flagged.sources["summary_model"] == "flag --summary-model"


@pytest.mark.parametrize("url", ["localhost:11434", "ftp://host/v1", "http://", "", 42])
def test_base_url_must_be_http(url: object) -> None:
    with pytest.raises(ConfigError, match="base_url") as caught:
        resolve_model_settings({}, {}, {"base_url": url})
    assert "\n" not in str(caught.value)


def test_bad_env_url_names_the_variable() -> None:
    with pytest.raises(ConfigError, match="env GITSESSIONS_BASE_URL"):
        resolve_model_settings({}, {"GITSESSIONS_BASE_URL": "nope"}, {})


@pytest.mark.parametrize("timeout", [0, -1, "soon", True, float("inf")])
def test_timeout_must_be_positive(timeout: object) -> None:
    with pytest.raises(ConfigError, match="timeout"):
        resolve_model_settings({}, {}, {"timeout": timeout})


def test_timeout_from_env_is_parsed() -> None:
    settings = resolve_model_settings({}, {"GITSESSIONS_TIMEOUT": "2.5"}, {})
    assert settings.timeout == 2.5


def test_a_summary_has_a_deadline_of_its_own_from_env_or_config() -> None:
    default = resolve_model_settings({}, {}, {})
    assert default.summary_timeout == 600.0 and default.summary_seconds == 600.0
    assert default.sources["summary_timeout"] == "default"
    configured = resolve_model_settings({}, {}, {"summary_timeout": 900})
    assert configured.summary_seconds == 900.0
    assert configured.sources["summary_timeout"] == "config.toml"
    env = {"GITSESSIONS_SUMMARY_TIMEOUT": "1500"}
    from_env = resolve_model_settings({}, env, {"summary_timeout": 900})
    assert from_env.summary_seconds == 1500.0
    assert from_env.sources["summary_timeout"] == "env GITSESSIONS_SUMMARY_TIMEOUT"
    # never shorter than a turn's
    longer_turns = resolve_model_settings({}, {"GITSESSIONS_TIMEOUT": "2000"}, {})
    assert longer_turns.summary_seconds == 2000.0
    with pytest.raises(ConfigError, match=r"summary_timeout 'soon' from config\.toml"):
        resolve_model_settings({}, {}, {"summary_timeout": "soon"})


def test_user_words_share() -> None:
    assert resolve_model_settings({}, {}, {}).user_words_share == 0.1
    settings = resolve_model_settings({}, {}, {"user_words_share": 0.2})
    assert settings.user_words_share == 0.2
    assert settings.sources["user_words_share"] == "config.toml"
    env = {"GITSESSIONS_USER_WORDS_SHARE": "0.05"}
    assert resolve_model_settings({}, env, {"user_words_share": 0.2}).user_words_share == 0.05
    with pytest.raises(ConfigError, match=r"user_words_share .* must be a fraction"):
        resolve_model_settings({}, {}, {"user_words_share": 2})


def test_max_context_tokens() -> None:
    assert resolve_model_settings({}, {}, {"max_context_tokens": 8192}).max_context_tokens == 8192
    with pytest.raises(ConfigError, match="max_context_tokens"):
        resolve_model_settings({}, {}, {"max_context_tokens": 1.5})


def test_ledger_share() -> None:
    assert resolve_model_settings({}, {}, {}).ledger_share == 0.1
    settings = resolve_model_settings({}, {}, {"ledger_share": 0.25})
    assert (settings.ledger_share, settings.sources["ledger_share"]) == (0.25, "config.toml")
    env = {"GITSESSIONS_LEDGER_SHARE": "0.05"}
    assert resolve_model_settings({}, env, {"ledger_share": 0.25}).ledger_share == 0.05
    for bad in (0, 1.5, "lots", True):
        with pytest.raises(ConfigError, match=r"ledger_share .* must be a fraction"):
            resolve_model_settings({}, {}, {"ledger_share": bad})


def test_api_key_value_never_appears_in_errors() -> None:
    with pytest.raises(ConfigError) as caught:
        resolve_model_settings({}, {}, {"api_key": 12345})
    assert "12345" not in str(caught.value)


def test_prices_from_config_feed_the_cost_estimate(tmp_path: Path) -> None:
    path = config_path(tmp_path)
    path.write_text('model = "gpt-4o"\n[prices."my-model"]\nprompt = 1.0\ncompletion = 2\n')
    settings = resolve_model_settings({}, {}, load_config(path))
    assert settings.prices == {"my-model": {"prompt": 1.0, "completion": 2.0}}
    assert estimate_cost("my-model", 1_000_000, 500_000, settings.prices) == (2.0, True)
    assert estimate_cost("gpt-4o-2024-08-06", 1_000_000, 0, settings.prices) == (2.5, True)
    assert estimate_cost("unknown", 1000, 1000, settings.prices) == (0.0, False)
    override = {"gpt-4o": {"prompt": 0.0, "completion": 0.0}}
    assert estimate_cost("gpt-4o", 1000, 1000, override) == (0.0, True)


def test_bad_prices_are_rejected() -> None:
    with pytest.raises(ConfigError, match=r'prices\."m"'):
        resolve_model_settings({}, {}, {"prices": {"m": {"prompt": "cheap", "completion": 1}}})


def test_missing_config_file_is_empty(tmp_path: Path) -> None:
    assert load_config(tmp_path / "config.toml") == {}


def test_malformed_toml_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('model = "a"\nbase_url = \n')
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    message = str(caught.value)
    assert str(path) in message
    assert "line 2" in message
    assert "\n" not in message


def test_config_file_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('base_url = "https://api.example.com/v1"\ntimeout = 5\n')
    settings = resolve_model_settings({}, {}, load_config(path), config_source=str(path))
    assert settings.base_url == "https://api.example.com/v1"
    assert settings.sources["base_url"] == str(path)


def test_integer_too_long_for_python_is_a_config_error(tmp_path: Path) -> None:
    path = config_path(tmp_path)
    path.write_text("timeout = " + "1" * 5000 + "\n")
    with pytest.raises(ConfigError, match=r"malformed config file .*4300 digits"):
        load_config(path)


def test_an_old_config_naming_a_client_still_works_and_says_the_key_is_retired() -> None:
    """`client` chose between two model clients; the openai SDK is the only one now."""
    config = {"client": "builtin", "model": "m"}
    settings = resolve_model_settings({}, {"GITSESSIONS_CLIENT": "builtin"}, config)
    assert settings.model == "m" and not hasattr(settings, "client")
    assert unknown_keys(config) == [
        "key 'client' is no longer used (the openai SDK is the only model client); it is ignored"
    ]
    assert unknown_keys({"client": "openai", "modle": "m"}) == [
        "key 'client' is no longer used (the openai SDK is the only model client); it is ignored",
        "unknown key 'modle' (did you mean 'model'?); it is ignored",
    ]


def test_the_api_key_never_shows_in_the_settings_repr() -> None:
    settings = resolve_model_settings({}, {"OPENAI_API_KEY": "sk-do-not-print"}, {})
    assert settings.api_key == "sk-do-not-print"
    assert "sk-do-not-print" not in repr(settings) and "model=" in repr(settings)
