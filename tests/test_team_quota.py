"""Each host's rate-limit readings and budgets on the team index (issue 37 item 4, team
migration 0008): a push sends them at every tier (they hold no text), with the rows of their
file, once; they go with their file; ``quota --db`` shows them per host."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers.team_pushes import push_killed_at, writes
from team_server import count_row_writes, local_rows, psycopg, server_rows

from xcsh_store.cli import cli
from xcsh_store.index import SessionIndex
from xcsh_store.team import TeamIndex, connect, push

AKASH = "AkashJana18__edgerunner__codex-session.jsonl"


def synced(agent_dir: Path) -> None:
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync()


def readings(url: str, host: str) -> int:
    with psycopg.connect(url) as connection:
        query = "SELECT count(*) FROM quota_observations WHERE host = %s"
        return connection.execute(query, (host,)).fetchone()[0]


def test_a_usage_tier_push_sends_every_reading_once(agent_dir, real_home, team_url):
    synced(agent_dir)
    report = push(str(agent_dir), team_url, host="laptop", tier="usage")
    assert report.quota == readings(team_url, "laptop") == 521
    rows = server_rows(team_url, "laptop")
    assert rows["quota_observations"] == local_rows(agent_dir)["quota_observations"]
    # Nothing changed: a push again writes no reading, and the server still holds each once.
    again = push(str(agent_dir), team_url, host="laptop")
    assert (again.pushed, again.quota) == (0, 0)
    assert server_rows(team_url, "laptop") == rows


def test_a_files_readings_go_with_its_rows(agent_dir, real_home, team_url):
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "xcsh-store" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("[agents.codex]\narchive = false\n")
    synced(agent_dir)
    push(str(agent_dir), team_url, host="laptop", tier="meta")
    real_home.files[AKASH].unlink()
    synced(agent_dir)
    report = push(str(agent_dir), team_url, host="laptop")
    assert report.deleted == 1
    assert readings(team_url, "laptop") == 521 - 350
    assert server_rows(team_url, "laptop") == local_rows(agent_dir)


def config_file() -> Path:
    path = Path(os.environ["XDG_CONFIG_HOME"]) / "xcsh-store" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def two_hosts(agent_dir: Path, tmp_path: Path, team_url: str) -> None:
    """The real home pushed as ``laptop`` (at the usage tier) and, from a second agent dir
    with budgets of its own, as ``desktop``."""
    synced(agent_dir)
    push(str(agent_dir), team_url, host="laptop", tier="usage")
    other = tmp_path / "other-agent-dir"
    other.mkdir()
    synced(other)
    config_file().write_text(
        "[budget]\ndaily = 20\nwarn_percent = 50\n[budget.agent.codex]\nmonthly = 100\n"
    )
    report = push(str(other), team_url, host="desktop")
    assert report.budgets == 2


def test_quota_db_shows_each_hosts_windows(agent_dir, real_home, team_url, tmp_path):
    two_hosts(agent_dir, tmp_path, team_url)
    now = datetime(2026, 3, 1, tzinfo=UTC)
    with SessionIndex.open(str(agent_dir), read_only=True) as index:
        local = [w.to_json() for w in index.quota(now=now) if w.source == "reading"]
    with TeamIndex.open(team_url) as team:
        windows = [window.to_json() for window in team.quota(now=now)]
    assert {window["host"] for window in windows} == {"laptop", "desktop"}
    # Each host's windows are what its own `quota` says of its readings, with its name.
    for host in ("laptop", "desktop"):
        assert [w | {"host": None} for w in windows if w["host"] == host] == [
            w | {"host": None} for w in local
        ]
    result = CliRunner().invoke(
        cli, ["--db", team_url, "quota", "--json"], env={"SOURCE_DATE_EPOCH": "1772323200"}
    )
    assert result.exit_code == 0, result.output
    shown = json.loads(result.output)
    assert [w["host"] for w in shown["windows"]] == [w["host"] for w in windows]
    assert [(b["host"], b["period"], b["scope"]) for b in shown["budgets"]] == [
        ("desktop", "daily", "all"),
        ("desktop", "monthly", "agent"),
    ]
    table = CliRunner().invoke(cli, ["--db", team_url, "quota"], env={"COLUMNS": "160"})
    assert table.exit_code == 0, table.output
    lines = table.output.splitlines()
    assert any(line.startswith("host") and "agent" in line for line in lines)
    assert any(line.startswith("laptop") and "codex (plus)" in line for line in lines)


def test_budgets_per_host_with_each_hosts_spend(agent_dir, real_home, team_url, tmp_path):
    two_hosts(agent_dir, tmp_path, team_url)
    # The desktop's spend in each period is its own usage (the laptop's is not counted): an
    # evening of Codex work in the fixtures, some $30.
    now = datetime(2026, 7, 10, 20, tzinfo=UTC)
    with SessionIndex.open(str(agent_dir), read_only=True) as index:
        local = {(s.budget.period, s.budget.scope): s.spent for s in index.budgets(now=now)}
    with TeamIndex.open(team_url) as team:
        statuses = team.budgets(now=now)
    assert [(s.host, s.budget.label, s.warn_percent) for s in statuses] == [
        ("desktop", "daily overall", 50.0),
        ("desktop", "monthly agent codex", 50.0),
    ]
    assert {(s.budget.period, s.budget.scope): round(s.spent, 6) for s in statuses} == {
        key: round(value, 6) for key, value in local.items()
    }
    assert all(status.spent > 20 for status in statuses)
    # A push with the same budgets sends none; removing them empties the host's.
    assert push(str(tmp_path / "other-agent-dir"), team_url, host="desktop").budgets is None
    config_file().write_text("")
    assert push(str(tmp_path / "other-agent-dir"), team_url, host="desktop").budgets == 0
    with TeamIndex.open(team_url) as team:
        assert team.budgets(now=now) == []


def test_usage_by_host_shows_each_hosts_budgets(agent_dir, real_home, team_url, tmp_path):
    two_hosts(agent_dir, tmp_path, team_url)
    evening = {"SOURCE_DATE_EPOCH": "1783713600", "COLUMNS": "160"}  # 2026-07-10 20:00 UTC
    result = CliRunner().invoke(cli, ["--db", team_url, "usage", "--by", "host"], env=evening)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert any(line.startswith("Budget of desktop daily overall: $") for line in lines)
    assert any(line.startswith("Budget of desktop monthly agent codex: $") for line in lines)
    # The desktop's day (some $30) is over its $20: --check-budget says whose, and exits 3.
    checked = CliRunner().invoke(
        cli, ["--db", team_url, "usage", "--check-budget", "--json"], env=evening
    )
    assert checked.exit_code == 3, checked.output
    assert "Over budget: desktop: daily overall" in checked.stderr


# A push whose transactions hold about 200 entries each, so that the Codex files the next push
# sends go in several (the default holds them all in one).
SMALL_BATCH_PUSH = """
import sys
from xcsh_store.team import push
from xcsh_store.team.upload import _Batch
_Batch.ENTRIES = 200
push(sys.argv[1], sys.argv[2], host="laptop")
"""


def as_before_0008(url: str) -> None:
    """The team index as the schema before migration 0008 left it (its rows kept)."""
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute("DROP TABLE quota_observations, budgets")
        connection.execute("ALTER TABLE hosts DROP COLUMN budgets_state")
        connection.execute("DELETE FROM xcsh_schema WHERE version = 8")


def readings_by_file(url: str) -> dict[str, int]:
    with psycopg.connect(url) as connection:
        rows = connection.execute(
            "SELECT f.path, count(q.seq) FROM files AS f JOIN sessions AS s USING (host, path)"
            " LEFT JOIN quota_observations AS q USING (host, path) WHERE s.agent = 'codex'"
            " GROUP BY f.path"
        )
        return dict(rows.fetchall())


def test_migration_0008_sends_the_codex_files_again_and_a_killed_push_keeps_each_whole(
    agent_dir, real_home, team_url
):
    """A team index pushed before 0008: once migrated, the next push sends every Codex file
    again, whole, with its readings. That push is killed while one of its later transactions
    waits on a row lock: each file then holds all its readings or none, and the next push
    sends the rest."""
    synced(agent_dir)
    push(str(agent_dir), team_url, host="laptop")
    as_before_0008(team_url)
    connect(team_url).close()  # `xcsh-store team migrate`
    assert set(readings_by_file(team_url).values()) == {0}
    readings_of = local_rows(agent_dir)["quota_observations"]
    expected = {
        path: sum(row[0] == path for row in readings_of) for path in readings_by_file(team_url)
    }
    assert sum(expected.values()) == 521
    last = max(path for path, count in expected.items() if count)
    push_killed_at(SMALL_BATCH_PUSH, agent_dir, team_url, last)
    halfway = readings_by_file(team_url)
    assert all(halfway[path] in (0, count) for path, count in expected.items())
    assert halfway[last] == 0
    assert any(halfway[path] == count > 0 for path, count in expected.items())
    push(str(agent_dir), team_url, host="laptop")
    assert readings_by_file(team_url) == expected
    assert server_rows(team_url, "laptop") == local_rows(agent_dir)


def test_a_codex_file_that_grew_writes_only_its_new_readings(agent_dir, real_home, team_url):
    synced(agent_dir)
    push(str(agent_dir), team_url, host="laptop", tier="usage")
    count_row_writes(team_url)
    # Codex reads its limits again: one more token_count line, both windows a little fuller.
    grown = real_home.files[AKASH]
    last = [line for line in grown.read_bytes().splitlines() if b'"rate_limits"' in line][-1]
    line = last.replace(b"2026-07-11T14:00:28.226Z", b"2026-07-11T14:05:00.000Z")
    line = line.replace(b'"used_percent":1.0', b'"used_percent":3.0')
    with grown.open("ab") as handle:
        handle.write(line + b"\n")
    synced(agent_dir)
    report = push(str(agent_dir), team_url, host="laptop")
    assert (report.pushed, report.appended, report.quota) == (1, 1, 2)
    counted = writes(team_url)
    assert counted[("quota_observations", "INSERT")] == 2
    assert ("quota_observations", "DELETE") not in counted
    assert readings(team_url, "laptop") == 523
    assert server_rows(team_url, "laptop") == local_rows(agent_dir)


def test_a_hosts_role_pushes_its_readings_and_budgets(agent_dir, real_home, hosts, team_url):
    """Under row-level security (a host's role, docs/security.md) the readings and budgets go
    through the staging tables like the other rows."""
    synced(agent_dir)
    config_file().write_text("[budget]\nweekly = 70\n")
    report = push(str(agent_dir), hosts["laptop-ana"], host="laptop-ana", tier="usage")
    assert (report.quota, report.budgets) == (521, 1)
    assert server_rows(team_url, "laptop-ana") == local_rows(agent_dir)
    # Nor can it write another host's: the budgets it names are its own.
    with (
        psycopg.connect(hosts["laptop-ana"]) as connection,
        pytest.raises(psycopg.errors.InsufficientPrivilege),
    ):
        connection.execute("INSERT INTO budgets VALUES ('laptop-bob', 'daily', 'all', '', 1, 80)")
