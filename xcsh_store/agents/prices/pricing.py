"""Costs of the requests that agents record as tokens only (Claude Code, Codex and most others:
every plugin whose ``records_costs`` is false), priced as the vendor bills
them: the price in force on the request's day, from the user's prices file first
(``$XDG_CONFIG_HOME/xcsh-store/prices.toml``: price_file.py), then the corrections shipped here
(``price_corrections.toml``: a tier the dataset lacks, with its source), then the genai-prices
dataset (pydantic/genai-prices, MIT: maintained, offline, with price history and long-context
tiers). The arithmetic and the long-context rule are in pricing_model.py.

Rules before any price:

* ``<synthetic>`` is what Claude Code names a message it wrote itself (an API error, an
  interruption): no request, $0.
* A request of no tokens costs $0 whatever its model.
* A model name ending in ``:free`` is OpenRouter's free variant of a model: $0, served by
  OpenRouter (https://openrouter.ai/docs/faq: "free variants", the ``:free`` suffix).
* A model no source prices has no cost (None): sums say how many such entries they leave out,
  never count them as $0.

Prices are applied when a file is read into the index (so ``entries.cost`` and
``sessions.cost`` hold them for every reader of index.db); :func:`price_table`'s ``fingerprint``
names the prices in force, and a sync that finds another fingerprint than the one the index was
priced with reads those agents' files again (index/store.py).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import TYPE_CHECKING

from xcsh_store.agents.prices.pricing_model import ModelPrice, Rate, Rates
from xcsh_store.homes import get_prices_file

if TYPE_CHECKING:
    from genai_prices.data_snapshot import DataSnapshot
    from genai_prices.types import ModelInfo

    from xcsh_store.agents.prices.price_file import PriceFile

# Bumped when the rules above or the arithmetic change: the fingerprint then changes too.
PRICING_RULES = "2"
DATASET = "genai-prices"
SYNTHETIC_MODEL = "<synthetic>"
FREE_SUFFIX = ":free"
OPENROUTER = "openrouter"
CORRECTIONS = "price_corrections.toml"
# genai-prices' names of the prices of each kind of token, in Rates' order.
_DATASET_KEYS = {
    "input": "input_mtok",
    "output": "output_mtok",
    "cache_read": "cache_read_mtok",
    "cache_write": "cache_write_mtok",
    "cache_write_1h": "cache_write_1h_mtok",
}
_NO_CHARGE = ModelPrice(Rates(), source="no charge")


@dataclass(frozen=True, slots=True)
class Request:
    """One model request as an agent's file records it (``input`` without the cached part;
    ``cache_write`` all cache writes, ``cache_write_1h`` those to the 1-hour cache)."""

    model: str | None
    timestamp: str | None
    input: int
    output: int
    cache_read: int
    cache_write: int
    cache_write_1h: int = 0
    # Who served it, when the file says (Codex: openai); else found from the model's name.
    provider: str | None = None

    @property
    def tokens(self) -> int:
        return self.input + self.output + self.cache_read + self.cache_write


class PriceTable:
    """The prices in force: the user's file, the shipped corrections, the dataset."""

    def __init__(self, files: list[PriceFile], fingerprint: str) -> None:
        self.files = files
        self.fingerprint = fingerprint

    def price(self, model: str | None, provider: str | None, day: date) -> ModelPrice | None:
        """The price of a model on ``day``; None when no source knows the model."""
        if not model:
            return None
        if model == SYNTHETIC_MODEL:
            return _NO_CHARGE
        for prices in self.files:
            found = prices.find(model)
            if found is not None:
                return found
        if model.lower().endswith(FREE_SUFFIX):
            return ModelPrice(Rates(), source="OpenRouter :free variant", provider=OPENROUTER)
        return _dataset_price(model.lower(), provider, day)

    def cost(self, request: Request) -> float | None:
        """Dollars for one request; None for a model without a price (a request of no tokens
        costs $0 whatever its model)."""
        if request.tokens == 0:
            return 0.0
        price = self.price(request.model, request.provider, request_day(request.timestamp))
        if price is None:
            return None
        return price.rates.cost(
            request.input,
            request.output,
            request.cache_read,
            request.cache_write,
            request.cache_write_1h,
        )

    def provider_of(self, model: str | None, provider: str | None = None) -> str | None:
        """Who serves a model: as its price says, else as the dataset knows it (None: not
        known)."""
        price = self.price(model, provider, date.today())
        if price is not None and price.provider is not None:
            return price.provider
        known = _dataset_price(model.lower(), provider, date.today()) if model else None
        return known.provider if known is not None else None


def request_day(timestamp: str | None) -> date:
    """The UTC day of a request (prices change at a day's start); today when unknown."""
    if timestamp and len(timestamp) >= 10:
        try:
            return date.fromisoformat(timestamp[:10])
        except ValueError:
            pass
    return datetime.now(UTC).date()


def dataset_version() -> str:
    # Imported here: scanning the installed distributions is for the table, not every sync.
    from importlib import metadata

    try:
        return metadata.version(DATASET)
    except metadata.PackageNotFoundError:
        return "missing"


