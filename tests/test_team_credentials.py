"""Passwords are never printed: a password planted in every form a connection string can hold
it is looked for in everything the verbs and the library say (stdout, stderr, ``--json``
errors, exceptions and their tracebacks); and libpq's own sources of credentials (PGPASSWORD,
~/.pgpass, PGSERVICE, the PG* variables, $XCSH_STORE_DB) reach the connection."""

from __future__ import annotations

import traceback
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote, urlsplit

import pytest
from click.testing import CliRunner
from session_builder import planted_host

from xcsh_store.cli import cli
from xcsh_store.team import TeamConnectionError, TeamIndex, connect, push

PASSWORD = "Quokka7/Lantern@Velvet?Zebra"
# Every way the password can be spelled, and its pieces between / @ ? (what libpq would take
# for a host or a database name out of a URL it misreads).
SPELLINGS = {PASSWORD, quote(PASSWORD, safe=""), quote(PASSWORD), "Quokka7", "Lantern",
             "Velvet", "Zebra"}  # fmt: skip


def forms(url: str) -> dict[str, str]:
    """The connection string ``url`` (reachable, trust authentication) with the password
    planted in each form, some reachable, some not, some malformed."""
    parts = urlsplit(url)
    host, port, database = parts.hostname, parts.port or 5432, parts.path[1:]
    encoded = quote(PASSWORD, safe="")
    return {
        "user:password@, percent-encoded": f"postgresql://postgres:{encoded}@{host}:{port}/{database}",
        "user:password@, unencoded / @ ?": f"postgresql://postgres:{PASSWORD}@{host}:{port}/{database}",
        "plain password, unreachable": f"postgresql://postgres:Quokka7@{host}:1/{database}",
        "?password=": f"postgresql://postgres@{host}:{port}/{database}?password={encoded}",
        "?password=, unreachable": f"postgresql://postgres@{host}:1/none?password={encoded}",
        "key=value": f"host={host} port={port} dbname={database} user=postgres"
        f" password='{PASSWORD}'",
        "key=value, unknown database": f"host={host} port={port} dbname=no_such_{database}"
        f" user=postgres password='{PASSWORD}'",
        "malformed percent-encoding": f"postgresql://postgres:{encoded}%zz@{host}/{database}",
        "malformed port": f"postgresql://postgres:{encoded}@{host}:notaport/{database}",
        "malformed parameter": f"postgresql://postgres@{host}/{database}?Lantern={encoded}",
        "malformed sslmode": f"postgresql://postgres:{encoded}@{host}:{port}/{database}"
        "?sslmode=bogus",
        "malformed key=value": f"host={host} password='{PASSWORD}",
    }


def leaked(text: str) -> set[str]:
    return {spelling for spelling in SPELLINGS if spelling in text}


def cli_outputs(agent_dir: Path, conninfo: str) -> list[str]:
    """stdout and stderr of every verb that takes a connection string, with and without
    --json, and with the string in $XCSH_STORE_DB instead of the command line."""
    runs = [
        ["push", conninfo, "--host", "h1"],
        ["push", conninfo, "--host", "h1", "--json"],
        ["--db", conninfo, "ls"],
        ["--db", conninfo, "ls", "--json"],
        ["--db", conninfo, "sql", "SELECT 1", "--allow-privileged-role"],
        ["--db", conninfo, "sql", "SELECT 1", "--json"],
        ["team", "migrate", conninfo],
    ]
    outputs = []
    for arguments in runs:
        result = CliRunner().invoke(cli, arguments)
        outputs += [result.stdout, result.stderr]
        if result.exception and not isinstance(result.exception, SystemExit):
            outputs += _described(result.exception)
    for arguments in (["push", "--host", "h1"], ["ls"], ["sql", "SELECT 1"]):
        result = CliRunner().invoke(cli, arguments, env={"XCSH_STORE_DB": conninfo})
        outputs += [result.stdout, result.stderr]
    return outputs


def _described(error: BaseException) -> list[str]:
    """What a program that catches ``error`` could print: its str, repr and traceback."""
    return [str(error), repr(error), "".join(traceback.format_exception(error))]


def library_outputs(agent_dir: Path, conninfo: str) -> list[str]:
    calls: list[Callable[[], object]] = [
        lambda: connect(conninfo).close(),
        lambda: TeamIndex.open(conninfo).close(),
        lambda: push(str(agent_dir), conninfo, host="h1"),
    ]
    outputs = []
    for call in calls:
        try:
            call()
        except Exception as error:  # every failure is looked at, whatever its kind
            outputs += _described(error)
    return outputs


