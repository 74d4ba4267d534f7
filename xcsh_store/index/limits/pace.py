"""When a usage window reaches 100 % at the rate it is being used: the arithmetic of
"at this pace: 100 % on Thu 14:00" or "within limits", with no query and no clock of its own."""

from __future__ import annotations

from datetime import datetime, timedelta

# A rate read over less than this share of a window says little (Codex reads whole percents: 1 %
# a minute after a reset is not a pace of 100 % in the next hour and a half).
MIN_SHARE = 0.1


def full_at(
    used_percent: float,
    percent_per_second: float | None,
    at: datetime,
    resets_at: datetime | None,
) -> datetime | None:
    """When ``used_percent`` (as of ``at``) reaches 100 going up ``percent_per_second``; None
    when it does not before the window resets (within limits) or the rate is unknown or nil.
    A window used up already is full at ``at``."""
    if used_percent >= 100:
        return at
    if percent_per_second is None or percent_per_second <= 0:
        return None
    moment = at + timedelta(seconds=(100 - used_percent) / percent_per_second)
    if resets_at is not None and moment >= resets_at:
        return None
    return moment


def rate_since_start(
    used_percent: float, at: datetime, window_minutes: int | None, resets_at: datetime | None
) -> float | None:
    """Percent per second averaged over the window so far: from its start (its reset less its
    length, when both are known) to ``at``, where ``used_percent`` was read. A window starts at
    0 %, so this is the pace a person would reckon; None when the start is unknown or less
    than MIN_SHARE of the window has passed."""
    if window_minutes is None or resets_at is None:
        return None
    elapsed = (at - (resets_at - timedelta(minutes=window_minutes))).total_seconds()
    return used_percent / elapsed if elapsed >= MIN_SHARE * window_minutes * 60 else None


def rate_between(
    first: tuple[datetime, float], last: tuple[datetime, float], window_minutes: int
) -> float | None:
    """Percent per second from one reading to a later one of the same window (None when they
    are less than MIN_SHARE of the window apart)."""
    seconds = (last[0] - first[0]).total_seconds()
    return (last[1] - first[1]) / seconds if seconds >= MIN_SHARE * window_minutes * 60 else None
