"""``xcsh-store usage``: tokens and cost per day, week, month, model, provider, project or session,
as a table, a terminal chart or an HTML page."""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from datetime import tzinfo
from typing import Any

import click

from xcsh_store.cli.app import (
    Settings,
    cli,
    echo,
    echo_wrapped,
    emit_json,
    json_option,
    open_index,
    pass_settings,
    print_table,
    team_only,
)
from xcsh_store.cli.output.chart import html_chart, terminal_chart
from xcsh_store.cli.output.render import (
    current_time,
    cut,
    cut_middle,
    cut_path,
    display_width,
    home_relative,
    human_count,
    money,
    terminal_width,
)
from xcsh_store.cli.output.shapes import block_json, cost_text, usage_json
from xcsh_store.cli.output.table import Cut
from xcsh_store.cli.params import EstimatedHelpCommand, filter_options, timezone_option
from xcsh_store.index import (
    USAGE_GROUPS,
    BillingBlock,
    BudgetStatus,
    IndexReader,
    SessionFilter,
    SessionIndex,
    SessionQuery,
    UsageQuery,
    UsageRow,
    usage_total,
)
from xcsh_store.paths import write_private_file


def cost_note(totals: UsageRow) -> str | None:
    """What the total cost leaves out or takes from list prices (None: nothing to say)."""
    costs = totals.costs
    parts = []
    if costs.unpriced:
        estimate = "~" if costs.estimated else ""
        known = "" if costs.cost is None else f"{estimate}{money(costs.cost)} + "
        parts.append(
            f"total {known}{costs.left_out(len(totals.unpriced_in))}"
            f" ({costs.unpriced:,} entries of no recorded cost and no known price: add their"
            " models to prices.toml)"
        )
    if costs.estimated:
        parts.append(
            f"{costs.estimated:,} entries' cost is estimated (their agents record tokens, not"
            " costs): `xcsh-store prices` shows each price and its source"
        )
    if costs.below_list:
        parts.append(
            f"{costs.below_list:,} entries recorded at $0 by their agents (a subscription or a"
            f" reseller); at list price the total is ~{money(costs.at_list_price)}"
        )
    return "Note: " + "; ".join(parts) + "." if parts else None


def _row_cells(labels: Sequence[str], row: UsageRow) -> tuple[Any, ...]:
    return (
        *labels,
        f"{row.entries:,}",
        human_count(row.input_tokens),
        human_count(row.output_tokens),
        human_count(row.cache_read_tokens),
        human_count(row.cache_write_tokens),
        human_count(row.tokens),
        cost_text(row.costs),
    )


# The number columns, each with the short form of its header for a narrow terminal.
NUMBER_HEADERS = (
    ("entries", "entr."), "input", "output", ("cache read", "c.read"), ("cache write", "c.write"),
    "total", "cost",
)  # fmt: skip


def label_cut(group: str, labels: list[str]) -> Cut:
    """How a label of ``group`` is cut on a narrow terminal, so labels stay apart: once the
    column must be cut, a model loses its provider where its name alone is unique, then its
    middle, keeping as much of the end as it takes for no two labels to read alike (names
    differ at their end: ``…-4-5``, ``…-20250929``); a project keeps its last folders, as
    every path shown (``…/src/app``)."""
    if group == "project":
        return cut_path
    if group != "model":
        return cut
    names = Counter(label.split("/", 1)[-1] for label in labels)
    short = {
        label: name if names[name] == 1 else label
        for label in labels
        for name in (label.split("/", 1)[-1],)
    }

    @functools.cache
    def cut_labels(width: int) -> dict[str, str]:
        if all(display_width(label) <= width for label in labels):
            return {label: label for label in labels}
        for end_share in (0.5, 0.6, 0.7, 0.8, 0.9):
            shown = {label: cut_middle(short[label], width, end_share) for label in labels}
            if len(set(shown.values())) == len(shown):
                break
        return shown

    def cut_model(text: str, width: int) -> str:
        return cut_labels(width).get(text) or cut_middle(text, width)

    return cut_model


def _labels(row: UsageRow, groups: Sequence[str], sessions: dict[str, str]) -> list[str]:
    """A row's labels as shown: a project as every path is (``~/src/app``), a session as its
    short id and its title."""
    labels = []
    for group, key in zip(groups, row.keys or (row.key,), strict=True):
        if key is None:
            labels.append("?")
        elif group == "project":
            labels.append(home_relative(key))
        elif group == "session":
            labels.append(sessions.get(key, key))
        else:
            labels.append(key)
    return labels


