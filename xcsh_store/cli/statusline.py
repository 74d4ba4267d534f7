"""``xcsh-store statusline``: one line for an agent's status bar, from Claude Code's statusLine
JSON on stdin (``session_id``, ``transcript_path``, ``model``, ``workspace``/``cwd``, its own
``cost`` and ``rate_limits`` where it writes them): the model, this session's cost, today's,
the active five-hour window (used, burn rate, time left), the plan's windows where known (Claude
Code's own ``rate_limits``, the newest Codex readings) and the day's budget.

Run on every redraw, it is kept fast: the launcher (launch.py) calls :func:`main` without
importing click or the index's store; it reads index.db read-only through xcsh_store.glance,
plus one stat of the transcript (whether the index has read all of it). It never fails: bad
input, a missing index or any error prints what it can, logs the problem on stderr and exits 0;
the line is never more than one line.
"""

from __future__ import annotations

# The stdlib's json: a few hundred bytes to read, and orjson's import costs more than that.
import json
import os
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, TextIO

from xcsh_store.glance.status import StatusFacts, local_midnight, status_facts
from xcsh_store.glance.usage import open_read_only
from xcsh_store.homes import get_store_dir
from xcsh_store.paths import get_index_db_path
from xcsh_store.times import iso_millis

SEPARATOR = " · "
USAGE = "usage: xcsh-store statusline [--color auto|always|never] [--agent-dir DIR]"
# ANSI styles (the line's own; everything from stdin is stripped of control characters).
_DIM, _YELLOW, _RED, _RESET = "\x1b[2m", "\x1b[33m", "\x1b[31;1m", "\x1b[0m"


def money(value: float | None) -> str:
    if value is None:
        return "?"
    return f"${value:,.2f}" if value >= 0.01 or value == 0 else f"${value:.4f}"


def count(value: float) -> str:
    for limit, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if value >= limit:
            return f"{value / limit:.1f}{suffix}"
    return f"{value:.0f}"


def duration(minutes: float) -> str:
    hours, rest = divmod(int(minutes), 60)
    return f"{hours}h{rest:02d}m" if hours else f"{rest}m"


def printable(text: Any, room: int = 40) -> str:
    """A value of the input as one short line of plain characters."""
    text = "" if text is None else str(text)
    text = "".join(char if char.isprintable() else " " for char in text).strip()
    return text if len(text) <= room else text[: room - 1] + "…"


class Painter:
    def __init__(self, colour: bool) -> None:
        self.colour = colour

    def __call__(self, text: str, style: str) -> str:
        return f"{style}{text}{_RESET}" if self.colour and style else text

    def percent(self, label: str, used: float, warn_at: float = 80) -> str:
        text = f"{label} {used:.0f}%"
        return self(text, _RED if used >= 95 else _YELLOW if used >= warn_at else "")


def read_input(stream: TextIO | Any, problems: list[str]) -> dict[str, Any]:
    """Claude Code's JSON, or {} (bad input is a problem to log, never an error). A terminal
    is not read: run by hand or from tmux without input, the line shows what needs none."""
    try:
        if stream.isatty():
            return {}
        data = stream.buffer.read() if hasattr(stream, "buffer") else stream.read()
    except (OSError, ValueError) as error:
        problems.append(f"stdin cannot be read: {error}")
        return {}
    if not data or not data.strip():
        return {}
    try:
        value = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        problems.append(f"stdin is not JSON ({error})")
        return {}
    if not isinstance(value, dict):
        problems.append("stdin is not a JSON object")
        return {}
    return value


def _member(value: Any, *path: str) -> Any:
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _number(value: Any) -> float | None:
    return float(value) if type(value) in (int, float) else None


