"""Argument types shared by verbs: points in time (``--since``), durations (``--grace``), counts
(``--limit``) and days, each bounded so that no value a person can type ends in a traceback."""

from __future__ import annotations

import dataclasses
import functools
import math
import os
from collections.abc import Callable
from datetime import timedelta, tzinfo
from typing import Any, ClassVar

import click

from xcsh_store.cli.complete import complete_project
from xcsh_store.index import SessionFilter
from xcsh_store.times import MAX_DAYS, parse_duration, parse_time_bound, time_order_problem

# The most a count option takes: far more rows than any store holds, and well inside SQLite's
# 64-bit integers (a limit is passed on to a query, sometimes plus one).
MAX_COUNT = 1_000_000_000


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


class TimeBound(click.ParamType):
    """``2026-11-01``, ``2026-11-01T09:30``, or an age such as ``7d`` (that long ago)."""

    name = "time"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        try:
            zone = ctx.params.get("zone") if ctx is not None else None
            # (Unset, click keeps a sentinel there: the local zone then.)
            return parse_time_bound(str(value), zone=zone if isinstance(zone, tzinfo) else None)
        except ValueError as error:
            self.fail(str(error), param, ctx)


def in_order(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """``--since`` after ``--until`` can match nothing: a usage error, whichever comes first."""
    bounds = {"since": ctx.params.get("since"), "until": ctx.params.get("until")}
    bounds[param.name or ""] = value
    problem = time_order_problem(bounds["since"], bounds["until"])
    if problem:
        raise click.BadParameter(
            problem.replace("since ", "--since ").replace("until ", "--until "), ctx, param
        )
    return value


def _absolute(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    return os.path.abspath(value) if value else None


# The folder filters of the verbs that list sessions or hits (ls, search).
cwd_option = click.option(
    "--cwd", metavar="DIR", callback=_absolute, help="Only sessions started in this folder."
)


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
# What people call the agents of the xcsh family (the plugins say their own: agent_labels).
_XCSH_LABELS = {"xcsh": "xcsh", "pi": "pi", "omp": "oh-my-pi"}


def in_words(items: list[str]) -> str:
    """``a, b and c``."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def agents_in_words(family: bool = False, estimated: bool = False) -> str:
    """The agents the store reads, as a help text says them (from the registry): the plugins'
    (``estimated``: those whose costs the index estimates), then pi and oh-my-pi."""
    import xcsh_store.agents as agent_plugins

    labels = agent_plugins.agent_labels()
    names = [labels[name] for name in (agent_plugins.ESTIMATED_AGENTS if estimated else labels)]
    if family:
        names += [_XCSH_LABELS[name] for name in agent_plugins.XCSH_AGENTS[1:]]
    return in_words(names) if names else "none"


def _agent_names() -> tuple[str, ...]:
    import xcsh_store.agents as agent_plugins

    return tuple(agent_plugins.AGENTS)


# The agents' names are asked of the registry when a choice is checked or a help shown, never
# while the command line is built: a verb that is given no --agent loads no plugin for it, nor
# the agents' package.
class AgentChoice(click.Choice):
    """One of the agents the store reads (``AGENTS``: the xcsh family and the plugins)."""

    def __init__(self) -> None:
        super().__init__(())

    @property
    def choices(self) -> tuple[str, ...]:
        return _agent_names()

    @choices.setter
    def choices(self, _value: Any) -> None:
        pass  # (what click's __init__ sets: the registry's names are read each time)


class AgentsHelpOption(click.Option):
    """An option whose help ends with the agents' names, from the registry when shown."""

    @property
    def help(self) -> str | None:
        if self._help is None:
            return None
        return f"{self._help} {', '.join(_agent_names())}."

    @help.setter
    def help(self, value: str | None) -> None:
        self._help = value


class AgentsHelpCommand(click.Command):
    """A command whose help says AGENTS where it names the agents the store reads (the
    registry's, :func:`agents_in_words` with the xcsh family), asked when the help is shown."""

    # The word of the help that stands for the agents, and agents_in_words's arguments for it.
    word = "AGENTS"
    words_of: ClassVar[dict[str, bool]] = {"family": True}

    @property
    def help(self) -> str | None:
        if self._help is None:
            return None
        return self._help.replace(self.word, agents_in_words(**self.words_of))

    @help.setter
    def help(self, value: str | None) -> None:
        self._help = value


class EstimatedHelpCommand(AgentsHelpCommand):
    """A command whose help says ESTIMATED where it names the agents whose costs the index
    estimates (their files hold none)."""

    word = "ESTIMATED"
    words_of: ClassVar[dict[str, bool]] = {"estimated": True}


# Which agents' sessions a verb looks at (ls, search, usage, history).
agent_option = click.option(
    "--agent",
    "agents",
    cls=AgentsHelpOption,
    type=AgentChoice(),
    metavar="AGENT",
    multiple=True,
    help="Only sessions of this agent (repeatable):",
)


def _time_option(name: str, help: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    return click.option(name, type=TimeBound(), callback=in_order, help=help)


since_option = _time_option("--since", "Only from this time on: 2026-11-01, 2026-11-01T09:30, 7d.")
until_option = _time_option("--until", "Only before this time (same forms as --since).")


host_option = click.option(
    "--host", metavar="NAME", help="Only the sessions of this host (on a team index, --db)."
)


class TimeZone(click.ParamType):
    """An IANA time zone name (``Europe/Paris``, ``UTC``)."""

    name = "zone"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, tzinfo):
            return value
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError  # only for a zone given

        try:
            return ZoneInfo(str(value))
        except (ZoneInfoNotFoundError, ValueError):
            self.fail(f"{value!r} is not a time zone (an IANA name: Europe/Paris, UTC)", param, ctx)


# Processed before --since and --until, whose dates are midnights of this zone.
timezone_option = click.option(
    "--timezone",
    "-z",
    "zone",
    type=TimeZone(),
    is_eager=True,
    help="Time zone of days, weeks and months, and of --since/--until dates (IANA name:"
    " Europe/Paris, UTC; default: the local one, $TZ).",
)


# The option of each field of a SessionFilter (index/read/questions.py), by the field's name.
archived_option = click.option(
    "--archived/--no-archived",
    "archived",
    default=None,
    help="Only the sessions whose file is gone, kept by the store's archive (--archived), or"
    " only those whose file is there (--no-archived).",
)

FILTER_OPTIONS: dict[str, Callable[[Callable[..., Any]], Callable[..., Any]]] = {
    "cwd": cwd_option,
    "project": project_option,
    "since": since_option,
    "until": until_option,
    "agents": agent_option,
    "host": host_option,
    "archived": archived_option,
}


def every_filter_but(*placed: str) -> tuple[str, ...]:
    """Every SessionFilter field but ``placed``, in the order of FILTER_OPTIONS: the rest of
    the filters of a verb that takes them all (``ls``), so a new field reaches it through its
    option alone (tests/test_listing.py holds FILTER_OPTIONS to the fields)."""
    return tuple(name for name in FILTER_OPTIONS if name not in placed)


def filter_options(*names: str, **helps: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The options of the SessionFilter fields ``names`` (in that order; ``helps`` words a
    time bound's help as the verb reads it), given to the verb as one ``filters`` argument:
    the one place a verb's filter is built. A new filter is a field, its option here and a line
    in each index's compiler (``ls`` takes every filter: every_filter_but)."""

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(command)
        def run(*args: Any, **kwargs: Any) -> Any:
            given = {name: kwargs.pop(name) for name in names}
            # A verb may place its filter's options apart: each group adds its fields.
            filters = kwargs.pop("filters", SessionFilter())
            return command(*args, filters=dataclasses.replace(filters, **given), **kwargs)

        decorated: Callable[..., Any] = run
        for name in reversed(names):
            option = FILTER_OPTIONS[name]
            if name in helps:
                option = _time_option(f"--{name}", helps[name])
            decorated = option(decorated)
        return decorated

    return decorate
