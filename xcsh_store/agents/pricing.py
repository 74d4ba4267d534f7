"""Estimated costs of Claude and OpenAI models: Claude Code and Codex write tokens, never costs.

Source: the vendors' published API list prices per million tokens, as listed on
https://www.anthropic.com/pricing (Claude API: input, output, 5-minute cache write, cache read)
and https://openai.com/api/pricing (input, cached input, output), November 2025. Written down
from those pages then, not fetched at run time; a model not listed here gets no cost (NULL),
which ``usage`` reports as unpriced instead of counting it as $0.
"""

from __future__ import annotations

import functools
import re
from typing import NamedTuple

PRICES_AS_OF = "2025-11"


class Price(NamedTuple):
    """US dollars per million tokens."""

    input: float
    output: float
    cache_read: float
    cache_write: float


# By model name. A dated name ("claude-sonnet-4-20250514", "gpt-4.1-2025-04-14") is priced as
# its model; any other name is not guessed at (a newer minor version may cost something else).
PRICES: dict[str, Price] = {
    "claude-opus-4-5": Price(5.0, 25.0, 0.50, 6.25),
    "claude-opus-4-1": Price(15.0, 75.0, 1.50, 18.75),
    "claude-opus-4": Price(15.0, 75.0, 1.50, 18.75),
    "claude-3-opus": Price(15.0, 75.0, 1.50, 18.75),
    "claude-sonnet-4-5": Price(3.0, 15.0, 0.30, 3.75),
    "claude-sonnet-4": Price(3.0, 15.0, 0.30, 3.75),
    "claude-3-7-sonnet": Price(3.0, 15.0, 0.30, 3.75),
    "claude-3-5-sonnet": Price(3.0, 15.0, 0.30, 3.75),
    "claude-haiku-4-5": Price(1.0, 5.0, 0.10, 1.25),
    "claude-3-5-haiku": Price(0.80, 4.0, 0.08, 1.0),
    "claude-3-haiku": Price(0.25, 1.25, 0.03, 0.30),
    "gpt-5": Price(1.25, 10.0, 0.125, 0.0),
    "gpt-5-codex": Price(1.25, 10.0, 0.125, 0.0),
    "gpt-5.1": Price(1.25, 10.0, 0.125, 0.0),
    "gpt-5.1-codex": Price(1.25, 10.0, 0.125, 0.0),
    "gpt-5.1-codex-mini": Price(0.25, 2.0, 0.025, 0.0),
    "gpt-5-mini": Price(0.25, 2.0, 0.025, 0.0),
    "gpt-5-nano": Price(0.05, 0.40, 0.005, 0.0),
    "gpt-4.1": Price(2.0, 8.0, 0.50, 0.0),
    "gpt-4.1-mini": Price(0.40, 1.60, 0.10, 0.0),
    "gpt-4o": Price(2.50, 10.0, 1.25, 0.0),
    "gpt-4o-mini": Price(0.15, 0.60, 0.075, 0.0),
    "o3": Price(2.0, 8.0, 0.50, 0.0),
    "o4-mini": Price(1.10, 4.40, 0.275, 0.0),
}
_DATE_SUFFIX = re.compile(r"-(?:\d{8}|\d{4}-\d{2}-\d{2})$")


@functools.lru_cache(maxsize=256)  # a file names a few models, on thousands of lines
def price_of(model: str | None) -> Price | None:
    """The list price of a model, or None when the table does not know it."""
    if not model:
        return None
    name = _DATE_SUFFIX.sub("", model.rpartition("/")[2].lower())
    return PRICES.get(name)


def estimated_cost(
    model: str | None, input: int, output: int, cache_read: int, cache_write: int
) -> float | None:
    """Dollars for these tokens at the model's list price (``input`` without the cached part);
    None for a model without a price."""
    price = price_of(model)
    if price is None:
        return None
    return (
        input * price.input
        + output * price.output
        + cache_read * price.cache_read
        + cache_write * price.cache_write
    ) / 1_000_000
