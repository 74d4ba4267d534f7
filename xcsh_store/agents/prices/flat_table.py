"""The genai-prices dataset as plain data: its providers and models, the rules that match a
model's name, and each model's prices as rows (valid from, the rates of each kind of token with
their long-context tiers), written once to a JSON file (price_cache.py) and read back without
importing genai-prices, pydantic or httpx (a few tenths of a second on every process that
priced a request).

``flatten`` is the one place that imports the dataset, and it runs only where the dataset
installed is not the one the package ships flattened (``SHIPPED``: the version requirements.lock
pins, checked by its version and the digest of its data file, no import): :func:`dataset_table`
reads that file instead. :class:`DatasetPrices` answers the
questions pricing.py asks of it, the dataset's way: a provider found by its id or by the model's
name, the model by its match rules (then the provider's fallback providers, then the name with a
compact date ``-20251211`` written ``-2025-12-11``), the price in force on a day (the last
conditional price begun; a time-of-day price is in force if it is at midnight UTC, the moment a
day's price is taken at). tests/test_flat_prices.py holds it equal to the dataset's own lookup
for every model it knows.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
from datetime import date
from typing import TYPE_CHECKING, Any

from xcsh_store.agents.prices.pricing_model import ModelPrice, Rate, Rates

if TYPE_CHECKING:
    from genai_prices.types import ModelInfo

DATASET = "genai-prices"
# Its importable package, and the file of its prices (an upgrade rewrites it).
DATASET_PACKAGE = "genai_prices"
DATASET_DATA = "data.py"
# The dataset of the genai-prices version requirements.lock pins, flattened, with that version
# and the sha256 of its data file. tests/test_flat_prices.py fails when it is stale; written
# again by `python -m xcsh_store.agents.prices.flat_table`.
SHIPPED = os.path.join(os.path.dirname(__file__), "genai-prices-table.json")
OPENROUTER = "openrouter"
# genai-prices' names of the prices of each kind of token, in Rates' order.
DATASET_KEYS = {
    "input": "input_mtok",
    "output": "output_mtok",
    "cache_read": "cache_read_mtok",
    "cache_write": "cache_write_mtok",
    "cache_write_1h": "cache_write_1h_mtok",
}
# A price row: valid from (an ISO day; "" always; None never: a time-of-day price not in force
# at midnight), then one rate per kind of token: null, or [base, [[tier start, rate], ...]].
Row = list[Any]
_COMPACT_DATE = re.compile(r"(-)(20\d{2})(0[1-9]|1[0-2])(0[1-9]|[12]\d|3[01])(?=-|:|$)")


def flatten() -> dict[str, Any]:
    """The dataset installed, as JSON-ready data (imports genai-prices: a few tenths of a
    second)."""
    from datetime import UTC, datetime

    from genai_prices.data_snapshot import get_snapshot

    midnight = datetime(2000, 1, 1, tzinfo=UTC)
    providers = []
    for provider in get_snapshot().providers:
        providers.append(
            {
                "id": provider.id,
                "model_match": _logic(provider.model_match),
                "provider_match": _logic(provider.provider_match),
                "fallback": list(provider.fallback_model_providers or ()),
                "models": [
                    {"match": _logic(model.match), "prices": _price_rows(model, midnight)}
                    for model in provider.models
                ],
            }
        )
    return {"version": dataset_version(), "providers": providers}


def dataset_table() -> dict[str, Any]:
    """The dataset installed, as :func:`flatten` gives it: read from :data:`SHIPPED` when the
    dataset installed is the one it was made of (its version and its data file's digest), else
    flattened (importing genai-prices)."""
    import orjson

    try:
        with open(SHIPPED, "rb") as stream:
            shipped = orjson.loads(stream.read())
    except (OSError, orjson.JSONDecodeError):
        shipped = None
    path = dataset_path()
    if (
        isinstance(shipped, dict)
        and path is not None
        and shipped.get("version") == dataset_version()
        and shipped.get("data_sha256") == _digest(path)
    ):
        return {"version": shipped["version"], "providers": shipped["providers"]}
    return flatten()


def shipped_table() -> dict[str, Any]:
    """What :data:`SHIPPED` holds for the dataset installed: :func:`flatten` with the digest
    of its data file."""
    path = dataset_path()
    assert path is not None, f"{DATASET} is not installed"
    return {**flatten(), "data_sha256": _digest(path)}


def _digest(path: str) -> str | None:
    try:
        with open(path, "rb") as stream:
            return hashlib.sha256(stream.read()).hexdigest()
    except OSError:
        return None


@functools.cache
def dataset_path() -> str | None:
    """The dataset's data module, found without importing the package (a few tenths of a
    second); None when it is not installed."""
    import importlib.util

    spec = importlib.util.find_spec(DATASET_PACKAGE)
    if spec is None or spec.origin is None:
        return None
    return os.path.join(os.path.dirname(spec.origin), DATASET_DATA)


def dataset_version() -> str:
    """The version of genai-prices installed ("missing": none): from the name of its
    distribution's folder beside the package (``genai_prices-0.2.5.dist-info``), else asked
    of the installed distributions (which reads them all: a few hundredths of a second)."""
    path = dataset_path()
    if path is None:
        return "missing"
    prefix, suffix = f"{DATASET_PACKAGE}-", ".dist-info"
    try:
        names = os.listdir(os.path.dirname(os.path.dirname(path)))
    except OSError:
        names = []
    found = [name for name in names if name.startswith(prefix) and name.endswith(suffix)]
    if len(found) == 1:
        return found[0][len(prefix) : -len(suffix)]
    from importlib import metadata

    try:
        return metadata.version(DATASET)
    except metadata.PackageNotFoundError:
        return "missing"


def _logic(clause: Any) -> Any:
    """A match clause of the dataset as JSON: {"or": [...]}, {"and": [...]}, {kind: text}."""
    if clause is None:
        return None
    if hasattr(clause, "or_"):
        return {"or": [_logic(part) for part in clause.or_]}
    if hasattr(clause, "and_"):
        return {"and": [_logic(part) for part in clause.and_]}
    ((kind, text),) = vars(clause).items()
    return {kind: text}


def _price_rows(model: ModelInfo, midnight: Any) -> list[Row]:
    conditionals = model.prices if isinstance(model.prices, list) else None
    if conditionals is None:
        return [["", *_rates(model.prices)]]
    rows = []
    for conditional in conditionals:
        constraint = conditional.constraint
        start = getattr(constraint, "start_date", None)
        if constraint is None:
            since: str | None = ""
        elif start is not None:
            since = start.isoformat()
        else:  # a time of day: in force at the moment a day's price is taken, or never
            since = "" if constraint.active(midnight) else None
        rows.append([since, *_rates(conditional.prices)])
    return rows


def _rates(prices: Any) -> list[Any]:
    # The prices set are attributes; the dataset answers the others through a __getattr__
    # that looks the name up in its registry of units (a third of the flattening's time).
    given = vars(prices)
    return [_rate(given.get(name)) for name in DATASET_KEYS.values()]


def _rate(price: Any) -> Any:
    """A rate of the dataset's Decimal or TieredPrices, as [base, [[start, rate], ...]]."""
    if price is None:
        return None
    tiers = getattr(price, "tiers", None)
    if tiers is None:
        return [float(price), []]
    return [float(price.base), [[tier.start, float(tier.price)] for tier in tiers]]