def price_sources() -> str:
    """A cheap key of what the prices in force come from: the pricing rules, and the identity
    (inode, size, modification time) of the user's prices file, the shipped corrections and
    the dataset's data. A few stats, no file read: while the key stays the same, so does
    :func:`price_table`'s fingerprint, which a sync then need not compute (parsing TOML and
    asking the installed packages for the dataset's version)."""
    parts = [f"rules {PRICING_RULES}"]
    for path in (get_prices_file(), _corrections_path(), _dataset_path()):
        try:
            info = os.stat(path) if path is not None else None
        except OSError:
            info = None
        parts.append("-" if info is None else f"{info.st_ino}:{info.st_size}:{info.st_mtime_ns}")
    return "; ".join(parts)


def _corrections_path() -> str:
    return os.path.join(os.path.dirname(__file__), CORRECTIONS)


@functools.cache
def _dataset_path() -> str | None:
    """The dataset's data module (an upgrade of genai-prices rewrites it), found without
    importing the package (a few tenths of a second)."""
    import importlib.util

    spec = importlib.util.find_spec(DATASET.replace("-", "_"))
    if spec is None or spec.origin is None:
        return None
    return os.path.join(os.path.dirname(spec.origin), "data.py")


# The tables held by fixed_prices, innermost last (None: not built yet).
_FIXED: list[PriceTable | None] = []


@contextlib.contextmanager
def fixed_prices() -> Iterator[None]:
    """The prices in force, held for a while: the first :func:`price_table` within builds the
    table, the others answer it without looking at the user's file again. A sync prices every
    line of its files with one table: looking for the file at each line cost 5-10 % of reading
    Claude Code's. Built on first use only: a sync that prices nothing never builds one."""
    _FIXED.append(None)
    try:
        yield
    finally:
        _FIXED.pop()


def price_table() -> PriceTable:
    """The prices in force now: read again when the user's file changed (a long-running
    ``watch`` or ``serve`` sees an edit); a bad file raises PriceFileError."""
    if _FIXED and _FIXED[-1] is not None:
        return _FIXED[-1]
    path = get_prices_file()
    try:
        info = os.stat(path)
        identity: tuple[int, int, int] | None = (info.st_ino, info.st_size, info.st_mtime_ns)
    except FileNotFoundError:
        identity = None
    table = _price_table(path, identity)
    if _FIXED:
        _FIXED[-1] = table
    return table


@functools.lru_cache(maxsize=4)
def _price_table(path: str, identity: tuple[int, int, int] | None) -> PriceTable:
    from xcsh_store.agents.prices.price_file import read_price_file

    with open(_corrections_path(), "rb") as stream:
        corrections = stream.read()
    files = [read_price_file(CORRECTIONS, corrections, "xcsh-store corrections")]
    user = b""
    if identity is not None:
        with open(path, "rb") as stream:
            user = stream.read()
        files.insert(0, read_price_file(path, user, path))
    digest = hashlib.sha256(corrections + b"\0" + user).hexdigest()[:16]
    fingerprint = f"{DATASET} {dataset_version()}; rules {PRICING_RULES}; files {digest}"
    return PriceTable(files, fingerprint)


@functools.cache
def _snapshot() -> DataSnapshot:
    # Imported on first use: loading the dataset takes a few tenths of a second.
    from genai_prices.data_snapshot import get_snapshot

    return get_snapshot()


@functools.lru_cache(maxsize=1024)  # a few models, on a few hundred days
def _dataset_price(model: str, provider: str | None, day: date) -> ModelPrice | None:
    """The dataset's price of a model on a day. Its provider: ``provider`` when the dataset
    has the model there, else the one whose models' names it matches; a ``vendor/model`` name
    (OpenRouter's form) is looked for among OpenRouter's."""
    snapshot = _snapshot()
    hints: list[str | None] = [provider] if provider else []
    hints += [None, OPENROUTER] if "/" in model else [None]
    for hint in hints:
        try:
            served_by, info = snapshot.find_provider_model(model, None, hint, None)
        except LookupError:
            continue
        return _model_price(info, served_by.id, day)
    return None


def _model_price(info: ModelInfo, provider: str, day: date) -> ModelPrice:
    """The dataset's price in force on ``day``, with the date it took effect when the dataset
    has a history of the model's prices (its conditional prices: the last one begun wins)."""
    moment = datetime(day.year, day.month, day.day, tzinfo=UTC)
    started = None
    if isinstance(info.prices, list):
        for conditional in reversed(info.prices):
            constraint = conditional.constraint
            if constraint is None or constraint.active(moment):
                started = getattr(constraint, "start_date", None)
                break
    prices = info.get_prices(moment)
    rates = {key: _rate(getattr(prices, name, None)) for key, name in _DATASET_KEYS.items()}
    if rates["cache_write_1h"] is None and provider == "anthropic" and rates["input"]:
        # Anthropic bills 1-hour cache writes at twice the input rate (prompt-caching
        # pricing); the dataset names that rate for current models, not for every older one.
        base = rates["input"]
        rates["cache_write_1h"] = Rate(base.base * 2, tuple((s, r * 2) for s, r in base.tiers))
    return ModelPrice(
        Rates(**rates),
        source=f"{DATASET} {dataset_version()}",
        date=started.isoformat() if started else None,
        provider=provider,
    )


def _rate(price: object) -> Rate | None:
    """A Rate of the dataset's Decimal or TieredPrices."""
    if price is None:
        return None
    tiers = getattr(price, "tiers", None)
    if tiers is None:
        return Rate(float(price))  # type: ignore[arg-type]
    return Rate(
        float(price.base),  # type: ignore[attr-defined]
        tuple((tier.start, float(tier.price)) for tier in tiers),
    )
