"""What a model's price is and what one request costs at it: rates per million tokens of each
kind, the long-context tier, and the arithmetic (the same whichever source the price came from).

The long-context rule is the vendors': a request whose input (uncached input, cache reads and
cache writes together) is larger than the tier's threshold is billed at the tier's rates for
all its tokens, output included, not only for the part above the threshold. Anthropic's pricing
page (https://platform.claude.com/docs/en/about-claude/pricing, "Long context pricing"): "requests
that exceed 200K input tokens are automatically charged at premium long context rates", the
threshold "based solely on input tokens (including cache reads/writes)", the cache multipliers
applied on top; OpenAI's (https://openai.com/api/pricing, gpt-5.4 and later) bills a request
with more than 272K input tokens at its long-context rates in the same way. genai-prices encodes
it so (its ``TieredPrices``: "crossing a tier applies that rate to ALL tokens").
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Rate:
    """Dollars per million tokens of one kind: ``base``, or a tier's rate when the request's
    input is above the tier's start (``tiers``: (start, rate), ascending)."""

    base: float
    tiers: tuple[tuple[int, float], ...] = ()

    def at(self, request_input: int) -> float:
        rate = self.base
        for start, tier_rate in self.tiers:
            if request_input > start:
                rate = tier_rate
        return rate


@dataclass(frozen=True, slots=True)
class Rates:
    """The rates of each kind of token; a kind without its own rate is billed as the vendors
    do (and genai-prices computes): cache reads and writes at the input rate, 1-hour cache
    writes at the cache write rate."""

    input: Rate | None = None
    output: Rate | None = None
    cache_read: Rate | None = None
    cache_write: Rate | None = None
    cache_write_1h: Rate | None = None

    def cost(
        self, input: int, output: int, cache_read: int, cache_write: int, cache_write_1h: int
    ) -> float:
        """Dollars for one request: ``input`` uncached, ``cache_write`` every cache write (of
        which ``cache_write_1h`` went to the 1-hour cache)."""
        request_input = input + cache_read + cache_write
        input_rate = _at(self.input, request_input, 0.0)
        write_rate = _at(self.cache_write, request_input, input_rate)
        return (
            input * input_rate
            + output * _at(self.output, request_input, 0.0)
            + cache_read * _at(self.cache_read, request_input, input_rate)
            + (cache_write - cache_write_1h) * write_rate
            + cache_write_1h * _at(self.cache_write_1h, request_input, write_rate)
        ) / 1_000_000

    def flat(self) -> tuple[float, float, float, float, float] | None:
        """The rates of input, output, cache reads, cache writes and 1-hour cache writes
        whatever the request's size (None: one has tiers): ``cost`` is then
        ``(input * rates[0] + output * rates[1] + cache_read * rates[2] + (cache_write -
        cache_write_1h) * rates[3] + cache_write_1h * rates[4]) / 1_000_000``, to the bit."""
        kinds = (self.input, self.output, self.cache_read, self.cache_write, self.cache_write_1h)
        if any(rate is not None and rate.tiers for rate in kinds):
            return None
        input_rate = _at(self.input, 0, 0.0)
        write_rate = _at(self.cache_write, 0, input_rate)
        return (
            input_rate,
            _at(self.output, 0, 0.0),
            _at(self.cache_read, 0, input_rate),
            write_rate,
            _at(self.cache_write_1h, 0, write_rate),
        )


def _at(rate: Rate | None, request_input: int, otherwise: float) -> float:
    return otherwise if rate is None else rate.at(request_input)


@dataclass(frozen=True, slots=True)
class ModelPrice:
    """A model's rates and where they come from: ``source`` (the dataset and its version, or a
    prices file), ``date`` (since when the price holds, where the source says), ``provider``
    (who serves the model, where known)."""

    rates: Rates
    source: str
    date: str | None = None
    provider: str | None = None