class DatasetPrices:
    """Lookups in the flattened dataset (``flatten``'s data)."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.source = f"{DATASET} {data['version']}"
        self.providers: list[dict[str, Any]] = data["providers"]
        self._by_id = {provider["id"]: provider for provider in self.providers}
        # Every key a lookup reads, there (a KeyError or TypeError now, not in a sync).
        for provider in self.providers:
            _ = provider["model_match"], provider["provider_match"], [*provider["fallback"]]
            for model in provider["models"]:
                _ = model["match"].items(), [row[5] for row in model["prices"]]
        # Every price on a day; a few models on a few hundred days.
        self.price = functools.lru_cache(maxsize=1024)(self._price)

    def _price(self, model: str, provider: str | None, day: date) -> ModelPrice | None:
        """The price of ``model`` (lower case) on ``day``. Its provider: ``provider`` when the
        dataset has the model there, else the one whose models' names it matches; a
        ``vendor/model`` name (OpenRouter's form) is looked for among OpenRouter's."""
        hints: list[str | None] = [provider] if provider else []
        hints += [None, OPENROUTER] if "/" in model else [None]
        for hint in hints:
            found = self._find(model, hint)
            if found is not None:
                served_by, rows = found
                return self._model_price(rows, served_by, day)
        return None

    def _find(self, model: str, provider_id: str | None) -> tuple[str, list[Row]] | None:
        """(provider, price rows) as genai-prices' ``find_provider_model`` finds them."""
        if provider_id and provider_id.lower() == "litellm" and "/" in model:
            actual, rest = model.split("/", 1)
            if actual and self._provider_by_id(actual) is not None:
                provider_id, model = actual, rest
        provider = self._provider(model, provider_id)
        if provider is None:
            return None
        rows = self._model_rows(provider, model, fallback=True)
        if rows is None:
            normalized = _COMPACT_DATE.sub(_dashed_date, model)
            if normalized != model:
                rows = self._model_rows(provider, normalized, fallback=True)
        return None if rows is None else (provider["id"], rows)

    def _provider(self, model: str, provider_id: str | None) -> dict[str, Any] | None:
        if provider_id is not None:
            found = self._provider_by_id(provider_id)
            if found is not None or provider_id.lower() != "litellm":
                return found
        for provider in self.providers:
            if provider["model_match"] is not None and matches(provider["model_match"], model):
                return provider
        return None

    def _provider_by_id(self, provider_id: str) -> dict[str, Any] | None:
        name = provider_id.lower().strip()
        if name in self._by_id:
            return self._by_id[name]
        return next(
            (
                p
                for p in self.providers
                if p["provider_match"] and matches(p["provider_match"], name)
            ),
            None,
        )

    def _model_rows(self, provider: dict[str, Any], model: str, fallback: bool) -> list[Row] | None:
        for info in provider["models"]:
            if matches(info["match"], model):
                return info["prices"]
        if fallback:
            for other in provider["fallback"]:
                if other in self._by_id:
                    rows = self._model_rows(self._by_id[other], model, fallback=False)
                    if rows is not None:
                        return rows
        return None

    def _model_price(self, rows: list[Row], provider: str, day: date) -> ModelPrice:
        """The price in force on ``day``: the last row begun (the first when none is), with
        the day it took effect when the dataset says."""
        chosen, started = rows[0], None
        for row in reversed(rows):
            since = row[0]
            if since == "" or (since is not None and day.isoformat() >= since):
                chosen, started = row, since or None
                break
        rates = {key: _as_rate(value) for key, value in zip(DATASET_KEYS, chosen[1:], strict=True)}
        if rates["cache_write_1h"] is None and provider == "anthropic" and rates["input"]:
            # Anthropic bills 1-hour cache writes at twice the input rate (prompt-caching
            # pricing); the dataset names that rate for current models, not for every older one.
            base = rates["input"]
            rates["cache_write_1h"] = Rate(base.base * 2, tuple((s, r * 2) for s, r in base.tiers))
        return ModelPrice(Rates(**rates), source=self.source, date=started, provider=provider)


def matches(logic: Any, text: str) -> bool:
    """Whether ``text`` (a model name or provider id in lower case) fits a match clause."""
    ((kind, value),) = logic.items()
    if kind == "or":
        return any(matches(part, text) for part in value)
    if kind == "and":
        return all(matches(part, text) for part in value)
    if kind == "regex":
        return re.search(value, text) is not None
    value = value.lower()
    if kind == "equals":
        return text == value
    if kind == "starts_with":
        return text.startswith(value)
    if kind == "ends_with":
        return text.endswith(value)
    if kind == "contains":
        return value in text
    raise ValueError(f"unknown match clause {kind!r}")


def _as_rate(value: Any) -> Rate | None:
    if value is None:
        return None
    base, tiers = value
    return Rate(base, tuple((start, rate) for start, rate in tiers))


def _dashed_date(match: re.Match[str]) -> str:
    year, month, day = (int(match.group(index)) for index in range(2, 5))
    try:
        date(year, month, day)
    except ValueError:
        return match.group(0)
    return f"{match.group(1)}{year:04d}-{month:02d}-{day:02d}"


if __name__ == "__main__":
    import orjson

    with open(SHIPPED, "wb") as output:
        output.write(orjson.dumps(shipped_table()) + b"\n")
