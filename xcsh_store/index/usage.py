"""Token and cost sums from the index: the groupings ``usage`` offers and the query over the
``usage_entries`` view (which counts an entry copied into a fork once)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime

import apsw

from xcsh_store.agents import OTHER_AGENTS
from xcsh_store.index.sessions import agents_condition
from xcsh_store.times import iso_bound

# The agents whose costs are the index's estimates, as an SQL list.
_ESTIMATED = ", ".join(f"'{agent}'" for agent in OTHER_AGENTS)

# Each grouping as the SQL expression over ``usage_entries`` that makes its key.
USAGE_GROUPS = {
    "day": "substr(timestamp, 1, 10)",
    "week": "date(timestamp, '-6 days', 'weekday 1')",
    "month": "substr(timestamp, 1, 7)",
    "model": "coalesce(provider || '/', '') || coalesce(model, '?')",
    "provider": "coalesce(provider, '?')",
    # A session's project is its working directory (sessions.project_condition).
    "project": "cwd",
    "session": "session_id",
    "agent": "agent",
    # A subagent's or fork's usage under the session it came from (one level up: a Claude
    # subagent file, a Codex fork or spawned thread), its replayed prefix not counted again.
    "root-session": "coalesce(parent_session_id, session_id)",
}


@dataclass(frozen=True, slots=True)
class UsageRow:
    key: str | None
    entries: int
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cost: float
    # One key per grouping when usage was grouped by several (``key`` then joins them).
    keys: tuple[str | None, ...] = ()
    # Entries whose cost the index estimated (Claude Code and Codex write none:
    # agents/pricing.py), and entries of a model without a price (their cost is not in ``cost``).
    estimated: int = 0
    unpriced: int = 0


def usage_rows(
    connection: apsw.Connection,
    by: str | Sequence[str],
    since: datetime | str | None,
    until: datetime | str | None,
    agents: Collection[str] | None = None,
) -> list[UsageRow]:
    """Token and cost sums per group of ``by`` (one grouping or several), in key order;
    ``agents``: only the usage of these agents' sessions."""
    groups = usage_groups(by, USAGE_GROUPS)
    conditions, arguments = [], []
    for operator, bound in ((">=", since), ("<", until)):
        if bound is not None:
            conditions.append(f"timestamp {operator} ?")
            arguments.append(iso_bound(bound))
    agents_only = agents_condition("agent", agents)
    if agents_only is not None:
        conditions.append(agents_only[0])
        arguments += agents_only[1]
    where = " WHERE " + " AND ".join(conditions) if conditions else ""
    keys = ", ".join(f"{USAGE_GROUPS[group]} AS key{number}" for number, group in enumerate(groups))
    names = ", ".join(f"key{number}" for number in range(len(groups)))
    rows = connection.execute(
        f"SELECT {keys}, count(*), sum(input_tokens), sum(output_tokens),"
        " sum(cache_read_tokens), sum(cache_write_tokens), total(cost),"
        f" sum(agent IN ({_ESTIMATED}) AND cost IS NOT NULL), sum(cost IS NULL)"
        f" FROM usage_entries{where} GROUP BY {names} ORDER BY {names}",
        arguments,
    )
    width = len(groups)
    return [
        UsageRow(
            joined_key(row[:width]),
            *row[width : width + 6],
            keys=tuple(row[:width]),
            estimated=row[width + 6],
            unpriced=row[width + 7],
        )
        for row in rows
    ]


def usage_groups(by: str | Sequence[str], known: Collection[str]) -> list[str]:
    """The groupings of ``by`` (one or several), each once, in order; ValueError for one not
    ``known``."""
    groups = list(dict.fromkeys([by] if isinstance(by, str) else by))
    if not groups or any(group not in known for group in groups):
        raise ValueError(f"by must be one or more of {', '.join(known)}")
    return groups


def joined_key(keys: Sequence[str | None]) -> str | None:
    """A usage row's key: its one grouping's, or each grouping's joined with `` · ``."""
    if len(keys) == 1:
        return keys[0]
    return " · ".join("?" if key is None else key for key in keys)
