"""Token and cost sums from the index: the groupings ``usage`` offers and the query over the
``usage_entries`` view, which counts an entry copied into a fork once and a session kept in
several files once (migration 0010: the copy in the file modified last counts); and tokens and
cost per entry, what each model response of a session used, on the entry that records it (for
the session page and ``show`` to print beside the assistant's messages)."""

from __future__ import annotations

import itertools
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, tzinfo
from typing import Any

import apsw
import orjson

from xcsh_store.agents.prices.costs import FACTS_SQL, CostFacts
from xcsh_store.index.read.questions import SessionFilter, UsageQuery
from xcsh_store.index.read.sessions import USAGE_FILTER, filter_sql
from xcsh_store.times import parse_iso

# Each grouping (questions.USAGE_GROUPINGS, in that order) as the SQL expression over
# ``usage_entries`` that makes its key.
# Days, weeks (from Monday) and months are the user's: {shift} is the SQL that moves each UTC
# timestamp into the time zone of the query (the local one unless told: zone_shift_sql), as
# --since and --until dates are; SQLite's date() then does the rest, with no Python per row.
USAGE_GROUPS = {
    "day": "date(substr(timestamp, 1, 16), {shift})",
    "week": "date(substr(timestamp, 1, 16), {shift}, '-6 days', 'weekday 1')",
    "month": "substr(date(substr(timestamp, 1, 16), {shift}), 1, 7)",
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


# The costs of a group of no requests (a gap between billing windows).
NO_COSTS = CostFacts()


@dataclass(frozen=True, slots=True)
class UsageRow:
    key: str | None
    entries: int
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    # How the group's costs are known (agents/prices/costs.py): their sum, the estimated, free
    # and unpriced entries, recorded $0s below list price.
    costs: CostFacts = NO_COSTS
    # One key per grouping when usage was grouped by several (``key`` then joins them).
    keys: tuple[str | None, ...] = ()
    # GitHub Copilot CLI's premium requests (its sessions' shutdown totals).
    premium_requests: float = 0
    # The sessions (file ids, or the team index's host and path) with unpriced entries here.
    unpriced_in: frozenset[Any] = frozenset()

    @property
    def cost(self) -> float | None:
        """The sum of the known costs: None when none is known (a lower bound when
        ``unpriced`` is not 0)."""
        return self.costs.cost

    @property
    def cost_kind(self) -> str:
        return self.costs.kind

    @property
    def estimated(self) -> int:
        """Entries whose cost the index estimated at list price."""
        return self.costs.estimated

    @property
    def unpriced(self) -> int:
        """Entries of no cost known (not in ``cost``)."""
        return self.costs.unpriced

    @property
    def tokens(self) -> int:
        """Every token the group's requests sent or received: input, output, cache reads and
        cache writes (the one meaning of "tokens" in every verb and page)."""
        return (
            (self.input_tokens or 0)
            + (self.output_tokens or 0)
            + (self.cache_read_tokens or 0)
            + (self.cache_write_tokens or 0)
        )

    def to_json(self) -> dict[str, Any]:
        """The row as ``usage --json`` prints it (the MCP tool prints the same keys)."""
        return {
            "key": self.key,
            "keys": list(self.keys) if self.keys else [self.key],
            "entries": self.entries,
            "input_tokens": self.input_tokens or 0,
            "output_tokens": self.output_tokens or 0,
            "cache_read_tokens": self.cache_read_tokens or 0,
            "cache_write_tokens": self.cache_write_tokens or 0,
            "total_tokens": self.tokens,
            # cost, cost_kind, cost_at_list_price as a session's (agents/prices/costs.py):
            # cost null when no entry's cost is known, a lower bound when unpriced_entries is
            # not 0. Most agents write no costs (Claude Code, Codex, …): theirs are the index's
            # estimates (agents/prices/pricing.py).
            **self.costs.to_json(),
            "estimated_cost_entries": self.estimated,
            "unpriced_entries": self.unpriced,
            "unpriced_sessions": len(self.unpriced_in),
            "premium_requests": self.premium_requests,
        }


def usage_total(rows: Sequence[UsageRow]) -> UsageRow:
    """The sums of ``rows`` (its unpriced sessions each counted once)."""
    costs = sum((row.costs for row in rows), CostFacts())
    return UsageRow(
        key=None,
        entries=sum(row.entries for row in rows),
        input_tokens=sum(row.input_tokens or 0 for row in rows),
        output_tokens=sum(row.output_tokens or 0 for row in rows),
        cache_read_tokens=sum(row.cache_read_tokens or 0 for row in rows),
        cache_write_tokens=sum(row.cache_write_tokens or 0 for row in rows),
        costs=costs,
        premium_requests=sum(row.premium_requests for row in rows),
        unpriced_in=frozenset().union(*(row.unpriced_in for row in rows)),
    )


# After the keys, what each usage query of either index selects, in usage_row's order: the
# four token sums, the cost facts (FACTS_SQL: the entries first), the premium requests and the
# sessions with unpriced entries (a JSON array).
USAGE_SUMS_SQL = (
    "sum(input_tokens), sum(output_tokens), sum(cache_read_tokens), sum(cache_write_tokens),"
    f" {FACTS_SQL}, total(premium_requests),"
    " json_group_array(DISTINCT session) FILTER (WHERE cost IS NULL)"
)


def usage_rows(connection: apsw.Connection, query: UsageQuery) -> list[UsageRow]:
    """Token and cost sums per group of ``query.by`` (one grouping or several), in key order,
    of the entries ``query.filter`` keeps; days, weeks and months in ``query.zone`` (default:
    the local one)."""
    groups = usage_groups(query.by, USAGE_GROUPS)
    shift = zone_shift_sql(connection, query.zone) if {"day", "week", "month"} & {*groups} else ""
    conditions, arguments = filter_sql(query.filter, USAGE_FILTER)
    where = " WHERE " + " AND ".join(conditions) if conditions else ""
    keys = ", ".join(
        f"{USAGE_GROUPS[group].format(shift=shift)} AS key{number}"
        for number, group in enumerate(groups)
    )
    names = ", ".join(f"key{number}" for number in range(len(groups)))
    rows = connection.execute(
        f"SELECT {keys}, {USAGE_SUMS_SQL}"
        f" FROM usage_entries{where} GROUP BY {names} ORDER BY {names}",
        arguments,
    )
    return [usage_row(row, len(groups)) for row in rows]


def usage_row(row: Sequence[Any], width: int) -> UsageRow:
    """A row of a usage query of either index: ``width`` keys, then USAGE_SUMS_SQL's values
    (the sessions with unpriced entries as a JSON array, or a list)."""
    input_tokens, output_tokens, cache_read, cache_write = (
        int(value or 0) for value in row[width : width + 4]
    )
    costs = CostFacts.of_row(row[width + 4 : width + 11])
    premium, unpriced_in = row[width + 11 : width + 13]
    if isinstance(unpriced_in, str):
        unpriced_in = orjson.loads(unpriced_in)
    return UsageRow(
        joined_key(row[:width]), costs.requests, input_tokens, output_tokens, cache_read,
        cache_write, costs, keys=tuple(row[:width]), premium_requests=float(premium or 0),
        unpriced_in=frozenset(tuple(item) if isinstance(item, list) else item
                              for item in unpriced_in or ()),
    )  # fmt: skip


def zone_shift_sql(connection: apsw.Connection, zone: tzinfo | None) -> str:
    """The SQLite date modifier (``'+3600 seconds'``) that moves a UTC ``timestamp`` of
    ``usage_entries`` into ``zone`` (None: the local zone, $TZ's), as an SQL expression.

    A zone's offset changes on the hour (UTC), a few times a year: the offset of each span of
    hours between two changes, over the hours the index's entries cover (the ends of the
    ``entries_timestamp`` index), is one branch of a CASE on the timestamp's UTC hour."""
    # (With the rows of the files whose entries are still to come: migration 0018.)
    ((first, last),) = connection.execute(
        "SELECT min((SELECT min(timestamp) FROM entries WHERE timestamp >= '0001'),"
        " coalesce((SELECT min(timestamp) FROM usage_lines WHERE timestamp >= '0001'), '9')),"
        " max((SELECT max(timestamp) FROM entries WHERE timestamp < ':'),"
        " coalesce((SELECT max(timestamp) FROM usage_lines WHERE timestamp < ':'), ''))"
    )
    start, end = _utc_hour(first), _utc_hour(last)
    if start is None or end is None:
        return _modifier(_offset(datetime.now(UTC).replace(minute=0, second=0), zone))
    changes = _offset_changes(start, end, zone)
    if len(changes) == 1:
        return _modifier(changes[0][1])
    # The UTC hour as 'YYYY-MM-DDTHH' whatever separates a stored timestamp's date and time.
    hour = "substr(timestamp, 1, 10) || 'T' || substr(timestamp, 12, 2)"
    branches = " ".join(
        f"WHEN {hour} < '{since:%Y-%m-%dT%H}' THEN {_modifier(offset)}"
        for (_, offset), (since, _) in itertools.pairwise(changes)
    )
    return f"CASE {branches} ELSE {_modifier(changes[-1][1])} END"


def _utc_hour(timestamp: str | None) -> datetime | None:
    moment = parse_iso(timestamp[:13] + ":00:00+00:00") if timestamp else None
    return None if moment is None else moment.astimezone(UTC)


def _offset(utc_hour: datetime, zone: tzinfo | None) -> int:
    """``zone``'s offset from UTC in seconds at ``utc_hour``."""
    offset = utc_hour.astimezone(zone).utcoffset()
    return 0 if offset is None else int(offset.total_seconds())


def _offset_changes(
    start: datetime, end: datetime, zone: tzinfo | None
) -> list[tuple[datetime, int]]:
    """(the UTC hour from which it holds, offset) for each offset ``zone`` has from ``start`` to
    ``end``: a look at each day, and the hour of a change found by halving the day it is in
    (two changes within one day, which no zone makes, would be seen as none)."""
    changes = [(start, _offset(start, zone))]
    before = start
    while before < end:
        after = min(before + timedelta(days=1), end)
        if _offset(after, zone) != changes[-1][1]:
            low, high = before, after  # the offset changes after low, by high
            while high - low > timedelta(hours=1):
                middle = low + timedelta(hours=(high - low) // timedelta(hours=2))
                low, high = (
                    (middle, high) if _offset(middle, zone) == changes[-1][1] else (low, middle)
                )
            changes.append((high, _offset(high, zone)))
        before = after
    return changes


def _modifier(seconds: int) -> str:
    return f"'{seconds:+d} seconds'"


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


# -- charts ---------------------------------------------------------------------------------
# What a usage chart draws, the same in the terminal and in the HTML page of ``usage --html``:
# one bar per row, its four kinds of tokens stacked and its cost.


@dataclass(frozen=True, slots=True)
class UsageBar:
    label: str
    values: tuple[float, float, float, float]  # input, output, cache read, cache write
    cost: float

    @property
    def total(self) -> float:
        return sum(self.values)

    def measure(self, metric: str) -> float:
        """What a bar of ``metric`` (tokens or cost) measures."""
        return self.cost if metric == "cost" else self.total


def _bar(row: UsageRow) -> UsageBar:
    return UsageBar(
        row.key if row.key is not None else "?",
        (
            row.input_tokens or 0,
            row.output_tokens or 0,
            row.cache_read_tokens or 0,
            row.cache_write_tokens or 0,
        ),
        row.cost or 0.0,
    )


def next_period_key(key: str, by: str) -> str:
    """The key of the day, week (its Monday) or month (``YYYY-MM``) after ``key``."""
    if by == "month":
        year, month = (int(part) for part in key.split("-"))
        return f"{year + month // 12:04d}-{month % 12 + 1:02d}"
    return (date.fromisoformat(key) + timedelta(days=7 if by == "week" else 1)).isoformat()


# Filling gaps stops here (about 13 years of days); a longer span is drawn without filling.
MAX_FILLED_BARS = 5000


def usage_bars(rows: Sequence[UsageRow], by: str) -> list[UsageBar]:
    """One bar per row; for day/week/month the quiet periods in between are filled with zeros,
    so the time axis is honest."""
    bars = [_bar(row) for row in rows]
    if by not in ("day", "week", "month") or len(bars) < 2:
        return bars
    by_key = {bar.label: bar for bar in bars}
    keys = sorted(by_key)
    if not all(key[:1].isdigit() for key in keys):
        return bars  # entries without a timestamp have no place on a time axis
    filled: list[UsageBar] = []
    key = keys[0]
    try:
        while key <= keys[-1] and len(filled) < MAX_FILLED_BARS:
            filled.append(by_key.get(key, UsageBar(key, (0, 0, 0, 0), 0.0)))
            key = next_period_key(key, by)
    except ValueError:
        return bars
    return filled if key > keys[-1] else bars


@dataclass(frozen=True, slots=True)
class DuplicateSession:
    """A session id that several files hold with the same requests: ``counted`` is the file
    whose usage counts, ``copies`` the others (whose usage does not)."""

    session_id: str
    counted: str
    copies: tuple[str, ...]
    entries: int


def duplicate_sessions(connection: apsw.Connection) -> list[DuplicateSession]:
    """Sessions whose usage is in several files (a migrated or restored copy): each counted
    once, in the file ``counted`` names."""
    rows = list(
        connection.execute(
            "WITH shared AS (SELECT session_id FROM sessions GROUP BY session_id"
            " HAVING count(*) > 1),"
            " per_file AS (SELECT s.session_id, s.path, s.modified_at,"
            " (SELECT count(*) FROM entries AS e WHERE e.session = s.file_id"
            "  AND e.input_tokens IS NOT NULL) AS used,"
            " (SELECT count(*) FROM usage_entries AS u WHERE u.session = s.file_id) AS counted"
            " FROM sessions AS s JOIN shared USING (session_id))"
            " SELECT session_id, path, used, counted FROM per_file WHERE used > 0"
            " ORDER BY session_id, modified_at DESC, path"
        )
    )
    found = []
    for session_id in dict.fromkeys(row[0] for row in rows):
        files = [row for row in rows if row[0] == session_id]
        copies = tuple(path for _id, path, used, counted in files if counted < used)
        kept = [row for row in files if row[1] not in copies]
        if copies and kept:
            found.append(DuplicateSession(session_id, kept[0][1], copies, kept[0][3]))
    return found


# -- billing windows ------------------------------------------------------------------------

# Claude's usage limits count in windows of five hours from the first request of a window.
BLOCK_HOURS = 5


@dataclass(frozen=True, slots=True)
class BillingBlock:
    """One billing window, as ccusage's ``blocks`` finds them: it starts at its first
    request's hour (UTC) and lasts BLOCK_HOURS; a request past its end, or more than
    BLOCK_HOURS after the one before, starts the next. ``gap`` blocks stand for the idle time
    between two windows more than BLOCK_HOURS apart (no requests)."""

    start: datetime
    end: datetime
    first: datetime | None  # the first and last requests in it (None for a gap)
    last: datetime | None
    active: bool  # its end is still to come, and its last request less than BLOCK_HOURS ago
    gap: bool
    usage: UsageRow  # its sums, keyed by its start (UTC ISO, to the minute)
    models: tuple[str, ...] = ()
    now: datetime | None = None  # the time ``active`` and the projection are measured at

    @property
    def minutes(self) -> float:
        """Minutes from its first request to its last (ccusage's burn-rate span)."""
        if self.first is None or self.last is None:
            return 0.0
        return (self.last - self.first).total_seconds() / 60

    @property
    def tokens_per_minute(self) -> float | None:
        """Every token of its requests per minute of activity (None: a single moment)."""
        return self.usage.tokens / self.minutes if self.minutes > 0 else None

    @property
    def cost_per_hour(self) -> float | None:
        if self.minutes <= 0:
            return None
        return (self.usage.cost or 0.0) / self.minutes * 60

    @property
    def remaining_minutes(self) -> float:
        """Minutes left until its end (0 when it is not active)."""
        if not self.active or self.now is None:
            return 0.0
        return max(0.0, (self.end - self.now).total_seconds() / 60)

    @property
    def projected_tokens(self) -> int | None:
        """Its tokens at its end if requests go on at its burn rate (active windows only)."""
        rate = self.tokens_per_minute
        if not self.active or rate is None:
            return None
        return round(self.usage.tokens + rate * self.remaining_minutes)

    @property
    def projected_cost(self) -> float | None:
        rate = self.cost_per_hour
        if not self.active or rate is None:
            return None
        return (self.usage.cost or 0.0) + rate / 60 * self.remaining_minutes


def billing_blocks(
    connection: apsw.Connection,
    filters: SessionFilter,
    now: datetime | None = None,
    hours: int = BLOCK_HOURS,
) -> list[BillingBlock]:
    """The billing windows of the requests of ``filters`` (as usage reads it: the entries in
    its span), oldest first, with a gap block between two windows more than ``hours`` apart;
    ``now`` (default: the clock) decides which window is active."""
    now = now or datetime.now(UTC)
    length = timedelta(hours=hours)
    conditions, arguments = filter_sql(filters, USAGE_FILTER)
    conditions.append("timestamp IS NOT NULL")
    rows = list(
        connection.execute(
            # Each request's cost facts as a group's are summed (a group of one request).
            "SELECT timestamp, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens,"
            f" json_array({FACTS_SQL}), coalesce(provider || '/', '') || coalesce(model, '?'),"
            f" session FROM usage_entries WHERE {' AND '.join(conditions)} GROUP BY pk",
            arguments,
        )
    )
    requests = sorted((moment, row) for row in rows if (moment := parse_iso(row[0])) is not None)
    blocks: list[BillingBlock] = []
    window: list[tuple[datetime, tuple[Any, ...]]] = []
    for moment, row in requests:
        if window and (moment - _hour_of(window[0][0]) > length or moment - window[-1][0] > length):
            blocks.append(_block(window, length, now))
            if moment - window[-1][0] > length:
                blocks.append(_gap(window[-1][0] + length, moment, now))
            window = []
        window.append((moment, row))
    if window:
        blocks.append(_block(window, length, now))
    return blocks


def _block(
    window: list[tuple[datetime, tuple[Any, ...]]], length: timedelta, now: datetime
) -> BillingBlock:
    start = _hour_of(window[0][0])
    end = start + length
    first, last = window[0][0], window[-1][0]
    facts = [CostFacts.of_row(orjson.loads(row[5])) for _moment, row in window]
    usage = UsageRow(
        key=start.strftime("%Y-%m-%dT%H:%MZ"),
        entries=len(window),
        input_tokens=sum(row[1] or 0 for _moment, row in window),
        output_tokens=sum(row[2] or 0 for _moment, row in window),
        cache_read_tokens=sum(row[3] or 0 for _moment, row in window),
        cache_write_tokens=sum(row[4] or 0 for _moment, row in window),
        costs=sum(facts, CostFacts()),
        unpriced_in=frozenset(
            row[7] for (_moment, row), known in zip(window, facts, strict=True) if known.unpriced
        ),
    )
    active = now - last < length and now < end
    models = tuple(dict.fromkeys(row[6] for _moment, row in window))
    return BillingBlock(start, end, first, last, active, False, usage, models, now)


def _hour_of(moment: datetime) -> datetime:
    """The start of the UTC hour of ``moment`` (a zone's offset may not be whole hours)."""
    return moment.astimezone(UTC).replace(minute=0, second=0, microsecond=0)


def _gap(start: datetime, end: datetime, now: datetime) -> BillingBlock:
    empty = UsageRow(start.strftime("%Y-%m-%dT%H:%MZ"), 0, 0, 0, 0, 0)
    return BillingBlock(start, end, None, None, False, True, empty, (), now)


# --------------------------------------------------------------------------------------------
# Per entry


@dataclass(frozen=True, slots=True)
class EntryUsage:
    """The usage one model response recorded: its input split as the agent reported it, its
    output, and its cost (None: no price source knows its model)."""

    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cost: float | None

    @property
    def context_tokens(self) -> int:
        """The context the model read for the response: new input and cache, read or written."""
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens


def entry_usage(connection: apsw.Connection, file_id: int) -> dict[str, EntryUsage]:
    """Entry id -> its usage, for the entries of the file that carry one. The lines of one
    response (Claude streams one as several lines, Codex writes a token_count twice) share a
    usage key and only the last of them keeps the figures (migration 0009): each response is
    counted once, on that line."""
    rows = connection.execute(
        "SELECT id, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost"
        " FROM entries WHERE session = ? AND id IS NOT NULL AND input_tokens IS NOT NULL"
        " ORDER BY seq",
        (file_id,),
    )
    return {
        entry_id: EntryUsage(
            inputs or 0, outputs or 0, reads or 0, writes or 0, None if cost is None else cost
        )
        for entry_id, inputs, outputs, reads, writes, cost in rows
    }


def plus(first: EntryUsage | None, second: EntryUsage) -> EntryUsage:
    """The usage of two responses together (a cost unknown in either is unknown)."""
    if first is None:
        return second
    cost = None if first.cost is None or second.cost is None else first.cost + second.cost
    return EntryUsage(
        first.input_tokens + second.input_tokens,
        first.output_tokens + second.output_tokens,
        first.cache_read_tokens + second.cache_read_tokens,
        first.cache_write_tokens + second.cache_write_tokens,
        cost,
    )


def usage_by_response(
    responses: Sequence[tuple[object, bool]],
    shown: Sequence[bool],
    usage: Mapping[str, EntryUsage],
) -> dict[str, EntryUsage]:
    """Entry id -> the usage a view shows beside it, for entries in branch order given as
    (id, is an assistant message) and whether the view shows them: on each shown assistant
    message, the usage of the entries from it up to the next one (Codex records a response's
    tokens in a token_count event after the call's output, a record views leave out). Usage
    before the first shown assistant message has no row to go to."""
    used: dict[str, EntryUsage] = {}
    holder: str | None = None
    for (entry_id, assistant), keep in zip(responses, shown, strict=True):
        if keep and assistant:
            holder = entry_id if isinstance(entry_id, str) else None
        own = usage.get(entry_id) if isinstance(entry_id, str) else None
        if own is not None and holder is not None:
            used[holder] = plus(used.get(holder), own)
    return used
