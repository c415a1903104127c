"""Estimated request cost in USD from token counts and per-model prices.

Invariant: prices are USD per 1M tokens, looked up without any network access — first in
the caller's table (from config.toml `[prices."<model>"]`), then in a small built-in
table of well-known OpenAI models. A model with no known price costs 0.0 and is reported
as unknown, so the caller can say "cost unknown" instead of showing a false zero.
"""

import re
from collections.abc import Mapping

# USD per 1M tokens, list prices; config.toml overrides any of them.
BUILTIN_PRICES: dict[str, dict[str, float]] = {
    "gpt-4o": {"prompt": 2.50, "completion": 10.00},
    "gpt-4o-mini": {"prompt": 0.15, "completion": 0.60},
    "gpt-4.1": {"prompt": 2.00, "completion": 8.00},
    "gpt-4.1-mini": {"prompt": 0.40, "completion": 1.60},
    "gpt-4.1-nano": {"prompt": 0.10, "completion": 0.40},
}

_DATE_SUFFIX = re.compile(r"-\d{4}-\d{2}-\d{2}$")  # "gpt-4o-2024-08-06" -> "gpt-4o"

Prices = Mapping[str, Mapping[str, float]]


def price_of(model: str, prices: Prices | None = None) -> Mapping[str, float] | None:
    """The {"prompt", "completion"} price of `model`, or None when unknown."""
    for name in (model, _DATE_SUFFIX.sub("", model)):
        for table in (prices or {}, BUILTIN_PRICES):
            if name in table:
                return table[name]
    return None


def estimate_cost(
    model: str, prompt_tokens: int, completion_tokens: int, prices: Prices | None = None
) -> tuple[float, bool]:
    """(cost in USD, whether the model's price was known)."""
    price = price_of(model, prices)
    if price is None:
        return 0.0, False
    cost = prompt_tokens * price.get("prompt", 0.0) + completion_tokens * price.get(
        "completion", 0.0
    )
    return cost / 1_000_000, True
