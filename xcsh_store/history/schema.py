"""The schema of ``history.db``: its numbered migrations (history/migrations/*.sql, run by
xcsh_store/sql_migrations.py and recorded in its ``schema_migrations`` table), the check that a file
is a prompt history at all, and how a file made before that record is adopted.

xcsh makes the same file (decisions.md D9) and keeps no record of migrations, nor did
xcsh-store before this runner: such a file counts as having each migration, in order, whose
every object (table, index, trigger) is there, and the rest run. A history table of xcsh's
oldest schema, with a ``unixepoch()`` default, is first rebuilt on migration 0001's schema as
xcsh itself rebuilds it, keeping every row and its id.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from importlib import resources

import apsw

from xcsh_store.errors import HistoryError
from xcsh_store.sql_migrations import Applied, Migration, load_migrations

REQUIRED_COLUMNS = ("id", "prompt", "created_at", "cwd")

# The names a migration creates: a file has the migration when it has all of them.
_CREATED = re.compile(
    r"CREATE\s+(?:VIRTUAL\s+)?(?:TABLE|INDEX|TRIGGER)\s+IF\s+NOT\s+EXISTS\s+(\w+)", re.IGNORECASE
)
# As in the reference: a history table with a unixepoch() default is moved aside, made again
# with the strftime() default (migration 0001) and given every row back with its id; the
# insert trigger of 0001 indexes them.
_LEGACY_ASIDE_SQL = """
ALTER TABLE history RENAME TO history_legacy;
DROP INDEX IF EXISTS idx_history_created_at;
DROP TRIGGER IF EXISTS history_ai;
DROP TABLE IF EXISTS history_fts;
"""
_LEGACY_BACK_SQL = """
INSERT INTO history (id, prompt, created_at, cwd)
  SELECT id, prompt, created_at, cwd FROM history_legacy;
DROP TABLE history_legacy;
"""


def history_migrations() -> list[Migration]:
    return load_migrations(resources.files("xcsh_store.history") / "migrations", HistoryError)


def schema_objects(connection: apsw.Connection) -> dict[str, tuple[str, str | None]]:
    """Every object of the file: name -> (type, SQL)."""
    rows = connection.execute("SELECT name, type, sql FROM sqlite_master")
    return {name: (kind, sql) for name, kind, sql in rows}


def check_schema(connection: apsw.Connection, db_path: str) -> None:
    """Refuse a file whose history/history_fts are something other than what we would write."""
    objects = schema_objects(connection)
    if "history" in objects:
        kind = objects["history"][0]
        if kind != "table":
            raise HistoryError(f"{db_path} is not a prompt history: 'history' is a {kind}")
        columns = {row[1] for row in connection.execute("PRAGMA table_info(history)")}
        missing = [name for name in REQUIRED_COLUMNS if name not in columns]
        if missing:
            raise HistoryError(
                f"{db_path} is not a prompt history this version understands:"
                f" table history lacks column(s) {', '.join(missing)}"
            )
    if "history_fts" in objects and "fts5" not in (objects["history_fts"][1] or "").lower():
        raise HistoryError(f"{db_path} is not a prompt history: history_fts is not an FTS5 table")


def adopt(connection: apsw.Connection, migrations: Sequence[Migration], db_path: str) -> int:
    """How many of ``migrations`` a file that records none has (see the module's docstring),
    checked again under the write lock, as another process may have set it up meanwhile."""
    check_schema(connection, db_path)
    objects = schema_objects(connection)
    if "unixepoch(" in (objects.get("history", ("", ""))[1] or "").lower():
        connection.execute(_LEGACY_ASIDE_SQL)
        connection.execute(migrations[0].sql)
        connection.execute(_LEGACY_BACK_SQL)
        objects = schema_objects(connection)
    adopted = 0
    for migration in migrations:
        if not set(_CREATED.findall(migration.sql)) <= objects.keys():
            break
        adopted += 1
    return adopted


class Refusals:
    """What a prompt history says when it cannot be migrated (xcsh_store/sql_migrations.py)."""

    def __init__(self, db_path: str) -> None:
        self.db_path = db_path

    def newer(self, newest: Applied, known: Migration) -> HistoryError:
        return HistoryError(
            f"prompt history {self.db_path} was written by a newer xcsh-store (schema"
            f" {newest.name}, this one knows {known.name}); upgrade xcsh-store. The file was"
            " left unchanged"
        )

    def changed(self, applied: Applied) -> HistoryError:
        return HistoryError(
            f"prompt history {self.db_path}: its migration {applied.name} is not the one this"
            " xcsh-store ships (the installation was changed); the file was left unchanged"
        )
