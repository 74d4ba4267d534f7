"""Argument types shared by verbs: points in time (``--since``), durations (``--grace``), counts
(``--limit``) and days, each bounded so that no value a person can type ends in a traceback."""

from __future__ import annotations

import math
import os
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import click

from xcsh_store.agents import AGENTS
from xcsh_store.cli.complete import complete_project
from xcsh_store.times import iso_millis

_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)\s*([smhdw])", re.IGNORECASE)
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
# The most a count option takes: far more rows than any store holds, and well inside SQLite's
# 64-bit integers (a limit is passed on to a query, sometimes plus one).
MAX_COUNT = 1_000_000_000
# The longest duration or age: 10,000 years (datetime and timedelta end before 10,000 more).
MAX_DAYS = 3_652_425


def count_type(minimum: int = 0) -> click.IntRange:
    """A count such as ``--limit``: a whole number from ``minimum`` to :data:`MAX_COUNT`."""
    return click.IntRange(min=minimum, max=MAX_COUNT)


class FiniteRange(click.FloatRange):
    """A ``FloatRange`` that also refuses ``nan``, which passes every range check."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if math.isnan(number):
            self.fail(f"{value!r} is not a number", param, ctx)
        return number


def days_type() -> FiniteRange:
    """A number of days such as ``--older-than``: 0 to :data:`MAX_DAYS`."""
    return FiniteRange(min=0, max=MAX_DAYS)


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
        age: timedelta | None = parse_duration(stripped)
    except DurationTooLongError:
        raise
    except ValueError:
        age = None  # not an age: a date or a time
    try:
        moment = now - age if age is not None else _parse_moment(text, stripped)
        return iso_millis(moment)
    except OverflowError:
        raise ValueError(f"{text!r} is outside the years 1 to 9999") from None


def _parse_moment(text: str, stripped: str) -> datetime:
    try:
        moment = datetime.fromisoformat(stripped.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"{text!r} is not a date (2026-11-01), a time (2026-11-01T09:30) or an age (7d, 12h)"
        ) from None
    # A time without an offset is in the local zone, as people type dates.
    return moment if moment.tzinfo else moment.astimezone()


class TimeBound(click.ParamType):
    """``2026-11-01``, ``2026-11-01T09:30``, or an age such as ``7d`` (that long ago)."""

    name = "time"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        try:
            return parse_time_bound(str(value))
        except ValueError as error:
            self.fail(str(error), param, ctx)


def _in_order(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """``--since`` after ``--until`` can match nothing: a usage error, whichever comes first."""
    bounds = {"since": ctx.params.get("since"), "until": ctx.params.get("until")}
    bounds[param.name or ""] = value
    since, until = bounds["since"], bounds["until"]
    # Both are ISO 8601 UTC with milliseconds, so text order is time order.
    if since and until and since > until:
        raise click.BadParameter(
            f"--since {since} is after --until {until}; nothing could match", ctx, param
        )
    return value


# The folder filters of the verbs that list sessions or hits (ls, search).
cwd_option = click.option("--cwd", metavar="DIR", help="Only sessions started in this folder.")


def _folder(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A folder named on the command line, as sessions record theirs: absolute."""
    return os.path.abspath(os.path.expanduser(value)) if value else None


project_option = click.option(
    "--project",
    metavar="DIR",
    callback=_folder,
    help="Only sessions of this project: started in DIR or a folder inside it.",
    shell_complete=complete_project,
)
# Which agents' sessions a verb looks at (ls, search, usage, history).
agent_option = click.option(
    "--agent",
    "agents",
    type=click.Choice(AGENTS),
    multiple=True,
    help="Only sessions of this agent (repeatable): " + ", ".join(AGENTS) + ".",
)
since_option = click.option(
    "--since",
    type=TimeBound(),
    callback=_in_order,
    help="Only from this time on: 2026-11-01, 2026-11-01T09:30, 7d.",
)
until_option = click.option(
    "--until",
    type=TimeBound(),
    callback=_in_order,
    help="Only before this time (same forms as --since).",
)


host_option = click.option(
    "--host", metavar="NAME", help="Only the sessions of this host (on a team index, --db)."
)
