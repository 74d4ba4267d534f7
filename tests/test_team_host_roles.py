"""Per-host roles (docs/security.md, team migration 0003): with the roles the docs set up, a
host's role pushes its own host, and neither pushes as another host nor reaches another host's
rows with SQL of its own; PostgreSQL's row-level security refuses it, not xcsh-store."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers.team_pushes import rollup_is_fresh
from session_builder import append, message, planted_host, sessions_dir, sync
from team_server import Roles, local_rows, psycopg, server_rows

from xcsh_store.cli import cli
from xcsh_store.team import TeamIndexError, push


@pytest.fixture
def bob_pushed(tmp_path: Path, hosts: dict[str, str], team_url: str) -> dict[str, set]:
    bob = planted_host(tmp_path / "bob", range(5, 7))
    push(str(bob), hosts["laptop-bob"], host="laptop-bob")
    rows = server_rows(team_url, "laptop-bob")
    assert rows == local_rows(bob) and rows["entries"]
    return rows


def test_a_hosts_role_pushes_its_own_host(
    agent_dir: Path, hosts: dict[str, str], team_url: str, bob_pushed: dict[str, set]
) -> None:
    planted_host(agent_dir)
    report = push(str(agent_dir), hosts["laptop-ana"], host="laptop-ana")
    assert report.pushed == report.files > 5
    assert server_rows(team_url, "laptop-ana") == local_rows(agent_dir)
    # Incremental under row-level security too, and its usage rolled up.
    assert push(str(agent_dir), hosts["laptop-ana"], host="laptop-ana").pushed == 0
    with psycopg.connect(team_url) as connection:
        rolled = connection.execute(
            "SELECT host, count(*) FROM usage_rollup GROUP BY host ORDER BY host"
        ).fetchall()
    assert [host for host, _ in rolled] == ["laptop-ana", "laptop-bob"]


def test_a_hosts_role_sends_only_what_grew(
    agent_dir: Path, hosts: dict[str, str], team_url: str, bob_pushed: dict[str, set]
) -> None:
    """Under row-level security too: the new entry inserted through the staging table, the
    watermark and session rows updated, the session's rollup rows made again."""
    planted_host(agent_dir)
    push(str(agent_dir), hosts["laptop-ana"], host="laptop-ana")
    grown = sessions_dir(agent_dir) / "2026-01-03T00-00-00-000Z_planted.jsonl"
    append(grown, message("p3", "p2", "assistant", "one more answer"))
    sync(agent_dir)
    report = push(str(agent_dir), hosts["laptop-ana"], host="laptop-ana")
    assert (report.pushed, report.appended, report.entries) == (1, 1, 1)
    assert server_rows(team_url, "laptop-ana") == local_rows(agent_dir)
    assert rollup_is_fresh(team_url, "laptop-ana")
    assert server_rows(team_url, "laptop-bob") == bob_pushed


def test_a_hosts_role_cannot_push_as_another_host(
    agent_dir: Path, hosts: dict[str, str], team_url: str, bob_pushed: dict[str, set]
) -> None:
    planted_host(agent_dir)
    for host in ("laptop-bob", "laptop-eve"):  # another's host, and one given to nobody
        result = CliRunner().invoke(cli, ["push", hosts["laptop-ana"], "--host", host])
        assert result.exit_code == 1
        assert result.output.startswith("Error: No permission pushing at postgresql://xcsh_host")
        assert "row-level security policy" in result.output
        assert "may write only the hosts the admin gave it" in result.output
    # Lowering the other host's tier would scrub its rows: refused as well.
    with pytest.raises(TeamIndexError, match="row-level security"):
        push(str(agent_dir), hosts["laptop-ana"], host="laptop-bob", tier="usage")
    assert server_rows(team_url, "laptop-bob") == bob_pushed
    with psycopg.connect(team_url) as connection:
        tier = connection.execute("SELECT tier FROM hosts WHERE host = 'laptop-bob'").fetchone()
        assert tier == ("full",)
        assert not connection.execute("SELECT 1 FROM hosts WHERE host = 'laptop-eve'").fetchall()