# A path's components, on POSIX and on Windows (a pi session started on Windows keeps Z:\\temp).
_FOLDER_NAME = re.compile(r"[/\\]")


def _by_folder(labels: Sequence[str]) -> tuple[str, ...]:
    """A project's order: by its folder's name (what the table shows when the path is cut),
    then its whole path."""
    return tuple(
        part
        for label in labels
        for part in (_FOLDER_NAME.split(label.rstrip("/\\"))[-1].casefold(), label)
    )


def session_labels(index: IndexReader, filters: SessionFilter) -> dict[str, str]:
    """Each session's label in a table of usage by session: the shortest id prefix `show`
    takes, then its title (or first message)."""
    sessions = index.sessions(SessionQuery(filter=filters))
    ids = index.unique_id_prefixes(session.session_id for session in sessions)
    return {
        session.session_id: " ".join(
            part
            for part in (ids[session.session_id], session.title or session.first_message)
            if part
        )
        for session in sessions
    }


@cli.command("usage", cls=EstimatedHelpCommand)
@click.option(
    "--by",
    type=click.Choice([*USAGE_GROUPS, "host", "block"]),
    metavar="GROUP",
    multiple=True,
    default=("day",),
    show_default=True,
    help=f"How to group: {', '.join([*USAGE_GROUPS, 'host', 'block'])} (days, weeks from"
    " Monday, months: in --timezone); repeat it to group by several: --by day --by model."
    " `block`: 5-hour billing windows, each agent's apart (Claude Code's are ccusage's"
    " `blocks`), with the active window's burn rate and projection.",
)
@timezone_option
@filter_options("since", "until", "agents")
@click.option("--chart", is_flag=True, help="Draw bars instead of a table.")
@click.option(
    "--metric",
    type=click.Choice(["tokens", "cost"]),
    default="tokens",
    show_default=True,
    help="What the --chart bars measure.",
)
@click.option(
    "--html",
    "html_file",
    type=click.Path(dir_okay=False, writable=True),
    metavar="FILE",
    help="Also write a self-contained HTML page with the chart and the numbers.",
)
@click.option(
    "--check-budget",
    is_flag=True,
    help="Exit with status 3 when a budget is over (`xcsh-store budget`), for scripts and CI.",
)
@json_option
@pass_settings
def usage_command(
    settings: Settings,
    by: tuple[str, ...],
    zone: tzinfo | None,
    filters: SessionFilter,
    chart: bool,
    metric: str,
    html_file: str | None,
    check_budget: bool,
    as_json: bool,
) -> None:
    """Tokens and cost per day, week, month, model, provider, project, session or agent.

    Each entry counts once, even when forked sessions hold copies of it, and a response Claude
    Code streamed as several lines once. ESTIMATED write no costs: theirs are
    estimates from list prices (~, said below the table); a model without a known price adds
    tokens but no cost (? when nothing else is priced: never $0, which means free), and the
    total says how many sessions it leaves out. A $0 an agent recorded for a paid model shows
    its list price beside it. --json rows also carry cost_kind and Copilot CLI's premium
    requests.

    \b
    Examples:
      xcsh-store usage --since 30d --chart
      xcsh-store usage --by model
      xcsh-store usage --by day --by model --since 7d
      xcsh-store usage --by week --html usage.html
      xcsh-store usage --by agent --agent claude --agent codex
    """
    groups = list(dict.fromkeys(by))
    team_only(settings, "host" in groups, "--by host")
    if "block" in groups:
        if len(groups) > 1:
            raise click.UsageError("--by block groups alone (billing windows are not keys)")
        if settings.db is not None:
            raise click.UsageError("--by block works on index.db, not with --db")
        with open_index(settings) as index:
            windows = agent_windows(index, filters)
            statuses = index.budgets(now=current_time()) if check_budget else []
        _print_blocks(settings, windows, zone, chart, metric, html_file, as_json)
        _check(statuses, check_budget)
        return
    name = ",".join(groups)
    if zone is not None and settings.db is not None:
        raise click.UsageError("--timezone works on index.db, not with --db (days are UTC there)")
    # Usage alone needs no entry rows: a first run reads only the lines with usage (but for
    # the sessions' titles, which --by session prints).
    usage_alone = "session" not in groups or as_json
    with open_index(settings, team=True, fresh=True, entries=not usage_alone) as index:
        rows = index.usage_rows(UsageQuery(by=tuple(groups), filter=filters, zone=zone))
        sessions = session_labels(index, filters) if "session" in groups and not as_json else {}
        # The budgets are this machine's (index.db); on a team index each host's (pushed with
        # its usage), shown by host (and checked when asked).
        shown = settings.db is None or "host" in groups or check_budget
        statuses = index.budgets(now=current_time()) if shown else []
    if html_file:
        title = f"Token usage and cost per {' and '.join(groups)}"
        write_private_file(html_file, html_chart(rows, name, title).encode("utf-8"))
    if as_json:
        emit_json(
            {
                "by": name,
                "group_by": groups,
                "since": filters.since,
                "until": filters.until,
                "rows": [usage_json(row) for row in rows],
                "total": usage_json(usage_total(rows)),
                "budgets": [status.to_json() for status in statuses],
            }
        )
        _check(statuses, check_budget)
        return
    if chart:
        for line in terminal_chart(rows, name, metric, terminal_width(), settings.color):
            echo(line)
    elif rows:
        blanks = [""] * (len(groups) - 1)
        labels = [_labels(row, groups, sessions) for row in rows]
        if "project" in groups:
            order = sorted(range(len(rows)), key=lambda i: _by_folder(labels[i]))
            rows, labels = [rows[i] for i in order], [labels[i] for i in order]
        widest = sorted(range(len(groups)), key=lambda i: -max(len(row[i]) for row in labels))
        print_table(
            [
                *(
                    _row_cells(row_labels, row)
                    for row_labels, row in zip(labels, rows, strict=True)
                ),
                _row_cells(["total", *blanks], usage_total(rows)),
            ],
            headers=(*groups, *NUMBER_HEADERS),
            right=range(len(groups), len(groups) + len(NUMBER_HEADERS)),
            # The widest labels keep their room longest; numbers and headers give way first.
            flexible=widest,
            cuts={
                i: label_cut(group, [row[i] for row in labels]) for i, group in enumerate(groups)
            },
            styles=lambda row, column, text: (
                settings.style(text, bold=True) if row == len(rows) else text
            ),
        )
    else:
        echo("No usage recorded in that period.")
    note = cost_note(usage_total(rows))
    if note:
        echo_wrapped(note)
    if html_file:
        echo(f"Wrote {html_file}")
    for status in statuses:
        echo(_budget_line(settings, status))
    _check(statuses, check_budget)


