"""The team index's migrations on the real PostgreSQL: a team index that the clients before the
migration runner left at each earlier schema version (their record in ``xcsh_schema`` has no
checksum) is migrated to this client's schema without losing a row, and pushed to afterwards;
a migration changed after it was applied is refused."""

from __future__ import annotations

from pathlib import Path

import pytest
from session_builder import planted_host
from team_server import local_rows, psycopg, server_rows, team_index_as_of

from xcsh_store.team import TeamIndexError, connect, push
from xcsh_store.team.server import migrations

# The tables of the pushed rows (0002 changes files and hosts, 0003 adds host_roles and
# row-level security), and the columns later migrations added to them, by migration number.
DATA_TABLES = ("sessions", "entries", "blob_refs", "history", "usage_rollup")
ADDED_COLUMNS = {
    ("sessions", "source_gone_at"): 5,
    # How each cost is known (0007, issue 35): absent from the rows an earlier schema held.
    ("entries", "cost_estimated"): 7,
    ("entries", "list_cost"): 7,
    ("usage_rollup", "free"): 7,
    ("usage_rollup", "below_list"): 7,
    ("usage_rollup", "list_cost"): 7,
}


def _columns(connection: psycopg.Connection, table: str, version: int) -> str:
    """The columns of ``table`` that COPY can write (a generated column it cannot) and that
    schema ``version`` has."""
    rows = connection.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_schema = 'public'"
        " AND table_name = %s AND is_generated = 'NEVER' ORDER BY ordinal_position",
        (table,),
    )
    return ", ".join(
        f'"{name}"' for (name,) in rows if ADDED_COLUMNS.get((table, name), 0) <= version
    )


def _rows(url: str, version: int) -> dict[str, list[tuple[object, ...]]]:
    """Every row of the data tables, in one order: the columns schema ``version`` has (a later
    migration's columns are made from the rows kept, or by the next push)."""
    with psycopg.connect(url) as connection:
        return {
            table: connection.execute(
                f"SELECT {_columns(connection, table, version)} FROM {table} ORDER BY 1, 2, 3"
            ).fetchall()
            for table in DATA_TABLES
        }


def _moved_to_schema(url: str, version: int) -> None:
    """The hosts, files and rows a push left at ``url``, put into a team index as the clients
    before the migration runner made it at schema ``version``."""
    copied: dict[str, tuple[str, bytes]] = {}
    with psycopg.connect(url, autocommit=True) as connection:
        hosts = connection.execute("SELECT host, tier FROM hosts").fetchall()
        files = connection.execute("SELECT host, path, state, tier FROM files").fetchall()
        for table in DATA_TABLES:
            columns = _columns(connection, table, version)
            with connection.cursor().copy(f"COPY {table} ({columns}) TO STDOUT") as copy:
                copied[table] = (columns, b"".join(bytes(block) for block in copy))
        connection.execute("DROP SCHEMA public CASCADE")
        connection.execute("CREATE SCHEMA public")
    team_index_as_of(url, version)
    with psycopg.connect(url, autocommit=True) as connection:
        connection.cursor().executemany("INSERT INTO hosts (host, tier) VALUES (%s, %s)", hosts)
        # Schema 1 kept each file's size beside its watermark (migration 0002 drops it).
        sized = ", indexed_bytes" if version == 1 else ""
        connection.cursor().executemany(
            f"INSERT INTO files (host, path, state, tier{sized})"
            f" VALUES (%s, %s, %s, %s{', 0' if sized else ''})",
            files,
        )
        for table, (columns, data) in copied.items():
            with connection.cursor().copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                copy.write(data)


def _record(url: str) -> list[tuple[int, str, str | None]]:
    """xcsh_schema's rows: version, file name, checksum (None also where there is no such
    column, as the clients before the runner made the table)."""
    with psycopg.connect(url) as connection:
        return connection.execute(
            "SELECT version, name, to_jsonb(s) ->> 'checksum' FROM xcsh_schema AS s"
            " ORDER BY version"
        ).fetchall()


@pytest.mark.parametrize("version", [1, 2, 3])
def test_an_earlier_schema_is_migrated_keeping_every_row(
    agent_dir: Path, team_url: str, version: int
) -> None:
    planted_host(agent_dir)
    push(str(agent_dir), team_url, host="desk")
    pushed = _rows(team_url, version)
    assert all(pushed[table] for table in ("sessions", "entries", "blob_refs", "usage_rollup"))
    _moved_to_schema(team_url, version)

    connect(team_url).close()

    assert _rows(team_url, version) == pushed
    shipped = migrations()
    assert _record(team_url) == [
        (
            migration.number,
            f"{migration.name}.sql",
            None if migration.number <= version else migration.checksum,
        )
        for migration in shipped
    ]
    push(str(agent_dir), team_url, host="desk")
    assert server_rows(team_url, "desk") == local_rows(agent_dir)


def test_a_new_team_index_records_each_migration_with_its_checksum(team_url: str) -> None:
    connect(team_url).close()
    assert _record(team_url) == [
        (migration.number, f"{migration.name}.sql", migration.checksum)
        for migration in migrations()
    ]


def test_a_migration_changed_after_it_was_applied_is_refused(team_url: str) -> None:
    connect(team_url).close()
    with psycopg.connect(team_url) as connection:
        connection.execute("UPDATE xcsh_schema SET checksum = 'edited' WHERE version = 1")
    with pytest.raises(TeamIndexError, match=r"0001_initial\.sql as another xcsh-store had it"):
        connect(team_url)
    with pytest.raises(TeamIndexError, match="its checksum differs"):
        connect(team_url, read_only=True)
