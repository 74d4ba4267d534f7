"""Token and cost sums from the index: the groupings ``usage`` offers and the query over the
``usage_entries`` view (which counts an entry copied into a fork once)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import apsw

# Each grouping as the SQL expression over ``usage_entries`` that makes its key.
USAGE_GROUPS = {
    "day": "substr(timestamp, 1, 10)",
    "week": "date(timestamp, '-6 days', 'weekday 1')",
    "month": "substr(timestamp, 1, 7)",
    "model": "coalesce(provider || '/', '') || coalesce(model, '?')",
    "provider": "coalesce(provider, '?')",
    "project": "project_dir",
    "session": "session_id",
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


def usage_rows(
    connection: apsw.Connection,
    by: str | Sequence[str],
    since: datetime | str | None,
    until: datetime | str | None,
) -> list[UsageRow]:
    """Token and cost sums per group of ``by`` (one grouping or several), in key order."""
    groups = list(dict.fromkeys([by] if isinstance(by, str) else by))
    if not groups or any(group not in USAGE_GROUPS for group in groups):
        raise ValueError(f"by must be one or more of {', '.join(USAGE_GROUPS)}")
    conditions, arguments = [], []
    for operator, bound in ((">=", since), ("<", until)):
        if bound is not None:
            conditions.append(f"timestamp {operator} ?")
            arguments.append(bound if isinstance(bound, str) else _iso(bound))
    where = " WHERE " + " AND ".join(conditions) if conditions else ""
    keys = ", ".join(f"{USAGE_GROUPS[group]} AS key{number}" for number, group in enumerate(groups))
    names = ", ".join(f"key{number}" for number in range(len(groups)))
    rows = connection.execute(
        f"SELECT {keys}, count(*), sum(input_tokens), sum(output_tokens),"
        " sum(cache_read_tokens), sum(cache_write_tokens), sum(cost)"
        f" FROM usage_entries{where} GROUP BY {names} ORDER BY {names}",
        arguments,
    )
    width = len(groups)
    return [
        UsageRow(_joined_key(row[:width]), *row[width:], keys=tuple(row[:width])) for row in rows
    ]


def _joined_key(keys: Sequence[str | None]) -> str | None:
    if len(keys) == 1:
        return keys[0]
    return " · ".join("?" if key is None else key for key in keys)


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
