"""The one migration runner (xcsh_store/sql_migrations.py) on real SQLite files: the folder of
numbered SQL files is read strictly, a database migrated by a newer program or by a changed
migration is refused, the missing migrations run in number order, each in a transaction that
records it, and a database made before its migrations were recorded is adopted once, even by
two connections at a time. (The index, history.db and the team index each have their own tests
of the runner on their databases: test_index_migrations.py, test_history.py,
test_team_migrations.py.)"""

from __future__ import annotations

import hashlib
from pathlib import Path

import apsw
import pytest
from workers import held_at_first_begin

from xcsh_store.errors import XcshStoreError
from xcsh_store.sql_migrations import (
    Applied,
    Migration,
    SQLiteLedger,
    apply_pending,
    load_migrations,
    pending,
)


class FolderError(XcshStoreError):
    """The error class a database gives the runner for its folder."""


class RefusedError(XcshStoreError):
    pass


class Refusals:
    def newer(self, newest: Applied, known: Migration) -> RefusedError:
        return RefusedError(f"newer: {newest.name} (knows {known.name})")

    def changed(self, applied: Applied) -> RefusedError:
        return RefusedError(f"changed: {applied.name}")


def folder_of(tmp_path: Path, files: dict[str, str]) -> Path:
    folder = tmp_path / "migrations"
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text)
    return folder


MIGRATIONS = {
    "0001_first.sql": "CREATE TABLE first (x);",
    "0002_second.sql": "CREATE TABLE second (x); INSERT INTO second VALUES (2);",
    "0003_third.sql": "CREATE TABLE third (x);",
}


@pytest.fixture
def migrations(tmp_path: Path) -> list[Migration]:
    return load_migrations(folder_of(tmp_path, MIGRATIONS), FolderError)


def tables(connection: apsw.Connection) -> set[str]:
    rows = connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
    return {name for (name,) in rows}


def recorded(connection: apsw.Connection) -> list[tuple[str, str]]:
    return connection.execute(
        "SELECT name, checksum FROM schema_migrations ORDER BY name"
    ).fetchall()


# The folder


def test_the_folder_is_read_in_number_order_with_checksums(tmp_path: Path) -> None:
    files = {"0010_later.sql": "-- ten\n", "0002_sooner.sql": "-- two\n", "notes.txt": "x"}
    found = load_migrations(folder_of(tmp_path, {**files, "__init__.py": ""}), FolderError)
    assert [(migration.number, migration.name) for migration in found] == [
        (2, "0002_sooner"),
        (10, "0010_later"),
    ]
    assert found[1].sql == "-- ten\n"
    assert found[1].checksum == hashlib.sha256(b"-- ten\n").hexdigest()


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({"0001_a.sql": "", "1_b.sql": ""}, "'1_b.sql' is not NNNN_name.sql"),
        ({"0001_Upper.sql": ""}, "'0001_Upper.sql' is not NNNN_name.sql"),
        (
            {"0001_b.sql": "", "0001_a.sql": "", "0002_c.sql": ""},
            "Two migrations share the number 0001: 0001_a.sql and 0001_b.sql",
        ),
        ({"README.txt": "no SQL here"}, "No schema migrations in"),
    ],
)
def test_a_broken_folder_is_refused_in_the_databases_error(
    tmp_path: Path, files: dict[str, str], message: str
) -> None:
    with pytest.raises(FolderError, match=message):
        load_migrations(folder_of(tmp_path, files), FolderError)


# The checks


def applied(migration: Migration, checksum: str | None = "same") -> Applied:
    return Applied(
        migration.number,
        migration.name,
        migration.checksum if checksum == "same" else checksum,
    )


def test_what_is_missing_comes_in_number_order_gaps_included(
    migrations: list[Migration],
) -> None:
    first, second, third = migrations
    assert pending(migrations, [], Refusals()) == migrations
    assert pending(migrations, [applied(first), applied(third)], Refusals()) == [second]
    assert pending(migrations, [applied(third), applied(first), applied(second)], Refusals()) == []


def test_a_migration_this_program_lacks_is_refused_naming_the_newest(
    migrations: list[Migration],
) -> None:
    ahead = [applied(migrations[0]), Applied(7, "0007_x", "c"), Applied(12, "0012_y", "c")]
    with pytest.raises(RefusedError, match=r"newer: 0012_y \(knows 0003_third\)"):
        pending(migrations, ahead, Refusals())
    with pytest.raises(RefusedError, match="newer: not-ours"):
        pending(migrations, [Applied(-1, "not-ours", None)], Refusals())


def test_a_changed_migration_is_refused_and_an_unknown_checksum_is_not_checked(
    migrations: list[Migration],
) -> None:
    with pytest.raises(RefusedError, match="changed: 0002_second"):
        pending(migrations, [applied(migrations[0]), applied(migrations[1], "edited")], Refusals())
    unchecked = [applied(migrations[0], None), applied(migrations[1], None)]
    assert pending(migrations, unchecked, Refusals()) == [migrations[2]]


# SQLite


def test_sqlite_migrations_run_in_order_once_each_recorded(
    tmp_path: Path, migrations: list[Migration]
) -> None:
    connection = apsw.Connection(str(tmp_path / "a.db"))
    ledger = SQLiteLedger(connection, migrations)
    assert apply_pending(ledger, migrations[:2], Refusals()) == migrations[:2]
    assert tables(connection) == {"first", "second", "schema_migrations"}
    assert apply_pending(ledger, migrations, Refusals()) == [migrations[2]]
    assert apply_pending(ledger, migrations, Refusals()) == []
    assert recorded(connection) == [(m.name, m.checksum) for m in migrations]
    assert connection.execute("SELECT x FROM second").fetchall() == [(2,)]


def test_a_failing_migration_leaves_nothing_of_itself(tmp_path: Path) -> None:
    files = {
        **MIGRATIONS,
        "0002_second.sql": "CREATE TABLE second (x); INSERT INTO nowhere VALUES (1);",
    }
    migrations = load_migrations(folder_of(tmp_path, files), FolderError)
    connection = apsw.Connection(str(tmp_path / "a.db"))
    with pytest.raises(apsw.SQLError, match="nowhere"):
        apply_pending(SQLiteLedger(connection, migrations), migrations, Refusals())
    assert tables(connection) == {"first", "schema_migrations"}
    assert [name for name, _ in recorded(connection)] == ["0001_first"]
    assert not connection.in_transaction


def test_a_database_from_before_the_record_is_adopted_once_by_two_connections(
    tmp_path: Path, migrations: list[Migration]
) -> None:
    """Two processes open the same unrecorded file at once: the second has read that nothing
    is recorded, and the first adopts and migrates it before the second takes the lock."""
    path = str(tmp_path / "a.db")
    made_earlier = apsw.Connection(path)
    made_earlier.execute(migrations[0].sql)
    made_earlier.close()
    adopted: list[str] = []

    def adopt(connection: apsw.Connection) -> int:
        adopted.append(path)
        return 1 if "first" in tables(connection) else 0

    first, second = apsw.Connection(path), apsw.Connection(path)
    for connection in (first, second):
        connection.set_busy_timeout(10_000)

    def migrate(connection: apsw.Connection) -> list[Migration]:
        return apply_pending(SQLiteLedger(connection, migrations, adopt), migrations, Refusals())

    with held_at_first_begin(second, lambda: migrate(second)) as second_applied:
        assert migrate(first) == migrations[1:]
    assert second_applied == [[]]
    assert adopted == [path]
    assert recorded(second) == [(m.name, m.checksum) for m in migrations]
