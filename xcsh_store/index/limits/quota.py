"""Each agent's usage-limit windows: how much of each is used, when it resets, and when it is
full at the pace it is used.

Two sources:

* **Readings.** Agents that write the provider's own figures into their files (Codex's
  ``rate_limits``: quota_observations) say each window's percent used, its length and its
  reset. The newest reading of each window (an agent's limit, by its length, else by its slot)
  is its state; its pace is the average since the window began (its reset less its length).
  A reading whose window has reset since says so, and how old it is: what is used of the new
  window is not known until the agent reads it again.
* **Token windows.** Claude Code's files hold no readings: its five-hour window is the active
  billing block (``usage --by block``) and its week the last seven days, each in tokens
  against a limit from the config file (``[quota.claude]``) or, by default, calibrated from
  history as the largest earlier window of that length (ccusage's ``--token-limit max``).
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import apsw

from xcsh_store.glance.settings import Limits
from xcsh_store.index.limits.pace import full_at, rate_between, rate_since_start
from xcsh_store.index.read.questions import SessionFilter
from xcsh_store.index.read.usage import BLOCK_HOURS, billing_blocks
from xcsh_store.times import iso_millis, parse_iso

FIVE_HOURS = BLOCK_HOURS * 60
WEEK = 7 * 24 * 60
# A reading older than this is shown with its age (a statusline refreshes every few seconds;
# a quota a quarter of an hour old may have moved).
FRESH_SECONDS = 15 * 60
# Agents whose windows are token totals of their requests, and the config key of each window.
TOKEN_WINDOW_AGENTS = ("claude",)


@dataclass(frozen=True, slots=True)
class QuotaWindow:
    """One usage-limit window of one agent, as of ``observed_at``."""

    agent: str
    window_minutes: int | None
    slot: str  # the agent's name of it ('primary'), or 'five_hour' / 'weekly'
    used_percent: float | None  # None: no limit known to measure against
    resets_at: datetime | None
    observed_at: datetime
    now: datetime
    source: str  # 'reading', 'configured' or 'calibrated'
    full_at: datetime | None = None  # at this pace, when it is used up (None: within limits)
    limit_id: str | None = None
    plan_type: str | None = None
    session_id: str | None = None  # the session whose file holds the reading
    used_tokens: int | None = None  # token windows: what is used and the limit
    limit_tokens: int | None = None
    host: str | None = None
    # Whether a rate was measured (too early in a window, or a single reading, says nothing).
    rated: bool = True

    @property
    def label(self) -> str:
        minutes = self.window_minutes
        if minutes == FIVE_HOURS:
            return "5-hour"
        if minutes == WEEK:
            return "weekly"
        if minutes is None:
            return self.slot
        return f"{minutes // 60}-hour" if minutes % 60 == 0 else f"{minutes}-minute"

    @property
    def age_seconds(self) -> float:
        return max(0.0, (self.now - self.observed_at).total_seconds())

    @property
    def reset_since(self) -> bool:
        """The reading's window ended after it was read: its percent is of a past window."""
        return self.resets_at is not None and self.resets_at <= self.now

    @property
    def stale(self) -> bool:
        return self.reset_since or self.age_seconds > FRESH_SECONDS

    @property
    def pace(self) -> str:
        """'full' (used up now), 'will fill' (before the reset, at this pace), 'within
        limits', or 'unknown' (no limit, no rate, or a window that has reset)."""
        if self.used_percent is None or self.reset_since:
            return "unknown"
        if self.used_percent >= 100:
            return "full"
        if not self.rated:
            return "unknown"
        return "will fill" if self.full_at is not None else "within limits"

    def pace_words(self, when: Callable[[datetime | None], str]) -> str:
        """The pace for people, times as ``when`` writes them: "at this pace: 100 % on Thu
        14:00", "within limits", "full until …", or what is not known."""
        if self.reset_since:
            return f"reset {when(self.resets_at)}: not read since"
        if self.used_percent is None:
            return "no limit known (set one: docs/quota.md)"
        if self.pace == "full":
            return f"full until {when(self.resets_at)}".rstrip()
        if self.pace == "will fill":
            return f"at this pace: 100 % on {when(self.full_at)}"
        if self.pace == "unknown":
            return "too early in the window for a pace"
        return "within limits"

    def to_json(self) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "window": self.label,
            "window_minutes": self.window_minutes,
            "slot": self.slot,
            "used_percent": _rounded(self.used_percent),
            "resets_at": _iso(self.resets_at),
            "observed_at": _iso(self.observed_at),
            "age_seconds": round(self.age_seconds),
            "stale": self.stale,
            "reset_since": self.reset_since,
            "pace": self.pace,
            "full_at": _iso(self.full_at),
            "source": self.source,
            "limit_id": self.limit_id,
            "plan_type": self.plan_type,
            "session_id": self.session_id,
            "used_tokens": self.used_tokens,
            "limit_tokens": self.limit_tokens,
            "host": self.host,
        }


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else iso_millis(moment)


