"""``sql --db`` cannot run programs on the database host, touch its files or reload its
configuration, whatever READ ONLY lets through: a superuser is refused by xcsh-store, and the
documented reader role (docs/security.md) is refused by PostgreSQL itself. The attacks are
the statements the issue ran through ``sql --db``."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from session_builder import planted_host
from team_server import Roles, psycopg

from xcsh_store.cli import cli
from xcsh_store.team import push


@pytest.fixture
def marker() -> Iterator[Path]:
    """A path the database server's OS user could create if a statement ran a program or
    wrote a file (a folder every user may write to)."""
    folder = tempfile.mkdtemp(prefix="xcsh-attack-")
    os.chmod(folder, 0o777)  # the server's OS user must be able to write here
    yield Path(folder) / "ran"
    for name in os.listdir(folder):
        os.unlink(os.path.join(folder, name))
    os.rmdir(folder)


def attacks(marker: Path) -> dict[str, str]:
    return {
        "COPY TO PROGRAM": f"COPY (SELECT 1) TO PROGRAM 'touch {marker}'",
        "COPY TO a file": f"COPY (SELECT 1) TO '{marker}'",
        "pg_read_file": "SELECT pg_read_file('postgresql.auto.conf')",
        "lo_import": "SELECT lo_import('/etc/hostname')",
        "lo_export": f"SELECT lo_export(1, '{marker}')",
        "pg_reload_conf": "SELECT pg_reload_conf()",
    }


@pytest.fixture
def reader(agent_dir: Path, team_url: str, roles: Roles) -> str:
    """The documented reader role's URL, on a team index one host pushed to."""
    planted_host(agent_dir)
    push(str(agent_dir), team_url, host="laptop")
    return roles.run("reader")["xcsh_reader"]


def sql(url: str, statement: str, *options: str) -> Result:
    return CliRunner().invoke(cli, ["--db", url, "sql", statement, *options])


def test_read_only_alone_lets_a_superuser_run_a_program(team_url: str) -> None:
    """Why the refusal is needed: the issue's finding, on this server."""
    with psycopg.connect(team_url) as connection:
        connection.read_only = True
        # The program reads what COPY writes (`true` would exit first: a broken pipe, at times).
        connection.execute("COPY (SELECT 1) TO PROGRAM 'cat > /dev/null'")  # no error: it ran


def test_a_superuser_is_refused_before_the_statement_runs(
    reader: str, team_url: str, marker: Path
) -> None:
    for name, statement in attacks(marker).items():
        result = sql(team_url, statement)
        assert result.exit_code == 1, (name, result.output)
        assert result.stderr.startswith("Error: Refusing to run SQL as postgres (superuser)")
        assert "--allow-privileged-role" in result.stderr
        assert not marker.exists(), name


def test_the_documented_reader_role_is_refused_by_postgresql(reader: str, marker: Path) -> None:
    assert json.loads(sql(reader, "SELECT count(*) AS n FROM entries", "--json").output)[0]["n"]
    for name, statement in attacks(marker).items():
        result = sql(reader, statement)
        assert result.exit_code == 1, (name, result.output)
        line = result.stderr.strip()
        assert line.startswith("Error: PostgreSQL refused running the query at postgresql://")
        assert "permission denied" in line or "must be superuser" in line, (name, line)
        # Not the hint of a missing table privilege: nothing a GRANT should fix.
        assert "needs" not in line and "\n" not in line
        assert not marker.exists(), name


def test_a_role_with_a_server_power_is_refused(reader: str, team_url: str, roles: Roles) -> None:
    role = reader.split("//")[1].split("@")[0]
    with psycopg.connect(team_url, autocommit=True) as connection:
        connection.execute(f"GRANT pg_read_server_files TO {role}")
    result = sql(reader, "SELECT 1")
    assert result.exit_code == 1
    assert f"Refusing to run SQL as {role} (pg_read_server_files)" in result.stderr


def test_allow_privileged_role_runs_it_and_says_so(reader: str, team_url: str) -> None:
    result = sql(team_url, "SELECT 1 AS one", "--allow-privileged-role", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == [{"one": 1}]
    assert result.stderr.startswith("Warning: --allow-privileged-role: running as a role with")


def test_one_statement_only_so_commit_cannot_end_read_only(reader: str, team_url: str) -> None:
    """The simple protocol would run ``COMMIT`` and then the DELETE outside the READ ONLY
    transaction; the statement goes alone, and even a superuser cannot do that."""
    for statement in ("COMMIT; DELETE FROM sessions", "SELECT 1; COMMIT; DELETE FROM sessions"):
        for url, options in ((reader, ()), (team_url, ("--allow-privileged-role",))):
            result = sql(url, statement, *options)
            assert result.exit_code == 1, result.output
            assert "cannot insert multiple commands" in result.stderr
    with psycopg.connect(team_url) as connection:
        assert connection.execute("SELECT count(*) FROM sessions").fetchone()[0] > 5


def test_a_statement_over_the_time_limit_says_it_timed_out(reader: str) -> None:
    result = sql(reader, "SELECT pg_sleep(5)", "--timeout", "0.2")
    assert result.exit_code == 1
    line = result.stderr.strip()
    assert line.startswith("Error: Timed out running the query at postgresql://")
    assert "canceling statement due to statement timeout" in line
    assert "raise `sql --timeout` (0 for no limit)" in line and "Lost the connection" not in line