def _budget_line(settings: Settings, status: BudgetStatus) -> str:
    whose = f" of {status.host}" if status.host else ""
    text = (
        f"Budget{whose} {status.budget.label}: {money(status.spent)}"
        f" of {money(status.budget.amount)}"
        f" ({status.percent:.0f} %)"
    )
    if status.over:
        return settings.style(text + ": over", fg="red", bold=True)
    if status.warned:
        return settings.style(text + ": warning", fg="yellow")
    return text


def _check(statuses: list[BudgetStatus], check_budget: bool) -> None:
    """--check-budget: exit 3 when a budget is over (saying which on stderr)."""
    over = [status for status in statuses if status.over]
    if check_budget and over:
        names = ", ".join(
            f"{status.host}: {status.budget.label}" if status.host else status.budget.label
            for status in over
        )
        echo(f"Over budget: {names}", err=True)
        raise SystemExit(3)


def _block_start(block: BillingBlock, zone: tzinfo | None) -> str:
    return block.start.astimezone(zone).strftime("%Y-%m-%d %H:%M")


def _block_label(block: BillingBlock, zone: tzinfo | None) -> str:
    """A window's label in a chart or a page (a table says "gap" in its status column)."""
    return f"{_block_start(block, zone)} (gap)" if block.gap else _block_start(block, zone)


