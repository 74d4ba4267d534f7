"""What a status line shows, from index.db read-only: this session's cost, today's, the
active five-hour window of Claude's requests (used, burn rate, time left) and the newest quota
readings of the agents that write them.

The five-hour window is found as ``usage --by block`` finds it (index/read/usage.py): a window
starts at its first request's hour and lasts five hours; a request past its end, or more than
five hours after the one before, starts the next. Only the requests since the last pause of
more than five hours decide where the active window starts, so only those are read: a day back,
further while the first of them may continue an earlier run.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import apsw

from xcsh_store.glance.usage import of_session, requests_since, since
from xcsh_store.times import iso_millis, parse_iso

BLOCK = timedelta(hours=5)
# How far back the five-hour window's requests are looked for at first, and at most.
FIRST_LOOK = timedelta(days=1)
LONGEST_LOOK = timedelta(days=64)


@dataclass(frozen=True, slots=True)
class ActiveWindow:
    """The five-hour window the last requests are in, while it lasts."""

    start: datetime
    end: datetime
    first: datetime
    last: datetime
    tokens: int
    cost: float
    now: datetime

    @property
    def minutes_left(self) -> float:
        return max(0.0, (self.end - self.now).total_seconds() / 60)

    @property
    def tokens_per_minute(self) -> float | None:
        minutes = (self.last - self.first).total_seconds() / 60
        return self.tokens / minutes if minutes > 0 else None

    @property
    def cost_per_hour(self) -> float | None:
        minutes = (self.last - self.first).total_seconds() / 60
        return self.cost / minutes * 60 if minutes > 0 else None


@dataclass(frozen=True, slots=True)
class Reading:
    """The newest quota reading of one window of an agent (quota_observations)."""

    agent: str
    window_minutes: int | None
    used_percent: float
    resets_at: datetime | None
    observed_at: datetime


@dataclass(slots=True)
class StatusFacts:
    """Everything the status line may show; None where the index does not know."""

    session_cost: float | None = None
    today_cost: float | None = None
    window: ActiveWindow | None = None
    readings: list[Reading] = field(default_factory=list)
    # The transcript holds lines the index has not read yet (its sums lag behind it).
    behind: bool = False


def local_midnight(now: datetime) -> datetime:
    return now.astimezone().replace(hour=0, minute=0, second=0, microsecond=0)


def active_window(
    connection: apsw.Connection, now: datetime, agent: str = "claude"
) -> ActiveWindow | None:
    """The active five-hour window of ``agent``'s requests at ``now``, or None."""
    look = FIRST_LOOK
    while True:
        start = now - look
        rows = [
            (moment, tokens, cost)
            for timestamp, tokens, cost in requests_since(
                connection, iso_millis(start), "agent = ?", agent
            )
            if (moment := parse_iso(timestamp)) is not None and moment <= now
        ]
        # Exact once the first request read follows a pause of more than five hours (none of
        # the requests before ``start`` can then be in its window), or nothing is left to read.
        if not rows or rows[0][0] - start > BLOCK or look >= LONGEST_LOOK:
            break
        look *= 2
    window: list[tuple[datetime, int, float | None]] = []
    for row in rows:
        if window and (row[0] - _hour(window[0][0]) > BLOCK or row[0] - window[-1][0] > BLOCK):
            window = []
        window.append(row)
    if not window:
        return None
    first, last = window[0][0], window[-1][0]
    begin = _hour(first)
    if not (now - last < BLOCK and now < begin + BLOCK):
        return None
    return ActiveWindow(
        begin,
        begin + BLOCK,
        first,
        last,
        sum(tokens for _moment, tokens, _cost in window),
        sum(cost or 0.0 for _moment, _tokens, cost in window),
        now,
    )


def _hour(moment: datetime) -> datetime:
    return moment.astimezone(UTC).replace(minute=0, second=0, microsecond=0)


def newest_readings(connection: apsw.Connection) -> list[Reading]:
    """The newest reading of each window of each agent (none from an index before them)."""
    try:
        rows: list[Any] = connection.execute(
            "SELECT f.agent, q.window_minutes, q.used_percent, q.resets_at, max(q.observed_at)"
            " FROM quota_observations AS q JOIN files AS f ON f.id = q.file_id"
            " GROUP BY f.agent, coalesce(q.limit_id, f.agent), coalesce(q.window_minutes, q.slot)"
            " ORDER BY f.agent, q.window_minutes"
        ).fetchall()
    except apsw.SQLError:  # an index.db of a program before migration 0015
        return []
    found = []
    for agent, minutes, used, resets, observed in rows:
        moment = parse_iso(observed)
        if moment is not None:
            reset = parse_iso(resets) if resets else None
            found.append(Reading(agent, minutes, used, reset, moment))
    return found


def index_behind(connection: apsw.Connection, transcript: str | None) -> bool:
    """Whether the transcript holds bytes the index has not read (a stat, one row)."""
    if not transcript:
        return False
    try:
        size = os.stat(transcript).st_size
    except OSError:
        return False
    row = connection.execute(
        "SELECT indexed_bytes FROM files WHERE path = ?", (transcript,)
    ).fetchone()
    return row is None or row[0] < size


def status_facts(
    connection: apsw.Connection,
    session_id: str | None,
    transcript: str | None,
    now: datetime,
) -> StatusFacts:
    facts = StatusFacts()
    if session_id:
        facts.session_cost = of_session(connection, session_id)
    facts.today_cost = since(connection, iso_millis(local_midnight(now)))[0]
    facts.window = active_window(connection, now)
    facts.readings = newest_readings(connection)
    facts.behind = index_behind(connection, transcript)
    return facts
