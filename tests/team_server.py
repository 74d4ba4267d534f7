"""The PostgreSQL server the team-index tests talk to (never a mock), and what they compare.

The fixtures, in conftest.py: ``team_server``, a fresh database (unique name) on $XCSH_TEST_PG
(default: the local server, postgres user) for the whole test session, dropped after it
(unreachable: with CI=true the tests fail, elsewhere they are skipped with a one-line reason);
``team_url``, that database emptied for one test; ``roles``, the roles a test makes, dropped
after it.
"""

from __future__ import annotations

import os
import re
import secrets
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

psycopg = pytest.importorskip("psycopg", reason="the team tests need psycopg (the team extra)")

PG_ENV = "XCSH_TEST_PG"
DEFAULT_PG = "postgresql://postgres@127.0.0.1:5432/postgres"


def database_url(base: str, name: str) -> str:
    parts = urlsplit(base)
    return urlunsplit((parts.scheme, parts.netloc, f"/{name}", parts.query, parts.fragment))


def fresh_database() -> Iterator[str]:
    """The ``team_server`` fixture (conftest.py): a new database, dropped at the end."""
    base = os.environ.get(PG_ENV, DEFAULT_PG)
    try:
        admin = psycopg.connect(base, autocommit=True, connect_timeout=5)
    except psycopg.Error as error:
        reason = f"PostgreSQL unreachable at {base} (set {PG_ENV}): {str(error).strip()[:200]}"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    name = f"xcsh_test_{os.getpid()}_{secrets.token_hex(4)}"
    with admin:
        admin.execute(f'CREATE DATABASE "{name}"')
        try:
            yield database_url(base, name)
        finally:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def emptied(url: str) -> str:
    """The ``team_url`` fixture (conftest.py): the database at ``url`` with nothing in it."""
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute("DROP SCHEMA public CASCADE")
        connection.execute("CREATE SCHEMA public")
    return url


def team_index_as_of(url: str, version: int) -> None:
    """The team index at ``url`` as the clients before the migration runner left it at schema
    ``version``: migrations 1 to ``version`` applied, each recorded in ``xcsh_schema`` by its
    version and file name, with no checksum."""
    from xcsh_store.team.server import migrations

    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(
            "CREATE TABLE xcsh_schema (version integer PRIMARY KEY, name text NOT NULL,"
            " applied_at timestamptz NOT NULL DEFAULT now())"
        )
        for migration in migrations()[:version]:
            connection.execute(migration.sql)
            connection.execute(
                "INSERT INTO xcsh_schema (version, name) VALUES (%s, %s)",
                (migration.number, f"{migration.name}.sql"),
            )


# The columns of a rate-limit reading both sides hold (the local index's and the server's).
QUOTA = "seq, slot, observed_at, used_percent, window_minutes, resets_at, limit_id, plan_type"


def server_rows(url: str, host: str) -> dict[str, set[tuple[Any, ...]]]:
    """The host's sessions, entries (without text), blob refs and rate-limit readings on the
    server."""
    with psycopg.connect(url) as connection:
        return {
            "sessions": set(connection.execute(
                "SELECT path, session_id, cwd, modified_at, entry_count, message_count,"
                " input_tokens, output_tokens, cost FROM sessions WHERE host = %s", (host,))),
            "entries": set(connection.execute(
                "SELECT path, seq, id, parent_id, type, timestamp, role, model, input_tokens,"
                " output_tokens, cost FROM entries WHERE host = %s", (host,))),
            "blob_refs": set(connection.execute(
                "SELECT path, seq, hash FROM blob_refs WHERE host = %s", (host,))),
            "quota_observations": set(connection.execute(
                f"SELECT path, {QUOTA} FROM quota_observations WHERE host = %s", (host,))),
        }  # fmt: skip


def local_rows(agent_dir: Path) -> dict[str, set[tuple[Any, ...]]]:
    """The same rows as the agent dir's index.db holds them (read with the sqlite3 module)."""
    connection = sqlite3.connect(f"file:{agent_dir / 'index.db'}?mode=ro", uri=True)
    try:
        return {
            "sessions": set(connection.execute(
                "SELECT path, session_id, cwd, modified_at, entry_count, message_count,"
                " input_tokens, output_tokens, cost FROM sessions")),
            "entries": set(connection.execute(
                "SELECT s.path, e.seq, e.id, e.parent_id, e.type, e.timestamp, e.role, e.model,"
                " e.input_tokens, e.output_tokens, e.cost"
                " FROM entries AS e JOIN sessions AS s ON s.file_id = e.session")),
            "blob_refs": set(connection.execute(
                "SELECT s.path, e.seq, r.hash FROM blob_refs AS r JOIN entries AS e"
                " ON e.pk = r.entry JOIN sessions AS s ON s.file_id = e.session")),
            "quota_observations": set(connection.execute(
                f"SELECT s.path, {QUOTA} FROM quota_observations AS q"
                " JOIN sessions AS s ON s.file_id = q.file_id")),
        }  # fmt: skip
    finally:
        connection.close()