def compose(
    given: dict[str, Any],
    facts: StatusFacts | None,
    paint: Painter,
    now: datetime,
    budgets: Sequence[tuple[str, float, float]] = (),
) -> str:
    """The line: each part that is known, in order of what a person looks at first.
    ``budgets``: (label, spent, amount) of the budgets that apply today."""
    parts = []
    model = _member(given, "model", "display_name") or _member(given, "model", "id")
    if model:
        parts.append(printable(model, 30))
    own_cost = _number(_member(given, "cost", "total_cost_usd"))
    if facts is not None and facts.session_cost is not None:
        # The index's figure (what `usage --by session` says); "…": lines still to be read.
        parts.append("session " + money(facts.session_cost) + ("…" if facts.behind else ""))
    elif own_cost is not None:
        parts.append("session " + money(own_cost) + paint(" (Claude's)", _DIM))
    if facts is not None and facts.today_cost is not None:
        parts.append("today " + money(facts.today_cost))
    window = facts.window if facts is not None else None
    if window is not None:
        text = f"5h {money(window.cost)} {count(window.tokens)} tok"
        rate = window.tokens_per_minute
        if rate is not None:
            text += f" {count(rate)}/min"
        parts.append(text + f" {duration(window.minutes_left)} left")
    limits = []
    for key, label in (("five_hour", "5h"), ("seven_day", "7d")):
        used = _number(_member(given, "rate_limits", key, "used_percentage"))
        if used is not None:
            limits.append(paint.percent(label, used))
    if limits:
        parts.append("limit " + " ".join(limits))
    for reading in facts.readings if facts is not None else ():
        if reading.resets_at is not None and reading.resets_at <= now:
            continue  # a window that has reset since: its percent is of the past
        label = {300: "5h", 10080: "7d"}.get(reading.window_minutes or 0, "")
        parts.append(paint.percent(f"{reading.agent} {label}".strip(), reading.used_percent))
    for label, spent, amount in budgets:
        parts.append(paint.percent(f"{label} budget", spent / amount * 100))
    return SEPARATOR.join(part for part in parts if part) or "xcsh-store"


def colour_wanted(mode: str, stream: TextIO) -> bool:
    if mode == "always":
        return True
    if mode == "never" or os.environ.get("NO_COLOR"):
        return False
    return stream.isatty() and os.environ.get("TERM") != "dumb"


def parse_arguments(arguments: Sequence[str], problems: list[str]) -> dict[str, str]:
    options = {"color": "auto", "agent_dir": ""}
    items = list(arguments)
    while items:
        item = items.pop(0)
        name, _, value = item.partition("=")
        if name in ("--color", "--agent-dir"):
            if not value and items:
                value = items.pop(0)
            options[name[2:].replace("-", "_")] = value
        else:
            problems.append(f"unknown argument {item!r} ({USAGE})")
    if options["color"] not in ("auto", "always", "never"):
        problems.append(f"--color {options['color']!r} is not auto, always or never")
        options["color"] = "auto"
    return options


def main(
    arguments: Sequence[str] = (),
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    now: datetime | None = None,
) -> int:
    """Print the line; always exit 0 (a status bar shows nothing for a failing command)."""
    stdin, stdout, stderr = stdin or sys.stdin, stdout or sys.stdout, stderr or sys.stderr
    problems: list[str] = []
    options = parse_arguments(arguments, problems)
    given = read_input(stdin, problems)
    now = now or datetime.now(UTC)
    paint = Painter(colour_wanted(options["color"], stdout))
    facts: StatusFacts | None = None
    budgets: list[tuple[str, float, float]] = []
    try:
        agent_dir = options["agent_dir"] or get_store_dir()
        connection = open_read_only(get_index_db_path(os.path.abspath(agent_dir)))
        if connection is None:
            problems.append(f"no index in {agent_dir} yet: run `xcsh-store sync`")
        else:
            with connection:
                session = given.get("session_id")
                transcript = given.get("transcript_path")
                facts = status_facts(
                    connection,
                    session if isinstance(session, str) else None,
                    transcript if isinstance(transcript, str) else None,
                    now,
                )
                budgets = _todays_budgets(connection, given, now, problems)
    except Exception as error:
        problems.append(f"{type(error).__name__}: {error}")
    line = compose(given, facts, paint, now, budgets)
    stdout.write(line.replace("\n", " ") + "\n")
    stdout.flush()
    for problem in problems:
        stderr.write(f"xcsh-store statusline: {problem}\n")
    return 0


def _todays_budgets(
    connection: Any, given: dict[str, Any], now: datetime, problems: list[str]
) -> list[tuple[str, float, float]]:
    """The daily budgets that apply to this session (overall, its agent's, its project's),
    with what was spent today under each."""
    from xcsh_store.glance.settings import LimitsConfigError, read_limits
    from xcsh_store.glance.spend import spent

    try:
        limits = read_limits()
    except LimitsConfigError as error:
        problems.append(str(error))
        return []
    folder = _member(given, "workspace", "project_dir") or given.get("cwd")
    start = iso_millis(local_midnight(now))
    found = []
    for budget in limits.budgets:
        if budget.period != "daily":
            continue
        if budget.scope == "agent" and budget.name != "claude":
            continue
        if budget.scope == "project" and not (
            isinstance(folder, str) and _inside(folder, budget.name or "")
        ):
            continue
        label = "day" if budget.scope == "all" else f"{budget.name} day"
        found.append((label, spent(connection, budget, start), budget.amount))
    return found


def _inside(folder: str, project: str) -> bool:
    project = project.rstrip("/")
    return folder == project or folder.startswith(project + "/")
