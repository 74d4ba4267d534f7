"""The prices behind the index's costs: which price table priced them (its fingerprint in
``meta``), pricing again when the table changed, and the price each model seen was given.

The files of most agents (Claude Code, Codex, …: ESTIMATED_AGENTS) hold tokens, not costs: a
sync prices each request as it reads it (agents/prices/pricing.py), so ``entries.cost`` and
``sessions.cost`` are there for every reader of index.db. A new genai-prices release, an edited
prices.toml or new pricing rules change the table's fingerprint; the next sync then reads those
agents' files again, whole, which prices every request anew (their files hold what billing
needs: the 1-hour cache writes, each request's size and day), and records the new fingerprint
only once it is done.

Computing the fingerprint means reading the price files and asking the installed packages for
the dataset's version: a sync first compares the cheap key of those sources (a few stats:
``pricing.price_sources``) with the one recorded beside the fingerprint, and builds the table
only when the key moved; the readers price a request with it only when they read one.
"""

from __future__ import annotations

from dataclasses import dataclass

import apsw

from xcsh_store.agents import ESTIMATED_AGENTS
from xcsh_store.agents.prices.pricing import (
    PriceTable,
    price_fingerprint,
    price_sources,
    request_day,
)
from xcsh_store.agents.prices.pricing_model import ModelPrice
from xcsh_store.index.db import get_meta, set_meta, transaction

PRICES_META = "price_table"
# The sources key (price_sources) of the table whose fingerprint PRICES_META records.
SOURCES_META = "price_sources"
_PRICED = ", ".join(f"'{agent}'" for agent in ESTIMATED_AGENTS)


def priced_with(connection: apsw.Connection) -> str | None:
    """The fingerprint of the price table the index's costs come from (None: none yet)."""
    return get_meta(connection, PRICES_META)


def price_again_if_changed(connection: apsw.Connection, sources: str) -> bool:
    """Before a sync: when the prices in force (from ``sources``: price_sources) are not the
    ones the index was priced with, make the sync read every file of ESTIMATED_AGENTS again,
    whole (a changed stat and nothing read). Returns whether it did. The price table is built
    only when its sources changed since the last sync."""
    if get_meta(connection, SOURCES_META) == sources:
        return False
    fingerprint = price_fingerprint()
    if priced_with(connection) == fingerprint:
        # The same prices from sources that moved (a file saved again as it was).
        with transaction(connection):
            set_meta(connection, SOURCES_META, sources)
        return False
    with transaction(connection):
        connection.execute(
            f"UPDATE files SET mtime_ns = -1, indexed_bytes = 0 WHERE agent IN ({_PRICED})"
        )
    return connection.changes() > 0


def record_prices(connection: apsw.Connection, sources: str) -> None:
    """After a sync that priced everything it read with the prices of ``sources`` (taken
    before it): record their table's fingerprint, unless recorded already, or unless the
    sources moved during the sync (some files may have been priced either way: the next sync
    finds them changed and prices again)."""
    if get_meta(connection, SOURCES_META) == sources or price_sources() != sources:
        return
    with transaction(connection):
        set_meta(connection, PRICES_META, price_fingerprint())
        set_meta(connection, SOURCES_META, sources)


@dataclass(frozen=True, slots=True)
class ModelSeen:
    """A model the index has usage of, and the price its last request was given."""

    agent: str
    provider: str | None
    model: str | None
    entries: int
    unpriced: int
    last_used: str | None
    # None: the agent recorded its own costs (pi, xcsh), or no source prices the model.
    price: ModelPrice | None


def models_seen(connection: apsw.Connection, table: PriceTable) -> list[ModelSeen]:
    """Every agent and model with usage in the index, most used first; the price of Claude
    Code's and Codex's models as ``table`` gives it on the day of their last request."""
    rows = list(
        connection.execute(
            "SELECT agent, provider, model, count(*), sum(cost IS NULL), max(timestamp)"
            " FROM usage_entries GROUP BY agent, provider, model ORDER BY count(*) DESC, model"
        )
    )
    return [
        ModelSeen(
            *(agent, provider, model, entries, unpriced, last),
            table.price(model, provider, request_day(last)) if agent in ESTIMATED_AGENTS else None,
        )
        for agent, provider, model, entries, unpriced, last in rows
    ]
