"""Numbered SQL migrations: the one runner of every database the store keeps, index.db and
history.db (SQLite, through apsw) and the team index (PostgreSQL, through psycopg).

A database's migrations are the files ``NNNN_name.sql`` of one folder. The runner reads them
(every ``.sql`` name of that form, no number twice, none at all an error) and compares them
with the record the database keeps of the migrations applied to it, its :class:`Ledger`. It
refuses a database that a newer program migrated (a migration applied there that this program
lacks) and one whose migration has changed since it was applied (its checksum), then applies
what the database lacks in number order, each in a transaction of the ledger's in which it is
looked for again (another program may have applied it meanwhile) and recorded.

:class:`SQLiteLedger` is the record of a SQLite database: its ``schema_migrations`` table,
made by the first migration's transaction, which can first adopt a database made before it
kept one (``adopt``: history.db as xcsh makes it). The team index's ledger is in
team/server.py, with psycopg.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import apsw

from xcsh_store.errors import XcshStoreError
from xcsh_store.times import iso_now

if TYPE_CHECKING:
    from contextlib import AbstractContextManager
    from importlib.resources.abc import Traversable

MIGRATION_NAME = re.compile(r"(\d{4})_[a-z0-9_]+\.sql")


@dataclass(frozen=True, slots=True)
class Migration:
    """One migration file: its number, its name (the file name without ``.sql``), its SQL
    and the SHA-256 of that text."""

    number: int
    name: str
    sql: str
    checksum: str


@dataclass(frozen=True, slots=True)
class Applied:
    """A migration as a database's ledger records it. ``checksum`` is None when the program
    that applied it kept none (the team index before this runner): it is not checked."""

    number: int
    name: str
    checksum: str | None


class Ledger(Protocol):
    """The record of one database's migrations, and how to change that database."""

    def applied(self) -> list[Applied]:
        """The migrations recorded as applied; [] for a database that keeps no record yet."""
        ...

    def transaction(self) -> AbstractContextManager[object]:
        """One migration's transaction, with the lock that keeps other programs out of it."""
        ...

    def execute(self, sql: str) -> None:
        """Run one migration's SQL (several statements)."""
        ...

    def record(self, migration: Migration) -> None:
        """Record ``migration`` as applied, in the transaction that applied it."""
        ...


class Refusals(Protocol):
    """The errors of one database (in its words and its error class) that the runner raises."""

    def newer(self, newest: Applied, known: Migration) -> XcshStoreError:
        """A newer program migrated the database: ``newest`` is the newest migration applied
        there that this program lacks, ``known`` the newest this program has."""
        ...

    def changed(self, applied: Applied) -> XcshStoreError:
        """The migration ``applied`` was edited after it was applied."""
        ...


def load_migrations(folder: Traversable, error: type[XcshStoreError]) -> list[Migration]:
    """The migrations of ``folder`` in number order; ``error`` when a ``.sql`` file is not
    named ``NNNN_name.sql``, when two share a number, or when there is none."""
    found: dict[int, Migration] = {}
    for item in folder.iterdir():
        if not item.name.endswith(".sql"):
            continue
        match = MIGRATION_NAME.fullmatch(item.name)
        if not match:
            raise error(f"Migration file name {item.name!r} is not NNNN_name.sql")
        number = int(match.group(1))
        if number in found:
            first, second = sorted((found[number].name + ".sql", item.name))
            raise error(f"Two migrations share the number {number:04d}: {first} and {second}")
        sql = item.read_text(encoding="utf-8")
        checksum = hashlib.sha256(sql.encode("utf-8")).hexdigest()
        found[number] = Migration(number, item.name.removesuffix(".sql"), sql, checksum)
    if not found:
        raise error(f"No schema migrations in {folder}: the installation is broken")
    return [found[number] for number in sorted(found)]


def number_of(name: str) -> int:
    """The number a recorded migration name starts with; -1 for a name not of this runner's
    form (so that it is taken for a migration of a newer program)."""
    match = MIGRATION_NAME.fullmatch(name if name.endswith(".sql") else f"{name}.sql")
    return int(match.group(1)) if match else -1


