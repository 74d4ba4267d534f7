"""Prices written down in a TOML file: the user's own (``$XDG_CONFIG_HOME/xcsh-store/prices.toml``:
negotiated rates, private models, a price the dataset lacks) and the corrections shipped beside
this module. US dollars per million tokens::

    [models."claude-sonnet-4-2025*"]      # a model name; * and ? match as in a shell
    input = 3.0
    output = 15.0
    cache_read = 0.30                     # optional: else the input rate
    cache_write = 3.75                    # optional (5-minute writes): else the input rate
    cache_write_1h = 6.0                  # optional: else the cache_write rate
    provider = "anthropic"                # optional: the provider shown for the model
    date = 2025-08-12                     # optional: since when this price holds
    source = "https://…"                  # optional: where it comes from
    long_context = { above = 200000, input = 6.0, output = 22.5 }  # optional: the whole
                                          # request at these rates when its input is larger

A model name matches its own key first, else the first pattern (in file order) it fits.
"""

from __future__ import annotations

import datetime
import fnmatch
import tomllib
from typing import Any

from xcsh_store.agents.prices.pricing_model import ModelPrice, Rate, Rates
from xcsh_store.errors import XcshStoreError

RATE_KEYS = ("input", "output", "cache_read", "cache_write", "cache_write_1h")
_TEXT_KEYS = ("provider", "source")
_KEYS = (*RATE_KEYS, *_TEXT_KEYS, "date", "long_context")


class PriceFileError(XcshStoreError, ValueError):
    """A prices file that cannot be read as one; the message names the file and the place."""


class PriceFile:
    """The models of one prices file, by the name or pattern that selects them."""

    def __init__(self, path: str, prices: dict[str, ModelPrice]) -> None:
        self.path = path
        self.exact = {name: price for name, price in prices.items() if not _is_pattern(name)}
        self.patterns = [(name, price) for name, price in prices.items() if _is_pattern(name)]

    def find(self, model: str) -> ModelPrice | None:
        name = model.lower()
        found = self.exact.get(name)
        if found is not None:
            return found
        return next(
            (price for pattern, price in self.patterns if fnmatch.fnmatchcase(name, pattern)),
            None,
        )


def read_price_file(path: str, data: bytes, source: str) -> PriceFile:
    """The prices of a file's bytes; ``source`` names where its prices come from."""
    try:
        document = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise PriceFileError(f"{path}: not a TOML file: {error}") from None
    unknown = set(document) - {"models"}
    if unknown:
        raise PriceFileError(f"{path}: unknown table {sorted(unknown)[0]!r} (only [models.NAME])")
    models = document.get("models", {})
    if type(models) is not dict:
        raise PriceFileError(f'{path}: models must be tables: [models."NAME"]')
    prices = {}
    for name, table in models.items():
        where = f"{path}: models.{_quoted(name)}"
        if type(table) is not dict:
            raise PriceFileError(f"{where} must be a table of prices")
        prices[name.lower()] = _model_price(table, where, source)
    return PriceFile(path, prices)


def _model_price(table: dict[str, Any], where: str, source: str) -> ModelPrice:
    unknown = [key for key in table if key not in _KEYS]
    if unknown:
        raise PriceFileError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(_KEYS)})")
    for key in ("input", "output"):
        if key not in table:
            raise PriceFileError(f"{where}: {key} is missing (dollars per million tokens)")
    long_context = table.get("long_context")
    threshold, long_rates = 0, {}
    if long_context is not None:
        if type(long_context) is not dict or "above" not in long_context:
            raise PriceFileError(f"{where}: long_context needs above = TOKENS and its rates")
        threshold = long_context["above"]
        if type(threshold) is not int or threshold < 0:
            raise PriceFileError(f"{where}: long_context.above must be a whole number of tokens")
        extra = [key for key in long_context if key not in (*RATE_KEYS, "above")]
        if extra:
            raise PriceFileError(f"{where}: long_context: unknown key {extra[0]!r}")
        long_rates = {key: _rate(long_context[key], f"{where}: long_context.{key}")
                      for key in RATE_KEYS if key in long_context}  # fmt: skip
        lacking = [key for key in long_rates if key not in table]
        if lacking:
            raise PriceFileError(f"{where}: long_context.{lacking[0]} needs {lacking[0]} too")
    rates = {}
    for key in RATE_KEYS:
        if key in table:
            base = _rate(table[key], f"{where}: {key}")
            tiers = ((threshold, long_rates[key]),) if key in long_rates else ()
            rates[key] = Rate(base, tiers)
    for key in _TEXT_KEYS:
        if key in table and not isinstance(table[key], str):
            raise PriceFileError(f"{where}: {key} must be a string")
    return ModelPrice(
        Rates(**rates),
        source=table.get("source") or source,
        date=_date(table.get("date"), where),
        provider=table.get("provider"),
    )


def _rate(value: Any, where: str) -> float:
    if type(value) not in (int, float) or not 0 <= value < float("inf"):
        raise PriceFileError(f"{where} must be a number of dollars per million tokens, >= 0")
    return float(value)


def _date(value: Any, where: str) -> str | None:
    if value is None:
        return None
    if type(value) is datetime.date:
        return value.isoformat()
    if isinstance(value, str):
        try:
            return datetime.date.fromisoformat(value).isoformat()
        except ValueError:
            pass
    raise PriceFileError(f"{where}: date must be a date (2026-01-31)")


def _is_pattern(name: str) -> bool:
    return any(character in name for character in "*?[")


def _quoted(name: str) -> str:
    return f'"{name}"' if not name.replace("-", "").replace("_", "").isalnum() else name
