"""Time formats: ISO 8601 UTC with milliseconds and ``Z`` (JavaScript's ``toISOString``),
reading timestamps back the way JavaScript's ``Date`` does, and the times and durations people
type (``--since 7d``, the MCP tools' ``since``)."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

# Every append stamps its entry; formatting the date part once per second keeps that cheap.
_current_second: tuple[int, str] = (-1, "")


def iso_now() -> str:
    """``new Date().toISOString()``: now in UTC with exactly three fractional digits."""
    global _current_second
    second, millis = divmod(time.time_ns() // 1_000_000, 1000)
    cached_second, prefix = _current_second
    if second != cached_second:
        prefix = datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%S.")
        _current_second = (second, prefix)
    return f"{prefix}{millis:03d}Z"


def iso_millis(moment: datetime | float) -> str:
    """``2026-11-16T09:12:03.123Z`` from a datetime or epoch seconds (``toISOString``).

    A naive datetime is taken as UTC; an aware one is converted to UTC. Raises OverflowError
    when the moment in UTC falls outside the years 1 to 9999.
    """
    if isinstance(moment, (int, float)):
        moment = datetime.fromtimestamp(moment, UTC)
    elif moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    text = moment.astimezone(UTC).isoformat(timespec="milliseconds")
    return text.replace("+00:00", "Z")


def iso_from_millis(value: Any) -> str | None:
    """:func:`iso_millis` of a count of milliseconds since the epoch as an agent records one;
    None when ``value`` is not a number or no time."""
    if type(value) not in (int, float):
        return None
    try:
        return iso_millis(value / 1000)
    except (OverflowError, ValueError, OSError):
        return None


def iso_bound(bound: datetime | str) -> str:
    """A time bound of a query as the ISO text timestamps are compared with: text as given, a
    datetime as :func:`iso_millis`."""
    return bound if isinstance(bound, str) else iso_millis(bound)


def iso_seconds(epoch_seconds: float) -> str:
    """``2026-11-16T09:12:03Z``: for times kept in whole seconds (history.db)."""
    return datetime.fromtimestamp(epoch_seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def is_canonical_iso(text: str) -> bool:
    """Whether ``text`` has the shape of :func:`iso_millis` (``2026-11-16T09:12:03.123Z``, what
    agents write), in which text order is time order: a quick look, no parse."""
    return len(text) == 24 and text[23] == "Z" and text[10] == "T" and text[19] == "."


def canonical_iso(text: str) -> str | None:
    """An ISO 8601 timestamp as :func:`iso_millis` writes it (UTC, milliseconds, ``Z``), so that
    timestamps compare as text; None when it is not one."""
    if is_canonical_iso(text):
        return text
    moment = parse_iso(text.strip())
    if moment is None:
        return None
    try:
        return iso_millis(moment)
    except OverflowError:
        return None


def parse_iso(text: str) -> datetime | None:
    """An ISO 8601 timestamp as an aware datetime (naive read as UTC); None if unreadable."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def timestamp_to_millis(timestamp: Any) -> int | float | None:
    """``new Date(timestamp).getTime()``; None where JavaScript would give NaN.

    ISO strings without an offset are read as UTC (JavaScript would use local time for
    date-times; agents always write UTC with ``Z``).
    """
    if isinstance(timestamp, bool):
        return None
    if isinstance(timestamp, (int, float)):
        return timestamp
    if not isinstance(timestamp, str):
        return None
    moment = parse_iso(timestamp.strip())
    if moment is None:
        return None
    delta = moment - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000


# --------------------------------------------------------------------------------------------
# Typed by people: durations and points in time, each bounded so that no value ends in a
# traceback (the CLI's options and the MCP tools read them alike).

_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)\s*([smhdw])", re.IGNORECASE)
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
# The longest duration or age: 10,000 years (datetime and timedelta end before 10,000 more).
MAX_DAYS = 3_652_425


class DurationTooLongError(ValueError):
    """A duration past :data:`MAX_DAYS` (timedelta and datetime arithmetic would overflow)."""


def parse_duration(text: str) -> timedelta:
    """``30m``, ``1h``, ``2d``, ``1w``, ``1h30m``, ``0s``; a unit is always required."""
    compact = text.strip().lower().replace(" ", "")
    if not compact:
        raise ValueError("empty duration")
    position = 0
    seconds = 0.0
    for match in _DURATION_PART.finditer(compact):
        if match.start() != position:
            break
        seconds += float(match.group(1)) * _UNITS[match.group(2).lower()]
        position = match.end()
    if position != len(compact):
        raise ValueError(f"{text!r} is not a duration like 30m, 1h, 2d or 1h30m")
    if seconds > MAX_DAYS * 86400:
        raise DurationTooLongError(f"{text!r} is longer than {MAX_DAYS:,} days (10,000 years)")
    return timedelta(seconds=seconds)


def parse_time_bound(text: str, now: datetime | None = None, zone: tzinfo | None = None) -> str:
    """A point in time as an index timestamp (ISO 8601 UTC, milliseconds, ``Z``).

    Accepts a date (``2026-11-01``, midnight), a date and time (unless it has an offset or
    ``Z``, in ``zone``: by default the local time zone), or an age such as ``7d`` / ``12h``
    meaning that long before now.
    """
    stripped = text.strip()
    now = now or datetime.now(UTC)
    try:
        age: timedelta | None = parse_duration(stripped)
    except DurationTooLongError:
        raise
    except ValueError:
        age = None  # not an age: a date or a time
    try:
        moment = now - age if age is not None else _parse_moment(text, stripped, zone)
        return iso_millis(moment)
    except OverflowError:
        raise ValueError(f"{text!r} is outside the years 1 to 9999") from None


def _parse_moment(text: str, stripped: str, zone: tzinfo | None) -> datetime:
    try:
        moment = datetime.fromisoformat(stripped.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"{text!r} is not a date (2026-11-01), a time (2026-11-01T09:30) or an age (7d, 12h)"
        ) from None
    # A time without an offset is in the user's zone, as people type dates.
    if moment.tzinfo:
        return moment
    return moment.replace(tzinfo=zone) if zone is not None else moment.astimezone()


def time_order_problem(
    since: str | None, until: str | None, names: tuple[str, str] = ("since", "until")
) -> str | None:
    """What is wrong with a ``since`` after ``until`` (index timestamps, as
    :func:`parse_time_bound` gives them; ``names`` as the caller spells them): nothing could
    match. None when they are in order."""
    # Both are ISO 8601 UTC with milliseconds, so text order is time order.
    if since and until and since > until:
        return f"{names[0]} {since} is after {names[1]} {until}; nothing could match"
    return None