def pending(
    migrations: Sequence[Migration], applied: Sequence[Applied], refuse: Refusals
) -> list[Migration]:
    """The migrations not applied yet, in number order, after the checks: none applied that
    this program lacks, none changed since it was applied."""
    known = {migration.number: migration for migration in migrations}
    unknown = [entry for entry in applied if entry.number not in known]
    if unknown:
        raise refuse.newer(max(unknown, key=lambda entry: entry.number), migrations[-1])
    for entry in applied:
        if entry.checksum is not None and entry.checksum != known[entry.number].checksum:
            raise refuse.changed(entry)
    done = {entry.number for entry in applied}
    return [migration for migration in migrations if migration.number not in done]


def apply_pending(
    ledger: Ledger, migrations: Sequence[Migration], refuse: Refusals
) -> list[Migration]:
    """Apply what the ledger's database lacks of ``migrations``; the ones applied."""
    done = []
    for migration in pending(migrations, ledger.applied(), refuse):
        with ledger.transaction():
            # Another program may have applied it while this one waited for the lock.
            if migration not in pending(migrations, ledger.applied(), refuse):
                continue
            ledger.execute(migration.sql)
            ledger.record(migration)
        done.append(migration)
    return done


@contextlib.contextmanager
def immediate_transaction(connection: apsw.Connection) -> Iterator[None]:
    """``BEGIN IMMEDIATE`` … ``COMMIT``: the write lock taken (or waited for) before anything is
    read; rolled back on any error."""
    connection.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        # SQLite has already rolled back after some errors (I/O, full disk); a second ROLLBACK
        # would hide the real error behind "no transaction is active".
        if connection.in_transaction:
            connection.execute("ROLLBACK")
        raise
    connection.execute("COMMIT")


# {}: the applied_at column of a dated ledger.
_LEDGER_TABLE = (
    "CREATE TABLE IF NOT EXISTS schema_migrations ("
    " name TEXT PRIMARY KEY, checksum TEXT NOT NULL{})"
)


class SQLiteLedger:
    """The ``schema_migrations`` table of a SQLite database: name, checksum (and applied_at).

    ``adopt``: for a database that has no such table yet, called in the transaction that makes
    it, before anything is recorded: it brings what is there to the schema of the first N
    migrations (a database made by another program, or before its migrations were recorded)
    and returns N, and those N are recorded as applied without running.

    ``dated``: whether each record says when it was applied. Without it (history.db) a file
    made by the same steps is the same file byte for byte, whenever it was made.
    """

    def __init__(
        self,
        connection: apsw.Connection,
        migrations: Sequence[Migration],
        adopt: Callable[[apsw.Connection], int] | None = None,
        *,
        dated: bool = True,
    ) -> None:
        self.connection = connection
        self.migrations = migrations
        self.adopt = adopt
        self.dated = dated

    def _has_table(self) -> bool:
        found = self.connection.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
        )
        return bool(found.fetchall())

    def applied(self) -> list[Applied]:
        if not self._has_table():
            return []
        rows = self.connection.execute("SELECT name, checksum FROM schema_migrations")
        return [Applied(number_of(name), name, checksum) for name, checksum in rows]

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        with immediate_transaction(self.connection):
            if not self._has_table():
                adopted = self.adopt(self.connection) if self.adopt else 0
                dated = ", applied_at TEXT NOT NULL" if self.dated else ""
                self.connection.execute(_LEDGER_TABLE.format(dated))
                for migration in self.migrations[:adopted]:
                    self.record(migration)
            yield

    def execute(self, sql: str) -> None:
        self.connection.execute(sql)

    def record(self, migration: Migration) -> None:
        if self.dated:
            self.connection.execute(
                "INSERT INTO schema_migrations (name, checksum, applied_at) VALUES (?, ?, ?)",
                (migration.name, migration.checksum, iso_now()),
            )
        else:
            self.connection.execute(
                "INSERT INTO schema_migrations (name, checksum) VALUES (?, ?)",
                (migration.name, migration.checksum),
            )
