"""What a cost figure is: the one place that decides how a request's cost is known, how a
session's or a group's costs add up, and how each kind is shown. ``$0`` means free, never
"unknown" or "not recorded".

A request (an entry with usage) gets, when it is read into the index (:func:`settle`):

* ``cost``: the dollars counted: what its agent recorded, else the index's estimate at list
  price (agents/prices/pricing.py), else NULL (no price known);
* ``cost_estimated``: 1 when ``cost`` is the index's estimate, 0 when its agent recorded it;
* ``list_cost``: for a recorded ``$0``, the same tokens at list price (NULL: no price known).
  A reseller or a subscription records $0 for a paid model (opencode's ``cost: 0``); the list
  price says what it would have cost, and the two are shown side by side, never summed.

A group of requests (a session, a ``usage`` row) has one kind (:class:`CostFacts`):

==============  =========================================================  ==========
kind            meaning                                                    shown
==============  =========================================================  ==========
not_recorded    no request records usage (Cursor, Droid, Amp, Aider …)     ``–``
unknown         requests with usage, none with a cost or a price           ``?``
free            every request costs nothing ($0 list price, ``:free``)     ``$0``
recorded        the agent recorded every cost                              ``$1.20``
estimated       some costs are the index's estimates                       ``~$1.20``
partial         some requests have no cost: the sum is a lower bound       ``≥~$1.20``
==============  =========================================================  ==========

A recorded sum with recorded $0s below their list price is shown with the list price beside
it: ``$0 recorded, ~$9.29 at list price`` (``$0/~$9.29`` in a table's cell).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

# The prices are imported where a recorded cost is checked against them, not here: a read that
# shows costs (`ls`'s column) needs none of pricing, its dataset table or its cache.
if TYPE_CHECKING:
    from xcsh_store.agents.prices.pricing import Request

# The kinds, as ``cost_kind`` names them in --json (docs/json.md).
NOT_RECORDED = "not_recorded"
UNKNOWN = "unknown"
FREE = "free"
RECORDED = "recorded"
ESTIMATED = "estimated"
PARTIAL = "partial"
COST_KINDS = (RECORDED, ESTIMATED, FREE, PARTIAL, UNKNOWN, NOT_RECORDED)

# The columns of a request's cost after the token figures (entries and usage_entries).
NO_COST = (None, None)


def settle(usage: tuple[Any, ...], records_costs: bool, request: Request | None) -> tuple[Any, ...]:
    """A request's six usage figures (input, output, cache read, cache write, premium
    requests, cost) and its ``cost_estimated`` and ``list_cost``. ``records_costs``: its agent
    writes costs (pi, opencode, Aider), so ``usage``'s cost is the recorded one, None where the
    agent wrote none (then the index estimates it as for any other agent, pricing ``request``);
    otherwise the cost is already the index's estimate (the agent's reader priced the request,
    with what only it knows: 1-hour cache writes, the provider) and ``request`` may be None."""
    cost = usage[5]
    if not records_costs:
        return (*usage, None if cost is None else 1, None)
    assert request is not None
    from xcsh_store.agents.prices.pricing import price_table

    if cost is None:
        estimate = price_table().cost(request)
        return (*usage[:5], estimate, None if estimate is None else 1, None)
    list_cost = price_table().cost(request) if cost == 0 else None
    return (*usage, 0, list_cost)


def dollars(value: float) -> str:
    """Dollars as a cost is shown: ``$0``, ``$0.0042`` below a cent, else ``$1,234.50``."""
    if value == 0:
        return "$0"
    return f"${value:.4f}" if value < 0.01 else f"${value:,.2f}"


# The SQL sums :class:`CostFacts` is made of, over rows of entries or usage_entries (each
# with usage), in SQLite and in PostgreSQL alike. In this order: requests, of no cost known,
# estimated above $0, free, recorded $0s below list price; the known costs' sum (NULL: none
# known); the list price of those recorded $0s.
FACTS_SQL = (
    "count(*), count(*) FILTER (WHERE cost IS NULL),"
    " count(*) FILTER (WHERE cost_estimated = 1 AND cost > 0),"
    " count(*) FILTER (WHERE cost = 0 AND (cost_estimated = 1 OR list_cost = 0)),"
    " count(*) FILTER (WHERE list_cost > 0),"
    " CASE WHEN count(*) > count(*) FILTER (WHERE cost IS NULL) THEN coalesce(sum(cost), 0) END,"
    " coalesce(sum(list_cost), 0)"
)


@dataclass(frozen=True, slots=True)
class CostFacts:
    """What is known of the costs of a group of requests (FACTS_SQL's sums)."""

    requests: int = 0
    unpriced: int = 0
    estimated: int = 0
    free: int = 0
    below_list: int = 0
    # The sum of the known costs; None when no request's cost is known.
    cost: float | None = None
    # What the recorded $0s below list price cost at list price.
    list_extra: float = 0.0

    @classmethod
    def of_row(cls, row: Any) -> CostFacts:
        """From FACTS_SQL's seven values."""
        requests, unpriced, estimated, free, below, cost, extra = row
        return cls(
            int(requests or 0), int(unpriced or 0), int(estimated or 0), int(free or 0),
            int(below or 0), None if cost is None else float(cost), float(extra or 0),
        )  # fmt: skip

    def __add__(self, other: CostFacts) -> CostFacts:
        known = [cost for cost in (self.cost, other.cost) if cost is not None]
        return CostFacts(
            self.requests + other.requests, self.unpriced + other.unpriced,
            self.estimated + other.estimated, self.free + other.free,
            self.below_list + other.below_list, sum(known) if known else None,
            self.list_extra + other.list_extra,
        )  # fmt: skip

    def summed_as(self, cost: float) -> CostFacts:
        """The same facts with the known costs' sum as a session row keeps it (summed as its
        requests were read: the same dollars, added in another order)."""
        return self if self.cost is None else replace(self, cost=cost)

    @property
    def kind(self) -> str:
        """One of COST_KINDS (the table above)."""
        if not self.requests:
            return NOT_RECORDED
        if self.unpriced == self.requests:
            return UNKNOWN
        if self.unpriced:
            return PARTIAL
        if self.free == self.requests:
            return FREE
        return ESTIMATED if self.estimated else RECORDED

    @property
    def shown_cost(self) -> float | None:
        """The cost as --json gives it: null when unknown or not recorded."""
        return None if self.kind in (UNKNOWN, NOT_RECORDED) else (self.cost or 0.0)

    @property
    def at_list_price(self) -> float | None:
        """The cost with the recorded $0s below list price at list price; None when there
        are none."""
        return (self.cost or 0.0) + self.list_extra if self.below_list else None

    def to_json(self) -> dict[str, Any]:
        """The cost keys every --json record of a session or a usage group carries."""
        return {
            "cost": self.shown_cost,
            "cost_kind": self.kind,
            "cost_at_list_price": self.at_list_price,
        }

    def text(self, money: Callable[[float], str] | None = None, short: bool = False) -> str:
        """The cost as shown (``money``: dollars as text, :func:`dollars` unless given);
        ``short``: for a table's cell."""
        money = money or dollars
        kind = self.kind
        if kind == NOT_RECORDED:
            return "–"
        if kind == UNKNOWN:
            return "?"
        if kind == FREE:
            return "$0"
        figure = money(self.cost or 0.0)
        if kind == RECORDED and not self.cost and not self.below_list:
            # Recorded $0 of a model no source prices: what the agent said, not known free.
            return f"{figure} rec." if short else f"{figure} recorded"
        if kind == ESTIMATED:
            figure = "~" + figure
        elif kind == PARTIAL:
            figure = ("≥~" if self.estimated else "≥") + figure
        at_list = self.at_list_price
        if at_list is None:
            return figure
        if short:
            # A cell names the list price beside a $0 only: a sum with some recorded $0s in it
            # keeps its own figure (the note under a table gives the total at list price).
            return f"{figure}/~{money(at_list)}" if not self.cost else figure
        return f"{figure} recorded, ~{money(at_list)} at list price"

    def left_out(self, sessions: int | None = None) -> str | None:
        """What a total leaves out, as a clause (None: nothing): ``3 entries unpriced`` or,
        given how many sessions they are in, ``3 sessions unpriced``."""
        if not self.unpriced:
            return None
        if sessions is not None:
            return f"{sessions:,} session{'s' * (sessions != 1)} unpriced"
        return f"{self.unpriced:,} entr{'ies' if self.unpriced != 1 else 'y'} unpriced"