def quota_windows(
    connection: apsw.Connection,
    limits: Limits,
    now: datetime | None = None,
    agents: tuple[str, ...] = (),
) -> list[QuotaWindow]:
    """Every agent's windows (of ``agents``, or all), by agent and window length."""
    now = now or datetime.now(UTC)
    host = socket.gethostname()
    windows = [
        window
        for window in reading_windows(connection, now, host)
        if not agents or window.agent in agents
    ]
    for agent in TOKEN_WINDOW_AGENTS:
        if not agents or agent in agents:
            windows += token_windows(connection, agent, limits, now, host)
    return sorted(windows, key=lambda w: (w.agent, w.window_minutes or 0, w.slot))


# -- readings --------------------------------------------------------------------------------

# The newest reading of each window: an agent's limit, by its length (or slot when it has
# none). SQLite takes the bare columns of a max() group from its row.
_NEWEST = """
SELECT f.agent, q.limit_id, q.window_minutes, q.slot, max(q.observed_at), q.used_percent,
    q.resets_at, q.plan_type, s.session_id
FROM quota_observations AS q
JOIN files AS f ON f.id = q.file_id
LEFT JOIN sessions AS s ON s.file_id = q.file_id
GROUP BY f.agent, coalesce(q.limit_id, f.agent), coalesce(q.window_minutes, q.slot)
"""
# The first reading of a window that does not say when it resets, one window length back.
_FIRST_OF_WINDOW = """
SELECT min(q.observed_at), q.used_percent
FROM quota_observations AS q
JOIN files AS f ON f.id = q.file_id
WHERE f.agent = ? AND coalesce(q.limit_id, f.agent) = ?
    AND coalesce(q.window_minutes, q.slot) = ? AND q.observed_at >= ?
"""


def reading_windows(
    connection: apsw.Connection, now: datetime, host: str | None = None
) -> list[QuotaWindow]:
    """The windows the agents' own readings tell of."""

    def first(agent: str, limit_id: str, window: int | str, since: str) -> Any:
        return connection.execute(_FIRST_OF_WINDOW, (agent, limit_id, window, since)).fetchone()

    rows: list[Any] = connection.execute(_NEWEST).fetchall()
    windows = (reading_window(row, now, host, first) for row in rows)
    return [window for window in windows if window is not None]


# The first reading of a window since a moment: (its time, its percent), or None; asked with
# the agent, its limit (the agent's name when it gives none), the window (its length, else
# its slot) and the moment (UTC ISO).
FirstReading = Callable[[str, str, "int | str", str], Any]


