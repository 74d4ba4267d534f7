"""``xcsh-store quota``, ``budget`` and ``statusline``: how close the plan's usage limits and
the user's own spend limits are (issue 37).

The module imports only click and the group at the top: ``statusline`` runs on every redraw
of an agent's status bar, so each verb imports what it needs when it runs
(tests/test_statusline.py holds the statusline to that)."""

from __future__ import annotations

from datetime import datetime, tzinfo
from typing import TYPE_CHECKING

import click

from xcsh_store.cli.app import Settings, cli, json_option, pass_settings
from xcsh_store.cli.params import timezone_option

if TYPE_CHECKING:
    from xcsh_store.index import BudgetStatus, QuotaWindow


def when(moment: datetime | None, now: datetime, zone: tzinfo | None) -> str:
    """A time to come for people: ``Thu 14:00`` within the week, ``2026-07-18 08:38`` else."""
    if moment is None:
        return ""
    local = moment.astimezone(zone)
    if abs((moment - now).total_seconds()) < 6 * 86_400:
        return local.strftime("%a %H:%M")
    return local.strftime("%Y-%m-%d %H:%M")


def age(seconds: float) -> str:
    """``40 s``, ``12 min``, ``3 h``, ``5 days``."""
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    if seconds < 2 * 86_400:
        return f"{seconds / 3600:.0f} h"
    return f"{seconds / 86_400:.0f} days"


def pace_text(window: QuotaWindow, zone: tzinfo | None) -> str:
    return window.pace_words(lambda moment: when(moment, window.now, zone))


def used_text(window: QuotaWindow) -> str:
    from xcsh_store.cli.output.render import human_count

    if window.used_percent is None:
        return human_count(window.used_tokens) + " tokens"
    text = f"{window.used_percent:.0f} %"
    if window.limit_tokens is not None:
        text += f" of {human_count(window.limit_tokens)} ({window.source})"
    return text


@cli.command("quota")
@click.option(
    "--agent",
    "agents",
    multiple=True,
    metavar="AGENT",
    help="Only this agent's windows (repeat for several).",
)
@timezone_option
@json_option
@pass_settings
def quota_command(
    settings: Settings, agents: tuple[str, ...], zone: tzinfo | None, as_json: bool
) -> None:
    """How much of each usage-limit window is used, when it resets, and the pace.

    Codex writes its plan's windows into its session files (the 5-hour and weekly percents,
    their resets, the plan); the newest reading of each is shown, with its age when it is
    more than a few minutes old. Claude Code's files hold no such readings: its 5-hour
    window (the active billing block) and its last seven days are counted in tokens against
    the limits of the config file's [quota.claude], else against the largest earlier
    window (calibrated). docs/quota.md says more.

    \b
    Examples:
      xcsh-store quota
      xcsh-store quota --agent codex --json
    """
    from xcsh_store.cli.app import echo, emit_json, open_index, print_table
    from xcsh_store.cli.output.render import current_time

    now = current_time()
    with open_index(settings, team=True, fresh=True) as index:
        windows = index.quota(now=now, agents=agents)
        statuses = index.budgets(now=now)
    if as_json:
        emit_json(
            {
                "now": now.isoformat(),
                "windows": [window.to_json() for window in windows],
                "budgets": [status.to_json() for status in statuses],
            }
        )
        return
    if statuses:
        budget_rows(settings, statuses)
        echo()
    if not windows:
        if settings.db is not None:
            echo("No usage limits known: no host has pushed an agent's readings.")
        else:
            echo("No usage limits known: no agent's files hold readings, and no Claude usage yet.")
        return
    # The team index (--db) holds every host's readings: a column says whose.
    hosts = settings.db is not None
    rows = []
    for window in windows:
        plan = f" ({window.plan_type})" if window.plan_type else ""
        as_of = "now" if window.source != "reading" else f"{age(window.age_seconds)} ago"
        rows.append(
            (
                *((window.host or "",) if hosts else ()),
                window.agent + plan,
                window.label,
                used_text(window),
                when(window.resets_at, now, zone),
                pace_text(window, zone),
                as_of,
            )
        )
    shift = 1 if hosts else 0
    print_table(
        rows,
        headers=(
            *(("host",) if hosts else ()),
            "agent",
            "window",
            "used",
            "resets",
            "pace",
            "as of",
        ),
        flexible=4 + shift,
        styles=lambda row, column, text: _warned(settings, windows[row], column - shift, text),
    )


def _warned(settings: Settings, window: QuotaWindow, column: int, text: str) -> str:
    if column == 2 and window.used_percent is not None and not window.reset_since:
        if window.used_percent >= 90:
            return settings.style(text, fg="red", bold=True)
        if window.used_percent >= 70:
            return settings.style(text, fg="yellow")
    if column == 5 and window.stale:
        return settings.style(text, dim=True)
    return text


@cli.command("statusline")
@click.option(
    "--color",
    "colour",
    type=click.Choice(["auto", "always", "never"]),
    default="auto",
    show_default=True,
    help="Colour the line (Claude Code shows colours: `always` there); auto colours a"
    " terminal unless NO_COLOR is set.",
)
@pass_settings
def statusline_command(settings: Settings, colour: str) -> None:
    """One line for an agent's status bar, from Claude Code's statusLine JSON on stdin.

    The model, this session's cost and today's (from the index, as `usage` counts them; "…":
    the transcript has lines the index has not read yet), the active 5-hour window of
    Claude's requests (cost, tokens, burn rate, time left), the plan's windows where known
    (Claude Code's own rate_limits, the newest Codex readings) and today's budgets. It reads
    index.db read-only and never syncs; bad input prints what it can, logs the problem on
    stderr and exits 0. docs/quota.md has the settings.json lines and a tmux snippet.

    \b
    In ~/.claude/settings.json:
      "statusLine": {"type": "command",
                     "command": "xcsh-store statusline --color always"}
    """
    from xcsh_store.cli.statusline import main

    # (auto: as the global --color decided, which reads the same terminal and NO_COLOR)
    if colour == "auto":
        colour = "always" if settings.color else "never"
    main(["--color", colour, "--agent-dir", settings.agent_dir])


