"""Time formats: ISO 8601 UTC with milliseconds and ``Z`` (JavaScript's ``toISOString``), and
reading timestamps back the way JavaScript's ``Date`` does."""

from __future__ import annotations

import time
from datetime import UTC, datetime
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