def active_block_note(block: BillingBlock, zone: tzinfo | None) -> str:
    """The active window's burn rate and what it comes to at the window's end."""
    end = block.end.astimezone(zone).strftime("%H:%M")
    rate = block.tokens_per_minute
    cost_rate = block.cost_per_hour
    parts = [f"Active window until {end} ({block.remaining_minutes:.0f} min left)"]
    if rate is not None and cost_rate is not None:
        parts.append(f"burn rate {human_count(rate)} tokens/min, {money(cost_rate)}/h")
        projected_tokens = block.projected_tokens or 0
        parts.append(
            f"projected {human_count(projected_tokens)} tokens,"
            f" {money(block.projected_cost or 0.0)} by its end"
        )
    return "; ".join(parts) + "."


def agent_windows(
    index: SessionIndex, filters: SessionFilter
) -> list[tuple[str, list[BillingBlock]]]:
    """Each agent's billing windows (of the agents asked for, else of every agent with usage):
    a plan's windows count one agent's requests, two agents' are not one window."""
    agents = filters.agents or tuple(
        row.key for row in index.usage_rows(UsageQuery(by=("agent",), filter=filters)) if row.key
    )
    windows = [(agent, index.billing_blocks(replace(filters, agents=(agent,)))) for agent in agents]
    return [(agent, blocks) for agent, blocks in windows if blocks]


def _print_blocks(
    settings: Settings,
    windows: list[tuple[str, list[BillingBlock]]],
    zone: tzinfo | None,
    chart: bool,
    metric: str,
    html_file: str | None,
    as_json: bool,
) -> None:
    """``usage --by block``: each agent's windows as a table (a gap as one line), a chart or a
    page; an agent's name above its windows when there are several."""
    several = len(windows) > 1
    if html_file:
        rows = [
            replace(block.usage, key=(f"{agent} " if several else "") + _block_label(block, zone))
            for agent, blocks in windows
            for block in blocks
        ]
        notes = [_agent_note(agent, blocks, zone, several) for agent, blocks in windows]
        title = "Token usage and cost per 5-hour billing window"
        page = html_chart(rows, "block", title, " ".join(note for note in notes if note))
        write_private_file(html_file, page.encode("utf-8"))
    if as_json:
        emit_json(
            {
                "by": "block",
                "blocks": [
                    {"agent": agent, **block_json(block)}
                    for agent, blocks in windows
                    for block in blocks
                ],
            }
        )
        return
    if not windows:
        echo("No usage recorded in that period.")
    for number, (agent, blocks) in enumerate(windows):
        if several:
            if number:
                echo("")
            echo(settings.style(f"{agent}:", bold=True))
        if chart:
            rows = [replace(block.usage, key=_block_label(block, zone)) for block in blocks]
            for line in terminal_chart(rows, "block", metric, terminal_width(), settings.color):
                echo(line)
        else:
            _block_table(settings, blocks, zone)
        note = _agent_note(agent, blocks, zone, False)
        if note:
            echo_wrapped(note)
    worked = [block.usage for _agent, blocks in windows for block in blocks if not block.gap]
    costs = cost_note(usage_total(worked))
    if costs:
        echo_wrapped(costs)
    if html_file:
        echo(f"Wrote {html_file}")


def _agent_note(agent: str, blocks: list[BillingBlock], zone: tzinfo | None, named: bool) -> str:
    """The active window's note of an agent's windows ("" when none is active)."""
    active = next((block for block in blocks if block.active), None)
    if active is None:
        return ""
    return (f"{agent}: " if named else "") + active_block_note(active, zone)


def _block_table(settings: Settings, blocks: list[BillingBlock], zone: tzinfo | None) -> None:
    """One agent's windows, a gap as one line, and their total."""
    worked = [block.usage for block in blocks if not block.gap]
    print_table(
        [
            *(
                (_block_start(block, zone), "gap", *[""] * len(NUMBER_HEADERS))
                if block.gap
                else _row_cells([_block_start(block, zone), _block_status(block)], block.usage)
                for block in blocks
            ),
            _row_cells(["total", ""], usage_total(worked)),
        ],
        headers=("window start", "status", *NUMBER_HEADERS),
        right=range(2, 2 + len(NUMBER_HEADERS)),
        flexible=[0],
        styles=lambda row, column, text: (
            settings.style(text, bold=True) if row == len(blocks) or
            (row < len(blocks) and blocks[row].active) else text
        ),
    )  # fmt: skip


def _block_status(block: BillingBlock) -> str:
    if block.gap:
        return "gap"
    return "active" if block.active else "done"
