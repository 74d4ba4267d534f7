"""Argument types shared by verbs: points in time (``--since``) and durations (``--grace``)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import click

_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)\s*([smhdw])", re.IGNORECASE)
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


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
    return timedelta(seconds=seconds)


class Duration(click.ParamType):
    """A length of time: ``30m``, ``1h``, ``2d``, ``1w`` or combinations such as ``1h30m``."""

    name = "duration"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, timedelta):
            return value
        try:
            return parse_duration(str(value))
        except ValueError as error:
            self.fail(str(error), param, ctx)


def parse_time_bound(text: str, now: datetime | None = None) -> str:
    """A point in time as an index timestamp (ISO 8601 UTC, milliseconds, ``Z``).

    Accepts a date (``2026-11-01``, local midnight), a date and time (local unless it has an
    offset or ``Z``), or an age such as ``7d`` / ``12h`` meaning that long before now.
    """
    stripped = text.strip()
    now = now or datetime.now(UTC)
    try:
        moment = now - parse_duration(stripped)
    except ValueError:
        try:
            moment = datetime.fromisoformat(stripped.replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(
                f"{text!r} is not a date (2026-11-01), a time (2026-11-01T09:30) "
                "or an age (7d, 12h)"
            ) from None
        if moment.tzinfo is None:
            moment = moment.astimezone()  # the local zone, as people type dates
    text_utc = moment.astimezone(UTC).isoformat(timespec="milliseconds")
    return text_utc.replace("+00:00", "Z")


class TimeBound(click.ParamType):
    """``2026-11-01``, ``2026-11-01T09:30``, or an age such as ``7d`` (that long ago)."""

    name = "time"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        try:
            return parse_time_bound(str(value))
        except ValueError as error:
            self.fail(str(error), param, ctx)


since_option = click.option(
    "--since", type=TimeBound(), help="Only from this time on: 2026-11-01, 2026-11-01T09:30, 7d."
)
until_option = click.option(
    "--until", type=TimeBound(), help="Only before this time (same forms as --since)."
)