def budget_rows(settings: Settings, statuses: list[BudgetStatus]) -> None:
    """The budgets as a table: period, scope, spent, budget, share (warned ones coloured); on
    the team index (--db), whose budget each is first."""
    from xcsh_store.cli.app import print_table
    from xcsh_store.cli.output.render import money

    hosts = settings.db is not None
    shift = 1 if hosts else 0

    def styled(row: int, column: int, text: str) -> str:
        status = statuses[row]
        column -= shift
        if column == 4 and status.over:
            return settings.style(text, fg="red", bold=True)
        if column == 4 and status.warned:
            return settings.style(text, fg="yellow")
        return text

    print_table(
        [
            (
                *((status.host or "",) if hosts else ()),
                status.budget.period,
                "overall" if status.budget.scope == "all" else status.budget.scope,
                status.budget.name or "",
                f"{money(status.spent)} of {money(status.budget.amount)}",
                f"{status.percent:.0f} %" + (" over" if status.over else ""),
            )
            for status in statuses
        ],
        headers=(*(("host",) if hosts else ()), "budget", "of", "name", "spent", "share"),
        flexible=2 + shift,
        styles=styled,
    )


@cli.group("budget", invoke_without_command=True)
@json_option
@click.pass_context
def budget_command(context: click.Context, as_json: bool) -> None:
    """Spend limits per day, week or month, overall or per agent or project.

    Without a subcommand: each budget, what was spent in its period so far (days and weeks
    from Monday and months in the local time zone; US dollars, estimated from list prices
    where the agent records no cost) and its share, warned from the config file's
    budget.warn_percent (80 by default). `usage --check-budget` exits 3 when one is over.
    Budgets live in the config file's [budget] tables or in budgets.toml beside it, which
    `budget set` writes (docs/quota.md).

    \b
    Examples:
      xcsh-store budget set daily 20
      xcsh-store budget set monthly 50 --agent codex
      xcsh-store budget set weekly 30 --project ~/src/app
      xcsh-store budget
    """
    if context.invoked_subcommand is not None:
        return
    from xcsh_store.cli.app import echo, emit_json, open_index
    from xcsh_store.cli.output.render import current_time

    settings = context.find_object(Settings)
    assert settings is not None
    with open_index(settings, team=True, fresh=True) as index:
        statuses = index.budgets(now=current_time())
    if as_json:
        emit_json({"budgets": [status.to_json() for status in statuses]})
    elif statuses:
        budget_rows(settings, statuses)
    else:
        echo("No budgets: set one with `xcsh-store budget set daily 20`.")


def _scope(agent: str | None, project: str | None) -> tuple[str, str | None]:
    import os

    from xcsh_store.js import well_formed

    if agent and project:
        raise click.UsageError("a budget is for --agent or --project, not both")
    for option, value in (("--agent", agent), ("--project", project)):
        if value is not None and (not value or well_formed(value) != value):
            # budgets.toml is UTF-8 text: a name of other bytes cannot be written to it.
            raise click.BadParameter("must be a non-empty name in UTF-8", param_hint=option)
    if project:
        return "project", os.path.abspath(os.path.expanduser(project))
    return ("agent", agent) if agent else ("all", None)


_PERIOD = click.argument("period", type=click.Choice(["daily", "weekly", "monthly"]))
_AGENT = click.option("--agent", metavar="AGENT", help="Only this agent's sessions.")
_PROJECT = click.option(
    "--project", metavar="FOLDER", help="Only the sessions of this project folder (and below)."
)


@budget_command.command("set")
@_PERIOD
@click.argument("amount", type=click.FloatRange(min=0, min_open=True))
@_AGENT
@_PROJECT
@click.option(
    "--warn-at",
    type=click.FloatRange(1, 100),
    metavar="PERCENT",
    help="Warn from this share of every budget (default 80).",
)
def budget_set_command(
    period: str, amount: float, agent: str | None, project: str | None, warn_at: float | None
) -> None:
    """Set a budget: AMOUNT US dollars per PERIOD (daily, weekly, monthly)."""
    from xcsh_store.cli.app import echo
    from xcsh_store.index import Budget, set_budget

    scope, name = _scope(agent, project)
    budget = Budget(period, amount, scope, name)
    path = set_budget(budget, warn_percent=warn_at)
    echo(f"{budget.label}: ${amount:,.2f} (in {path})")


@budget_command.command("unset")
@_PERIOD
@_AGENT
@_PROJECT
def budget_unset_command(period: str, agent: str | None, project: str | None) -> None:
    """Remove a budget that `budget set` set."""
    from xcsh_store.cli.app import echo
    from xcsh_store.index import Budget, set_budget

    scope, name = _scope(agent, project)
    gone = Budget(period, 1.0, scope, name)
    path = set_budget(None, remove=gone)
    echo(f"{gone.label}: no budget (in {path})")
