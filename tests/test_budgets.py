"""Budgets (issue 37): daily, weekly and monthly spend limits, overall and per agent or project,
from the config file or `xcsh-store budget set`; `budget`, `usage`, `quota` and the web usage
page show each one's share with a warning from a threshold; `usage --check-budget` exits 3 when
one is over. Spend is what `usage --since` of the period's start says."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from xcsh_store.glance.settings import Budget, LimitsConfigError, budgets_toml, read_limits
from xcsh_store.glance.spend import period_start
from xcsh_store.index import SessionIndex


def run(agent_dir: Path, *arguments: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "xcsh_store", "--agent-dir", str(agent_dir), *arguments],
        capture_output=True,
        text=True,
        timeout=120,
        env=os.environ | {"COLUMNS": "160"} | (env or {}),
    )


def config_file() -> Path:
    path = Path(os.environ["XDG_CONFIG_HOME"]) / "xcsh-store" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture
def home(agent_dir, real_home):
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync()
    return real_home


def test_budget_set_writes_budgets_toml_that_read_limits_reads(agent_dir, tmp_path):
    for arguments in (
        ("daily", "20"),
        ("monthly", "50", "--agent", "codex"),
        ("weekly", "30.5", "--project", str(tmp_path / 'my "app"'), "--warn-at", "90"),
        ("daily", "25"),  # replaces the first
    ):
        result = run(agent_dir, "budget", "set", *arguments)
        assert result.returncode == 0, result.stderr
    limits = read_limits()
    assert sorted(limits.budgets, key=lambda b: b.scope) == [
        Budget("monthly", 50.0, "agent", "codex"),
        Budget("daily", 25.0, "all", None),
        Budget("weekly", 30.5, "project", str(tmp_path / 'my "app"')),
    ]
    assert limits.warn_percent == 90
    assert run(agent_dir, "budget", "unset", "daily").returncode == 0
    assert Budget("daily", 25.0, "all", None) not in read_limits().budgets


def test_budgets_toml_round_trips_any_name():
    budgets = [Budget("daily", 1.5, "project", 'a "b"\\c\tü'), Budget("weekly", 2.0)]
    assert tomllib.loads(budgets_toml(budgets, 70.0))["budget"] == {
        "warn_percent": 70.0,
        "weekly": 2.0,
        "project": {'a "b"\\c\tü': {"daily": 1.5}},
    }


@pytest.mark.parametrize(
    "text, problem",
    [
        ("[budget]\ndaily = -1\n", "budget.daily must be a positive amount"),
        ("[budget]\nhourly = 3\n", "budget.hourly is not one of daily, weekly, monthly"),
        ("[budget.agent]\ncodex = 3\n", "budget.agent.codex must be a table"),
        ("[budget]\nwarn_percent = 0\n", "warn_percent must be a number 1-100"),
    ],
)
def test_a_config_that_says_nonsense_is_refused(text, problem):
    config_file().write_text(text)
    with pytest.raises(LimitsConfigError, match=problem):
        read_limits()


def test_periods_start_at_local_midnight_monday_and_the_first():
    now = datetime(2026, 7, 16, 15, 30).astimezone()  # a Thursday
    assert period_start("daily", now) == now.replace(hour=0, minute=0)
    assert period_start("weekly", now) == now.replace(day=13, hour=0, minute=0)
    assert period_start("monthly", now) == now.replace(day=1, hour=0, minute=0)


def spent_since(agent_dir: Path, day: str, *options: str) -> float:
    result = run(agent_dir, "--no-sync", "usage", "--since", day, *options, "--json")
    return json.loads(result.stdout)["total"]["cost"] or 0.0


def test_spend_is_usage_since_the_periods_start_by_scope(agent_dir, home):
    with SessionIndex.open(str(agent_dir), read_only=True) as index:
        day, project = index.connection.execute(
            "SELECT substr(e.timestamp, 1, 10), s.project_dir FROM entries AS e"
            " JOIN sessions AS s ON s.file_id = e.session WHERE e.cost > 0"
            " AND s.agent = 'claude' AND s.project_dir IS NOT NULL"
            " ORDER BY e.timestamp DESC LIMIT 1"
        ).fetchone()
        now = datetime.fromisoformat(day).astimezone() + timedelta(hours=23)
        budgets = [
            Budget("daily", 1.0),
            Budget("daily", 1.0, "agent", "claude"),
            Budget("daily", 1.0, "project", project),
        ]
        from xcsh_store.glance.settings import Limits

        statuses = index.budgets(Limits(budgets=tuple(budgets)), now)
    overall = spent_since(agent_dir, day)
    claude = spent_since(agent_dir, day, "--agent", "claude")
    assert [round(status.spent, 9) for status in statuses] == [
        round(overall, 9),
        round(claude, 9),
        pytest.approx(round(claude, 9), abs=overall),  # one project's: at most the day's
    ]
    assert 0 < statuses[2].spent <= overall
    assert all(status.percent == status.spent * 100 for status in statuses)


def test_usage_check_budget_exits_3_when_one_is_over(agent_dir, home):
    # Everything ever spent is this month's when the budget is monthly and the clock is past
    # every fixture; a budget of a cent is over only if anything was spent this month.
    config_file().write_text("[budget]\nmonthly = 1000000\n")
    calm = run(agent_dir, "--no-sync", "usage", "--check-budget")
    assert calm.returncode == 0, calm.stderr
    assert "Budget monthly overall: $" in calm.stdout and "of $1,000,000.00" in calm.stdout
    config_file().write_text(
        "[budget]\nmonthly = 1000000\n[budget.agent.claude]\nmonthly = 0.000001\n"
    )
    # Today's month has no fixture requests: nothing spent, nothing over.
    assert run(agent_dir, "--no-sync", "usage", "--check-budget").returncode == 0


def test_over_and_warned_budgets_everywhere(agent_dir, home, client):
    with SessionIndex.open(str(agent_dir), read_only=True) as index:
        last = index.connection.execute(
            "SELECT max(timestamp) FROM entries WHERE cost > 0"
        ).fetchone()[0]
    # SOURCE_DATE_EPOCH: the CLI's clock, a minute after the last priced request.
    epoch = int(datetime.fromisoformat(last.replace("Z", "+00:00")).timestamp()) + 60
    now = datetime.fromtimestamp(epoch).astimezone()
    spent = spent_since(agent_dir, now.strftime("%Y-%m-%d"))
    week = spent_since(agent_dir, period_start("weekly", now).strftime("%Y-%m-%d"))
    month = spent_since(agent_dir, period_start("monthly", now).strftime("%Y-%m-%d"))
    assert 0 < spent <= week <= month
    config_file().write_text(
        f"[budget]\ndaily = {spent / 2!r}\nweekly = {week * 1.1!r}\nmonthly = {month * 100!r}\n"
    )
    env = {"SOURCE_DATE_EPOCH": str(epoch)}
    shown = json.loads(run(agent_dir, "--no-sync", "budget", "--json", env=env).stdout)
    by_period = {status["period"]: status for status in shown["budgets"]}
    assert by_period["daily"]["over"] and by_period["daily"]["percent"] == pytest.approx(200)
    assert by_period["weekly"]["warn"] and not by_period["weekly"]["over"]
    assert not by_period["monthly"]["warn"]
    table = run(agent_dir, "--no-sync", "quota", env=env)
    assert "200 % over" in table.stdout
    check = run(agent_dir, "--no-sync", "usage", "--check-budget", env=env)
    assert check.returncode == 3 and "Over budget: daily overall" in check.stderr
    assert "Budget daily overall" in check.stdout and ": over" in check.stdout
    # The web usage page (its clock is the real one: no fixture request is this month's).
    page = client.get("/usage").text
    assert "<h2>Budgets</h2>" in page and "monthly" in page and " 0 %" in page