def text_values(url: str) -> Iterator[tuple[str, str, str]]:
    """(table, column, value) of every text, json or tsvector value in every table."""
    with psycopg.connect(url) as connection:
        columns = connection.execute(
            "SELECT table_name, column_name FROM information_schema.columns"
            " WHERE table_schema = 'public' AND data_type IN ('text', 'json', 'jsonb',"
            " 'tsvector', 'character varying') AND table_name IN (SELECT table_name"
            " FROM information_schema.tables WHERE table_type = 'BASE TABLE')"
        ).fetchall()
        for table, column in columns:
            for (value,) in connection.execute(
                f'SELECT "{column}"::text FROM "{table}" WHERE "{column}" IS NOT NULL'
            ):
                yield table, column, value


def all_values(url: str) -> list[str]:
    """Every non-NULL value of every column of every table, as text: all the server holds."""
    with psycopg.connect(url) as connection:
        columns = connection.execute(
            "SELECT c.table_name, c.column_name FROM information_schema.columns AS c"
            " JOIN information_schema.tables AS t USING (table_schema, table_name)"
            " WHERE c.table_schema = 'public' AND t.table_type = 'BASE TABLE'"
        ).fetchall()
        return [
            value
            for table, column in columns
            for (value,) in connection.execute(
                f'SELECT "{column}"::text FROM "{table}" WHERE "{column}" IS NOT NULL'
            )
        ]


SECURITY_DOC = Path(__file__).resolve().parents[1] / "docs" / "security.md"


def documented_sql(name: str) -> str:
    """The SQL block docs/security.md marks ``<!-- sql: NAME -->``: the tests run what the
    docs tell an admin to run."""
    found = re.search(rf"<!-- sql: {name} -->\n```sql\n(.*?)```", SECURITY_DOC.read_text(), re.S)
    assert found, f"docs/security.md has no SQL block {name!r}"
    return found.group(1)


class Roles:
    """Roles made by the docs' SQL, named uniquely for one test and dropped after it (roles
    belong to the whole cluster, which other test runs share)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.suffix = f"_{os.getpid()}_{secrets.token_hex(3)}"
        self.made: list[str] = []

    def run(self, block: str, host: str = "laptop-ana") -> dict[str, str]:
        """Run the docs' ``block`` (for ``host``, when it makes a host's role); the URL of
        each role it made, by its name in the docs."""
        sql = documented_sql(block).replace("laptop-ana", host)
        sql = sql.replace("laptop_ana", host.replace("-", "_"))
        sql = re.sub(r"\bxcsh_(?!admin\b)\w+", lambda name: name.group() + self.suffix, sql)
        sql = sql.replace("DATABASE team", f'DATABASE "{urlsplit(self.url).path[1:]}"')
        sql = sql.replace("FOR ROLE xcsh_admin", "FOR ROLE postgres")
        made = re.findall(r"CREATE ROLE (\w+)", sql)
        self.made += made
        with psycopg.connect(self.url, autocommit=True) as connection:
            connection.execute(sql)
        return {name.removesuffix(self.suffix): self.url_of(name) for name in made}

    def url_of(self, role: str) -> str:
        parts = urlsplit(self.url)
        netloc = f"{role}@{parts.hostname}:{parts.port or 5432}"
        return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))

    def drop(self) -> None:
        with psycopg.connect(self.url, autocommit=True) as connection:
            for role in reversed(self.made):
                connection.execute(f'DROP OWNED BY "{role}"')
                connection.execute(f'DROP ROLE "{role}"')


# The team index's tables a push writes.
TEAM_TABLES = (
    "hosts", "files", "sessions", "entries", "blob_refs", "history", "usage_rollup",
    "quota_observations", "budgets",
)  # fmt: skip


def count_row_writes(url: str) -> None:
    """Triggers that log every row inserted, updated or deleted in the team tables into
    ``row_writes (tab, op)``."""
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute("CREATE TABLE row_writes (tab text, op text)")
        connection.execute(
            "CREATE FUNCTION log_row_write() RETURNS trigger LANGUAGE plpgsql AS"
            " $$BEGIN INSERT INTO row_writes VALUES (TG_TABLE_NAME, TG_OP); RETURN NULL; END$$"
        )
        for table in TEAM_TABLES:
            connection.execute(
                f"CREATE TRIGGER log_row_write AFTER INSERT OR UPDATE OR DELETE ON {table}"
                " FOR EACH ROW EXECUTE FUNCTION log_row_write()"
            )
