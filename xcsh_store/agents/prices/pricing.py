"""Costs of the requests that agents record as tokens only (Claude Code, Codex and most others:
every plugin whose ``records_costs`` is false), priced as the vendor bills
them: the price in force on the request's day, from the user's prices file first
(``$XDG_CONFIG_HOME/xcsh-store/prices.toml``: price_file.py), then the corrections shipped here
(``price_corrections.toml``: a tier the dataset lacks, with its source), then the genai-prices
dataset (pydantic/genai-prices, MIT: maintained, offline, with price history and long-context
tiers). The arithmetic and the long-context rule are in pricing_model.py. The three sources are
read into one flat table (flat_table.py) kept in the user's cache folder (price_cache.py) until one
of them changes; the dataset's part comes from the table shipped with the package when the
dataset installed is the one it was made of: pricing a request imports neither genai-prices nor
pydantic, not even the first time.

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
import logging
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import TYPE_CHECKING, Any

from xcsh_store.agents.prices import price_cache
from xcsh_store.agents.prices.flat_table import (
    DATASET,
    OPENROUTER,
    DatasetPrices,
    dataset_path,
    dataset_version,
)
from xcsh_store.agents.prices.pricing_model import ModelPrice, Rate, Rates
from xcsh_store.homes import get_prices_file

if TYPE_CHECKING:
    from xcsh_store.agents.prices.price_file import PriceFile

log = logging.getLogger("xcsh_store")

# Bumped when the rules above or the arithmetic change: the fingerprint then changes too.
PRICING_RULES = "2"
SYNTHETIC_MODEL = "<synthetic>"
FREE_SUFFIX = ":free"
CORRECTIONS = "price_corrections.toml"
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

    def __init__(self, files: list[PriceFile], fingerprint: str, dataset: DatasetPrices) -> None:
        self.files = files
        self.fingerprint = fingerprint
        self.dataset = dataset
        # Prices found, by (model, provider, day): a sync prices every line that has usage,
        # and looking each one up again (patterns of the price files, the dataset's history)
        # took a tenth of the time of reading Claude Code's files. A table never changes: its
        # sources changed make another one (price_table).
        self._found: dict[tuple[str | None, str | None, date], ModelPrice | None] = {}
        self._providers: dict[tuple[str | None, str | None, date], str | None] = {}
        # The same with each price's flat rates, by (model, provider, the timestamp's day as
        # written), for tokens_cost: no date made per request.
        self._rates: dict[tuple[str | None, str | None, str], tuple[ModelPrice | None, Any]] = {}
        # date.today() (about a microsecond) asked once per second of time.time().
        self._today = (0, date.today())

    def price(self, model: str | None, provider: str | None, day: date) -> ModelPrice | None:
        """The price of a model on ``day``; None when no source knows the model."""
        key = (model, provider, day)
        try:
            return self._found[key]
        except KeyError:
            found = self._found[key] = self._look_up(model, provider, day)
            return found

    def _look_up(self, model: str | None, provider: str | None, day: date) -> ModelPrice | None:
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
        return self.dataset.price(model.lower(), provider, day)

    def cost(self, request: Request) -> float | None:
        """Dollars for one request; None for a model without a price (a request of no tokens
        costs $0 whatever its model)."""
        return self.tokens_cost(
            request.model,
            request.timestamp,
            request.input,
            request.output,
            request.cache_read,
            request.cache_write,
            request.cache_write_1h,
            request.provider,
        )

    def tokens_cost(
        self,
        model: str | None,
        timestamp: str | None,
        input: int,
        output: int,
        cache_read: int,
        cache_write: int,
        cache_write_1h: int = 0,
        provider: str | None = None,
    ) -> float | None:
        """cost() of a request given by its fields (a reader pricing every line makes no
        Request), its price looked up once per model, provider and day."""
        if not input + output + cache_read + cache_write:
            return 0.0
        day = timestamp[:10] if timestamp else ""
        key = (model, provider, day)
        found = self._rates.get(key)
        if found is None:
            price = self.price(model, provider, request_day(timestamp))
            found = (price, None if price is None else price.rates.flat())
            if len(day) == 10 and _day(day) is not None:  # (else priced today: not kept)
                self._rates[key] = found
        price, rates = found
        if rates is not None:  # (Rates.cost's arithmetic without tiers, to the bit: flat)
            return (
                input * rates[0] + output * rates[1] + cache_read * rates[2]
                + (cache_write - cache_write_1h) * rates[3] + cache_write_1h * rates[4]
            ) / 1_000_000  # fmt: skip
        if price is None:
            return None
        return price.rates.cost(input, output, cache_read, cache_write, cache_write_1h)

    def provider_of(self, model: str | None, provider: str | None = None) -> str | None:
        """Who serves a model: as its price says, else as the dataset knows it (None: not
        known)."""
        second = int(time.time())
        if second != self._today[0]:
            self._today = (second, date.today())
        today = self._today[1]
        key = (model, provider, today)
        try:
            return self._providers[key]
        except KeyError:
            pass
        price = self.price(model, provider, today)
        found: str | None
        if price is not None and price.provider is not None:
            found = price.provider
        else:
            known = self.dataset.price(model.lower(), provider, today) if model else None
            found = known.provider if known is not None else None
        self._providers[key] = found
        return found


def request_day(timestamp: str | None) -> date:
    """The UTC day of a request (prices change at a day's start); today when unknown."""
    if timestamp and len(timestamp) >= 10:
        day = _day(timestamp[:10])
        if day is not None:
            return day
    return datetime.now(UTC).date()


@functools.lru_cache(maxsize=4096)
def _day(text: str) -> date | None:
    """The day ``YYYY-MM-DD`` names (None: not a day); every line of a day asks again."""
    try:
        return date.fromisoformat(text)
    except ValueError:
        return None


def price_sources() -> str:
    """A cheap key of what the prices in force come from: the pricing rules, and the identity
    (inode, size, modification time) of the user's prices file, the shipped corrections and
    the dataset's data. A few stats, no file read: while the key stays the same, so does
    :func:`price_table`'s fingerprint, which a sync then need not compute (parsing TOML and
    asking the installed packages for the dataset's version)."""
    return "; ".join([f"rules {PRICING_RULES}", *map(_identity, price_source_paths())])


def price_source_paths() -> tuple[str | None, ...]:
    """The files the prices in force come from: the user's prices file, the shipped
    corrections and the dataset's data (None: the dataset is not installed)."""
    return get_prices_file(), _corrections_path(), dataset_path()


def _corrections_path() -> str:
    return os.path.join(os.path.dirname(__file__), CORRECTIONS)


def _identity(path: str | None) -> str:
    try:
        info = os.stat(path) if path is not None else None
    except OSError:
        info = None
    return "-" if info is None else f"{info.st_ino}:{info.st_size}:{info.st_mtime_ns}"


# What fixed_prices holds, innermost last: the table (None: not built yet).
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
    """The prices in force now: read again when one of their sources changed (a long-running
    ``watch`` or ``serve`` sees an edit of the user's file); a bad file raises PriceFileError.
    The table kept in the user's cache folder is read (or built and kept there)."""
    if _FIXED and _FIXED[-1] is not None:
        return _FIXED[-1]
    table = _price_table(price_cache.cache_key(price_sources(), get_prices_file()))
    if _FIXED:
        _FIXED[-1] = table
    return table


@functools.lru_cache(maxsize=4)
def _price_table(key: str) -> PriceTable:
    """The table of ``key`` (price_cache.cache_key): the one kept on disk, else built (and
    kept). A file of the right key but not of this shape (written by hand, or by a bug) is
    built again."""
    data = price_cache.load(key)
    if data is not None:
        try:
            return _table_of(data)
        except (KeyError, TypeError, ValueError, AttributeError):
            log.warning("%s is not a price table: built again", price_cache.cache_path())
    data = _built_data(key)
    price_cache.store(data)
    return _table_of(data)


def _table_of(data: dict[str, Any]) -> PriceTable:
    from xcsh_store.agents.prices.price_file import PriceFile

    files = [
        PriceFile(source["path"], {name: _price(price) for name, price in source["models"].items()})
        for source in data["files"]
    ]
    return PriceTable(files, data["fingerprint"], DatasetPrices(data["dataset"]))


@functools.lru_cache(maxsize=2)
def _built_data(key: str) -> dict[str, Any]:
    """The table of ``key`` from its sources, once per process (a table built before a sync
    to compare fingerprints is the one the sync keeps on disk)."""
    return {"key": key, **_built_table(key)}


def price_fingerprint() -> str:
    """The fingerprint of the prices in force (what a sync records its costs were priced with),
    without building the table: the dataset's version and a digest of the two price files,
    which are read (a bad prices.toml raises PriceFileError), not the dataset itself."""
    if _FIXED and _FIXED[-1] is not None:
        return _FIXED[-1].fingerprint
    return _price_files(price_cache.cache_key(price_sources(), get_prices_file()))[1]


@functools.lru_cache(maxsize=2)
def _price_files(key: str) -> tuple[list[PriceFile], str]:
    """The user's prices file (when there is one) then the shipped corrections, read for the
    sources of ``key``, and the fingerprint of the prices in force."""
    from xcsh_store.agents.prices.price_file import read_price_file

    with open(_corrections_path(), "rb") as stream:
        corrections = stream.read()
    files = [read_price_file(CORRECTIONS, corrections, "xcsh-store corrections")]
    user = b""
    path = get_prices_file()
    with contextlib.suppress(FileNotFoundError), open(path, "rb") as stream:
        user = stream.read()
        files.insert(0, read_price_file(path, user, path))
    digest = hashlib.sha256(corrections + b"\0" + user).hexdigest()[:16]
    return files, f"{DATASET} {dataset_version()}; rules {PRICING_RULES}; files {digest}"


def _built_table(key: str) -> dict[str, Any]:
    """The table from its sources: the price files, the dataset (the shipped table's, else
    imported: a few tenths of a second)."""
    files, fingerprint = _price_files(key)
    return {
        "fingerprint": fingerprint,
        "files": [
            {
                "path": prices.path,
                "models": {
                    name: _price_json(price)
                    for name, price in [*prices.exact.items(), *prices.patterns]
                },
            }
            for prices in files
        ],
        "dataset": _dataset(_identity(dataset_path())),
    }


@functools.lru_cache(maxsize=1)
def _dataset(identity: str) -> dict[str, Any]:
    """The dataset installed (whose data file has ``identity``) as flat_table.dataset_table
    gives it, once per process: tables of other price files (another user's file, a test's)
    share it."""
    from xcsh_store.agents.prices.flat_table import dataset_table

    return dataset_table()


def _price_json(price: ModelPrice) -> dict[str, Any]:
    rates = [getattr(price.rates, kind) for kind in ("input", "output", "cache_read",
                                                      "cache_write", "cache_write_1h")]  # fmt: skip
    return {
        "rates": [None if rate is None else [rate.base, rate.tiers] for rate in rates],
        "source": price.source,
        "date": price.date,
        "provider": price.provider,
    }


def _price(data: dict[str, Any]) -> ModelPrice:
    kinds = ("input", "output", "cache_read", "cache_write", "cache_write_1h")
    rates = {
        kind: Rate(rate[0], tuple((start, value) for start, value in rate[1]))
        for kind, rate in zip(kinds, data["rates"], strict=True)
        if rate is not None
    }
    return ModelPrice(
        Rates(**rates), source=data["source"], date=data["date"], provider=data["provider"]
    )
