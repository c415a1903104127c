"""The model settings and `[prices]` checked by values/shapes.py (issue 43, item 4),
as config.toml's other tables are: each wrong value is one line naming the setting,
where it came from and what it must be (the API key's value never shown)."""

import tomllib

import pytest

from gitsessions.services.settings.config import resolve_model_settings
from gitsessions.services.settings.config_file import ConfigError


def _refused(env: dict[str, str] | None = None, toml: str = "") -> str:
    with pytest.raises(ConfigError) as raised:
        resolve_model_settings({}, env or {}, tomllib.loads(toml))
    return str(raised.value)


@pytest.mark.parametrize(
    ("env", "said"),
    [
        ({"GITSESSIONS_TIMEOUT": "soon"},
         "timeout 'soon' from env GITSESSIONS_TIMEOUT must be a positive number of seconds"),
        ({"GITSESSIONS_TIMEOUT": "-1"},
         "timeout '-1' from env GITSESSIONS_TIMEOUT must be a positive number of seconds"),
        ({"GITSESSIONS_SUMMARY_TIMEOUT": "nan"}, "summary_timeout 'nan' from env "
         "GITSESSIONS_SUMMARY_TIMEOUT must be a positive number of seconds"),
        ({"GITSESSIONS_MAX_CONTEXT_TOKENS": "1.5"}, "max_context_tokens '1.5' from env "
         "GITSESSIONS_MAX_CONTEXT_TOKENS must be a positive integer"),
        ({"GITSESSIONS_LEDGER_SHARE": "1.5"},
         "ledger_share '1.5' from env GITSESSIONS_LEDGER_SHARE must be a fraction in (0, 1]"),
        ({"GITSESSIONS_USER_WORDS_SHARE": "0"}, "user_words_share '0' from env "
         "GITSESSIONS_USER_WORDS_SHARE must be a fraction in (0, 1]"),
        ({"GITSESSIONS_COMPACT_TARGET": "0.9"}, "compact_target '0.9' from env "
         "GITSESSIONS_COMPACT_TARGET must be a fraction in (0, 0.8] (compaction starts at "
         "0.8 of max_context_tokens)"),
        ({"GITSESSIONS_EXEC_SUMMARY": "later"}, "exec_summary 'later' from env "
         "GITSESSIONS_EXEC_SUMMARY must be one of background, wait, off"),
    ],
)  # fmt: skip
def test_a_setting_that_does_not_fit_is_one_line(env, said):
    assert _refused(env) == said


@pytest.mark.parametrize(
    ("toml", "said"),
    [
        ('model = " "', "model from config.toml must be a non-empty string"),
        ("model = 5", "model from config.toml must be a non-empty string"),
        ("timeout = true", "timeout True from config.toml must be a positive number of seconds"),
        ("max_context_tokens = inf",
         "max_context_tokens inf from config.toml must be a positive integer"),
        ("prices = 1", "config.toml: [prices] must be a table of per-model tables"),
        ('[prices]\nm = 1', 'config.toml: [prices."m"] must be a table'),
        ('[prices.m]\nprompt = 1',
         'config.toml: [prices."m"] completion must be a number (USD per 1M tokens, >= 0)'),
        ('[prices.m]\nprompt = "1"\ncompletion = 2',
         'config.toml: [prices."m"] prompt must be a number (USD per 1M tokens, >= 0)'),
        ('[prices.m]\nprompt = 1\ncompletion = -2',
         'config.toml: [prices."m"] completion must be a number (USD per 1M tokens, >= 0)'),
    ],
)  # fmt: skip
def test_a_config_value_that_does_not_fit_is_one_line(toml, said):
    assert _refused(toml=toml) == said


def test_the_api_key_is_never_shown():
    said = _refused(toml='api_key = ["sk-secret"]')
    assert said == "api_key from config.toml must be a non-empty string"


def test_numbers_written_as_text_or_with_a_point_are_those_numbers():
    settings = resolve_model_settings(
        {"timeout": 30},
        {"GITSESSIONS_MAX_CONTEXT_TOKENS": "8000", "GITSESSIONS_LEDGER_SHARE": "0.25"},
        tomllib.loads(
            'summary_timeout = "90"\nuser_words_share = 1\n'
            "[prices.m]\nprompt = 1\ncompletion = 2.5\nnote = 'kept out'\n"
        ),
    )
    assert settings.max_context_tokens == 8000 and isinstance(settings.max_context_tokens, int)
    assert (settings.timeout, settings.summary_timeout) == (30.0, 90.0)
    assert isinstance(settings.timeout, float) and isinstance(settings.user_words_share, float)
    assert (settings.ledger_share, settings.user_words_share) == (0.25, 1)
    assert settings.prices == {"m": {"prompt": 1.0, "completion": 2.5}}
    assert settings.sources["timeout"] == "flag --timeout"