def test_a_planted_password_appears_in_no_output(agent_dir: Path, team_url: str) -> None:
    planted_host(agent_dir)
    push(str(agent_dir), team_url, host="h0")  # the schema exists: some forms get through
    failures = 0
    for form, conninfo in forms(team_url).items():
        outputs = cli_outputs(agent_dir, conninfo) + library_outputs(agent_dir, conninfo)
        failures += sum("Error" in text or "Cannot" in text for text in outputs)
        found = {spelling for text in outputs for spelling in leaked(text)}
        assert found == set(), (form, found, [text for text in outputs if leaked(text)][:2])
    assert failures > 20  # the forms that fail were looked at where they fail


def test_the_reachable_forms_connect_with_their_password(agent_dir: Path, team_url: str) -> None:
    """Leaving the password out of messages does not leave it out of the connection."""
    planted_host(agent_dir)
    for form in ("user:password@, percent-encoded", "?password=", "key=value"):
        conninfo = forms(team_url)[form]
        assert push(str(agent_dir), conninfo, host="h1").files > 5
        with TeamIndex.open(conninfo) as index:
            assert index.connection.info.password == PASSWORD, form


def test_an_unencoded_at_or_slash_is_refused_before_libpq(team_url: str) -> None:
    conninfo = forms(team_url)["user:password@, unencoded / @ ?"]
    result = CliRunner().invoke(cli, ["--db", conninfo, "ls"])
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: The URL has an '@' libpq would not read as the end")
    assert "percent-encode" in result.stderr


def test_a_password_on_the_command_line_draws_a_warning(agent_dir: Path, team_url: str) -> None:
    planted_host(agent_dir)
    with_password = forms(team_url)["?password="]
    warning = "Warning: a password on the command line is visible to every user"
    given = CliRunner().invoke(cli, ["push", with_password, "--host", "h1"])
    assert given.exit_code == 0 and given.stderr.startswith(warning)
    listed = CliRunner().invoke(cli, ["--db", with_password, "ls"])
    assert listed.exit_code == 0 and listed.stderr.startswith(warning)
    from_env = CliRunner().invoke(
        cli, ["push", "--host", "h1"], env={"XCSH_STORE_DB": with_password}
    )
    assert from_env.exit_code == 0 and from_env.stderr == ""
    without = CliRunner().invoke(cli, ["--db", team_url, "ls"])
    assert without.exit_code == 0 and without.stderr == ""


# -- libpq's own sources of credentials ------------------------------------------------------


def test_pgpassword_and_pgpass_reach_the_connection(
    agent_dir: Path, team_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    connect(team_url).close()
    home = Path.home()  # the test's own HOME (conftest)
    pgpass = home / ".pgpass"
    pgpass.write_text(f"*:*:*:postgres:{PASSWORD}\n")  # (it has no ':' to escape)
    pgpass.chmod(0o600)
    with TeamIndex.open(team_url) as index:
        assert index.connection.info.password == PASSWORD
    monkeypatch.setenv("PGPASSWORD", "from-the-environment")
    with TeamIndex.open(team_url) as index:
        assert index.connection.info.password == "from-the-environment"


def test_a_service_and_the_pg_variables_name_the_server(
    tmp_path: Path, agent_dir: Path, team_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    planted_host(agent_dir)
    push(str(agent_dir), team_url, host="h0")
    parts = urlsplit(team_url)
    services = tmp_path / "pg_service.conf"
    services.write_text(
        f"[team]\nhost={parts.hostname}\nport={parts.port or 5432}\ndbname={parts.path[1:]}\n"
        "user=postgres\n"
    )
    monkeypatch.setenv("PGSERVICEFILE", str(services))
    for conninfo in ("service=team", "postgresql:///?service=team"):
        result = CliRunner().invoke(cli, ["--db", conninfo, "ls", "--json"])
        assert result.exit_code == 0, result.output
        assert '"host": "h0"' in result.stdout
    monkeypatch.delenv("PGSERVICEFILE")
    for name, value in (("PGHOST", parts.hostname), ("PGPORT", str(parts.port or 5432)),
                        ("PGDATABASE", parts.path[1:]), ("PGUSER", "postgres")):  # fmt: skip
        monkeypatch.setenv(name, value)
    result = CliRunner().invoke(cli, ["--db", "postgresql://", "ls", "--json"])
    assert result.exit_code == 0, result.output
    assert '"host": "h0"' in result.stdout


def test_messages_show_where_not_how(team_url: str) -> None:
    """A connection string in a message is the user, host, port and database it names."""
    parts = urlsplit(team_url)
    with pytest.raises(TeamConnectionError) as caught:
        connect(forms(team_url)["key=value, unknown database"])
    assert str(caught.value).startswith(
        f"Cannot connect to postgresql://postgres@{parts.hostname}:{parts.port or 5432}"
        f"/no_such_{parts.path[1:]}: "
    )
