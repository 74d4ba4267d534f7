"""Spend against budgets: each budget's current period (today, this week from Monday, this
month, in the local time zone, as ``usage --by day`` counts days), what its sessions spent in
it, and how much of the budget that is."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

import apsw

from xcsh_store.glance.settings import Budget, Limits
from xcsh_store.glance.usage import since
from xcsh_store.times import iso_millis


@dataclass(frozen=True, slots=True)
class BudgetStatus:
    """A budget and what was spent in its period so far."""

    budget: Budget
    start: datetime
    spent: float
    warn_percent: float
    host: str | None = None  # the host whose budget it is (the team index: TeamIndex.budgets)

    @property
    def percent(self) -> float:
        return self.spent / self.budget.amount * 100

    @property
    def over(self) -> bool:
        return self.spent > self.budget.amount

    @property
    def warned(self) -> bool:
        return self.percent >= self.warn_percent

    def to_json(self) -> dict[str, object]:
        return {
            "period": self.budget.period,
            "scope": self.budget.scope,
            "name": self.budget.name,
            "amount": self.budget.amount,
            "since": iso_millis(self.start),
            "spent": round(self.spent, 4),
            "percent": round(self.percent, 2),
            "warn": self.warned,
            "over": self.over,
            "host": self.host,
        }


def period_start(period: str, now: datetime) -> datetime:
    """The start of the day, week (Monday) or month ``now`` is in, in the local time zone."""
    day = now.astimezone().replace(hour=0, minute=0, second=0, microsecond=0)
    if period == "weekly":
        return day - timedelta(days=day.weekday())
    if period == "monthly":
        return day.replace(day=1)
    return day


def spent(connection: apsw.Connection, budget: Budget, start: str) -> float:
    """What the budget's sessions spent since ``start`` (UTC ISO), in dollars: the requests
    with a price (an unpriced one adds nothing known)."""
    if budget.scope == "agent":
        return since(connection, start, "agent = ?", budget.name)[0] or 0.0
    if budget.scope == "project":
        folder = (budget.name or "").rstrip("/") or "/"
        condition = "(project_dir = ? OR substr(project_dir, 1, length(?) + 1) = ? || '/')"
        return since(connection, start, condition, folder, folder, folder)[0] or 0.0
    return since(connection, start)[0] or 0.0


def budget_statuses(
    connection: apsw.Connection, limits: Limits, now: datetime
) -> list[BudgetStatus]:
    """Every budget with its spend, overall first, then by period."""
    order = {"daily": 0, "weekly": 1, "monthly": 2}
    found = []
    for budget in sorted(
        limits.budgets, key=lambda b: (b.scope != "all", b.scope, b.name or "", order[b.period])
    ):
        start = period_start(budget.period, now)
        found.append(
            BudgetStatus(budget, start, spent(connection, budget, iso_millis(start)),
                         limits.warn_percent)
        )  # fmt: skip
    return found