def reading_window(
    row: Sequence[Any], now: datetime, host: str | None, first: FirstReading
) -> QuotaWindow | None:
    """The window the newest reading ``row`` tells of (agent, limit_id, window_minutes, slot,
    observed_at, used_percent, resets_at, plan_type, session_id), with its pace; ``first``
    answers the slope of a window that does not say when it resets. None: a reading without a
    time. The team index reads its rows with the same arithmetic (TeamIndex.quota)."""
    agent, limit_id, minutes, slot, observed_text, used, resets_text, plan, session = row
    observed = parse_iso(observed_text)
    if observed is None:
        return None
    resets = parse_iso(resets_text) if resets_text else None
    rate = rate_since_start(used, observed, minutes, resets)
    if resets is None:
        # No start to count from: the slope since the window's first reading (a window
        # that resets says when it started: too early in it is too early for any slope).
        since = iso_millis(observed - timedelta(minutes=minutes or FIVE_HOURS))
        found = first(agent, limit_id or agent, minutes if minutes is not None else slot, since)
        first_at = parse_iso(found[0]) if found and found[0] else None
        if first_at is not None and found[1] <= used:
            rate = rate_between((first_at, found[1]), (observed, used), minutes or FIVE_HOURS)
    return QuotaWindow(
        agent,
        minutes,
        slot,
        used,
        resets,
        observed,
        now,
        "reading",
        full_at(used, rate, observed, resets),
        limit_id,
        plan,
        session,
        host=host,
        rated=rate is not None,
    )


# -- token windows ---------------------------------------------------------------------------


def token_windows(
    connection: apsw.Connection, agent: str, limits: Limits, now: datetime, host: str | None
) -> list[QuotaWindow]:
    """An agent's five-hour window (its active billing block) and its last seven days, in
    tokens against the configured or calibrated limits; none for an agent without requests."""
    blocks = [block for block in billing_blocks(connection, SessionFilter(agents=(agent,)), now)]
    worked = [block for block in blocks if not block.gap]
    if not worked:
        return []
    windows = []
    # (A block of requests after ``now``, as when asking about a past moment, is not it.)
    active = next((block for block in worked if block.active and block.start <= now), None)
    configured = limits.window_limit(agent, "five_hour_tokens")
    earlier = [block.usage.tokens for block in worked if block is not active]
    limit = configured or (max(earlier) if earlier else None)
    source = "configured" if configured else "calibrated"
    used = active.usage.tokens if active is not None else 0
    percent = used / limit * 100 if limit else None
    resets = active.end if active is not None else None
    rate = active.tokens_per_minute if active is not None else None
    per_second = rate / 60 / limit * 100 if rate and limit else None
    windows.append(
        QuotaWindow(
            agent,
            FIVE_HOURS,
            "five_hour",
            percent,
            resets,
            now,
            now,
            source,
            full_at(percent, per_second, now, resets) if percent is not None else None,
            used_tokens=used,
            limit_tokens=limit,
            host=host,
            rated=per_second is not None or used == 0,
        )
    )
    windows.append(_week(connection, agent, limits, now, host))
    return windows


def _week(
    connection: apsw.Connection, agent: str, limits: Limits, now: datetime, host: str | None
) -> QuotaWindow:
    """The last seven days (rolling: the files do not say when Claude's week resets), against
    the largest seven days before them; its pace is the last day's rate, and the days rolling
    out of the window are not counted off (the estimate errs towards a warning)."""
    week = timedelta(days=7)
    start = now - week
    rows: list[Any] = connection.execute(
        "SELECT timestamp, coalesce(input_tokens, 0) + coalesce(output_tokens, 0)"
        " + coalesce(cache_read_tokens, 0) + coalesce(cache_write_tokens, 0)"
        " FROM usage_entries WHERE agent = ? AND timestamp IS NOT NULL AND timestamp < ?",
        (agent, iso_millis(now)),
    ).fetchall()
    used = 0
    last_day = 0
    earlier: dict[int, int] = {}
    for timestamp, tokens in rows:
        moment = parse_iso(timestamp)
        if moment is None:
            continue
        if moment >= start:
            used += tokens
            last_day += tokens if moment >= now - timedelta(days=1) else 0
        else:
            weeks_back = int((start - moment) / week) + 1
            earlier[weeks_back] = earlier.get(weeks_back, 0) + tokens
    configured = limits.window_limit(agent, "weekly_tokens")
    limit = configured or (max(earlier.values()) if earlier else None)
    percent = used / limit * 100 if limit else None
    per_second = last_day / 86_400 / limit * 100 if limit else None
    return QuotaWindow(
        agent,
        WEEK,
        "weekly",
        percent,
        None,
        now,
        now,
        "configured" if configured else "calibrated",
        full_at(percent, per_second, now, now + week) if percent is not None else None,
        used_tokens=used,
        limit_tokens=limit,
        host=host,
    )