def test_a_hosts_role_cannot_touch_another_hosts_rows_with_sql(
    hosts: dict[str, str], team_url: str, bob_pushed: dict[str, set]
) -> None:
    """What a role could try with its own psql: every write to bob's rows changes nothing or
    is refused, and the mapping itself is the admin's."""
    bob = "'laptop-bob'"
    changes_nothing = [
        f"DELETE FROM files WHERE host = {bob}",
        f"DELETE FROM entries WHERE host = {bob}",
        f"UPDATE entries SET cost = 0 WHERE host = {bob}",
        f"UPDATE hosts SET tier = 'usage' WHERE host = {bob}",
        f"DELETE FROM usage_rollup WHERE host = {bob}",
        f"SELECT 1 FROM hosts WHERE host = {bob} FOR UPDATE",
    ]
    refused = [
        f"INSERT INTO files (host, path, state, tier) VALUES ({bob}, '/x.jsonl', '', 'full')",
        f"INSERT INTO history (host, id, prompt, created_at, prompt_hash) VALUES ({bob}, 99,"
        " 'planted', 0, 'x')",
        "UPDATE hosts SET host = 'laptop-bob' WHERE host = 'laptop-ana'",
        "INSERT INTO host_roles (host, role) VALUES ('laptop-bob', current_user)",
        "UPDATE host_roles SET role = current_user",
        "DELETE FROM host_roles",
        "TRUNCATE entries",
        "INSERT INTO xcsh_schema (version, name) VALUES (999, 'future')",
    ]
    with psycopg.connect(hosts["laptop-ana"], autocommit=True) as connection:
        connection.execute("INSERT INTO hosts (host, tier) VALUES ('laptop-ana', 'full')")
        for statement in changes_nothing:
            cursor = connection.execute(statement)
            assert cursor.rowcount == 0, statement
        for statement in refused:
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                connection.execute(statement)
    assert server_rows(team_url, "laptop-bob") == bob_pushed


def test_a_group_role_holds_the_hosts_of_its_members(
    tmp_path: Path, roles: Roles, hosts: dict[str, str], team_url: str
) -> None:
    """A CI fleet (docs/security.md): hosts given to a group role, pushed by its members."""
    fleet = roles.run("host", "ci-fleet")["xcsh_host_ci_fleet"]
    group = fleet.split("//")[1].split("@")[0]
    runner = f"{group}_runner"
    roles.made.append(runner)
    with psycopg.connect(team_url, autocommit=True) as connection:
        connection.execute(f"CREATE ROLE {runner} LOGIN IN ROLE {group}")
        connection.execute(
            "INSERT INTO host_roles (host, role) VALUES ('ci-runner-1', %s), ('ci-runner-2', %s)",
            (group, group),
        )
    folder = planted_host(tmp_path / "ci", range(8, 9))
    for host in ("ci-runner-1", "ci-runner-2"):
        push(str(folder), roles.url_of(runner), host=host)
        assert server_rows(team_url, host) == local_rows(folder)
    with pytest.raises(TeamIndexError, match="row-level security"):
        push(str(folder), roles.url_of(runner), host="laptop-ana")


def test_a_pusher_cannot_migrate_and_is_told_who_can(
    agent_dir: Path, hosts: dict[str, str], team_url: str
) -> None:
    planted_host(agent_dir)
    with psycopg.connect(team_url) as connection:
        connection.execute("DELETE FROM xcsh_schema WHERE version = 3")  # as if before 0003
    result = CliRunner().invoke(cli, ["push", hosts["laptop-ana"], "--host", "laptop-ana"])
    assert result.exit_code == 1
    assert result.output.startswith("Error: No permission creating the team schema at")
    assert "`xcsh-store team migrate URL` as that role" in result.output


def test_team_migrate_creates_the_schema(team_url: str) -> None:
    result = CliRunner().invoke(cli, ["team", "migrate", team_url, "--json"])
    assert result.exit_code == 0, result.output
    with psycopg.connect(team_url) as connection:
        (version,) = connection.execute("SELECT max(version) FROM xcsh_schema").fetchone()
        assert connection.execute("SELECT to_regclass('host_roles') IS NOT NULL").fetchone()[0]
    assert result.output.count(f'"schema_version": {version}') == 1
