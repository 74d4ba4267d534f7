"""The connection to the team index's PostgreSQL database: opening it, creating and migrating
its schema (the numbered SQL files in team/migrations/, run by xcsh_store/sql_migrations.py),
and the server's errors as one line that says what happened and what to do (never the
password: conninfo.py).

The schema is applied by the store itself, in one transaction under an advisory lock, so two
hosts pushing to a fresh database for the first time do not both create it. Its record is the
table ``xcsh_schema``: version, file name, when, and the migration's checksum (a column this
runner adds: the rows of the clients before it have none, and are not checked). A server whose
schema is newer than this client knows is refused: an old client would write rows a newer
reader no longer understands; so is one whose migration changed after it was applied.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from importlib import resources
from typing import Any

import psycopg

from xcsh_store.sql_migrations import Applied, Migration, apply_pending, load_migrations, pending
from xcsh_store.team.conninfo import Target
from xcsh_store.team.errors import (
    TeamConnectionError,
    TeamIndexError,
    TeamTimeoutError,
    TeamUnavailableError,
)

# The advisory lock key every migration takes (any constant no other user of the database
# takes: the bytes of "xcsh" as an integer).
MIGRATION_LOCK = 0x78637368

# What psycopg and libpq put before the server's reason for refusing a connection.
_LIBPQ_PREFIX = re.compile(
    r"^(connection failed: )?connection to server at [^,]*, port \d+ failed: "
)


def migrations() -> list[Migration]:
    """The shipped team migrations, in order."""
    return load_migrations(resources.files("xcsh_store.team") / "migrations", TeamIndexError)


def schema_version() -> int:
    """The newest team schema this client knows."""
    return migrations()[-1].number


def connect(url: str, *, read_only: bool = False) -> psycopg.Connection[Any]:
    """A connection to the team database at ``url`` (a libpq connection string), its schema
    created or migrated (not when ``read_only``: a reader of a database nobody pushed to yet
    is told so)."""
    target = Target.parse(url)
    try:
        connection = psycopg.connect(url, connect_timeout=10, application_name="xcsh-store")
    except psycopg.Error as error:
        reason = target.scrub(one_line(error))
    else:
        try:
            if read_only:
                _pending(connection, url, required=True)
            else:
                migrate(connection, url)
        except BaseException:
            connection.close()
            raise
        return connection
    # Raised here, not in the handler: libpq's error is not chained to it.
    raise TeamConnectionError(f"Cannot connect to {target.shown}: {reason}")


def one_line(error: BaseException) -> str:
    """PostgreSQL's message without its DETAIL/HINT lines and the libpq prefixes."""
    text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return re.sub(
        r"^(connection failed: )?connection to server at [^,]*, port \d+ failed: ", "", text
    )


# What a role lacking a table privilege needs, by what it was doing (docs/security.md, Roles).
_PRIVILEGES = {
    "read": "a reader role needs USAGE on the schema and SELECT on the team tables",
    "write": "a pusher role needs USAGE on the schema and SELECT, INSERT, UPDATE and DELETE"
    " on the team tables",
    "schema": "the team schema is created and migrated by its owner (the admin):"
    " `xcsh-store team migrate URL` as that role",
}
# What is left behind when a statement fails, and what to do then, by what it was doing.
_KEPT = {
    "read": "nothing was changed",
    "write": "the files pushed before it are kept and nothing is half-written",
    "schema": "the schema is as it was",
}
_AGAIN = {"read": "run it again", "write": "push again to send the rest", "schema": "run it again"}
# What to do when a time limit stopped a statement.
_TIMED_OUT = {
    "read": "raise `sql --timeout` (0 for no limit), or ask the admin to raise the role's"
    " statement_timeout",
    "write": f"{_AGAIN['write']}, or ask the admin to raise the role's statement_timeout",
    "schema": "run it again when the server is less busy",
}
# SQLSTATEs of a connection that is gone: class 08, and the server shutting down or crashing.
_LOST = ("08", "57P01", "57P02", "57P03")


@contextlib.contextmanager
def server_errors(url: str, doing: str, needs: str = "read") -> Iterator[None]:
    """PostgreSQL errors raised while ``doing`` something (``needs``: read, write or schema) as
    one TeamIndexError line."""
    try:
        yield
    except psycopg.Error as error:
        raise explained(error, url, doing, needs) from None


def explained(error: psycopg.Error, url: str, doing: str, needs: str) -> TeamIndexError:
    """The one line that says what ``error`` means and what to do."""
    target = Target.parse(url)
    reason, where = target.scrub(one_line(error)), target.shown
    kept, again = _KEPT[needs], _AGAIN[needs]
    state = error.sqlstate or ""
    if isinstance(error, psycopg.errors.QueryCanceled | psycopg.errors.LockNotAvailable):
        return TeamTimeoutError(
            f"Timed out {doing} at {where} ({reason}); {kept}: {_TIMED_OUT[needs]}"
        )
    if isinstance(error, psycopg.errors.DiskFull):
        return TeamUnavailableError(
            f"The team server's disk is full ({doing} at {where}: {reason}); {kept}: {again}"
            " once its admin frees space"
        )
    if isinstance(error, psycopg.errors.InsufficientPrivilege):
        if "row-level security" in reason:
            hint = "this role may write only the hosts the admin gave it (docs/security.md,"
            hint += " Per-host roles)"
        elif "must be owner" in reason:
            hint = _PRIVILEGES["schema"]
        elif re.search(r"permission denied for (table|view|schema|sequence)", reason):
            hint = _PRIVILEGES[needs]
        else:
            return TeamIndexError(f"PostgreSQL refused {doing} at {where}: {reason}")
        return TeamIndexError(f"No permission {doing} at {where}: {reason} ({hint})")
    if state.startswith(_LOST) or (not state and isinstance(error, psycopg.OperationalError)):
        return TeamConnectionError(
            f"Lost the connection to {where} {doing}: {reason} ({kept}; {again})"
        )
    return TeamIndexError(f"PostgreSQL error {doing} at {where}: {reason}")


class _Ledger:
    """``xcsh_schema``, the team index's record of its migrations (xcsh_store/sql_migrations.py)."""

    def __init__(self, connection: psycopg.Connection[Any], url: str, needs: str) -> None:
        self.connection = connection
        self.url = url
        self.needs = needs

    def applied(self) -> list[Applied]:
        """The migrations recorded; [] when there is no schema yet. A role that may not use
        the schema sees no table in it: that is said, not taken for a database nobody pushed
        to."""
        ((usable, exists),) = self.connection.execute(
            "SELECT current_schema() IS NOT NULL, to_regclass('xcsh_schema') IS NOT NULL"
        )
        if not usable:
            raise TeamIndexError(
                "No permission to use the schema of the team index at"
                f" {Target.parse(self.url).shown} ({_PRIVILEGES[self.needs]})"
            )
        if not exists:
            return []
        ((checked,),) = self.connection.execute(
            "SELECT EXISTS (SELECT FROM pg_attribute WHERE attrelid = 'xcsh_schema'::regclass"
            " AND attname = 'checksum' AND NOT attisdropped)"
        )
        checksum = "checksum" if checked else "NULL"
        rows = self.connection.execute(f"SELECT version, name, {checksum} FROM xcsh_schema")
        return [Applied(version, name, value) for version, name, value in rows]

    def create(self) -> None:
        """The table, with the checksum column the clients before this runner did not add."""
        self.connection.execute(
            "CREATE TABLE IF NOT EXISTS xcsh_schema ("
            " version integer PRIMARY KEY, name text NOT NULL,"
            " applied_at timestamptz NOT NULL DEFAULT now(), checksum text)"
        )
        self.connection.execute("ALTER TABLE xcsh_schema ADD COLUMN IF NOT EXISTS checksum text")

    def transaction(self) -> contextlib.AbstractContextManager[Any]:
        # Inside migrate()'s transaction: a savepoint.
        return self.connection.transaction()

    def execute(self, sql: str) -> None:
        self.connection.execute(sql)

    def record(self, migration: Migration) -> None:
        self.connection.execute(
            "INSERT INTO xcsh_schema (version, name, checksum) VALUES (%s, %s, %s)",
            (migration.number, f"{migration.name}.sql", migration.checksum),
        )


class _Refusals:
    """What the team index says when it cannot be migrated (xcsh_store/sql_migrations.py)."""

    def __init__(self, url: str) -> None:
        self.where = Target.parse(url).shown

    def newer(self, newest: Applied, known: Migration) -> TeamIndexError:
        return TeamIndexError(
            f"The team index at {self.where} has schema version {newest.number}, newer"
            f" than this xcsh-store knows ({known.number}): upgrade xcsh-store"
        )

    def changed(self, applied: Applied) -> TeamIndexError:
        return TeamIndexError(
            f"The team index at {self.where} was migrated by {applied.name} as another"
            " xcsh-store had it (its checksum differs from this one's): install a released"
            " xcsh-store"
        )


def _pending(
    connection: psycopg.Connection[Any], url: str, required: bool, needs: str = "read"
) -> list[Migration]:
    """The migrations the team index lacks, once the runner's checks pass; ``required``: a
    database with no schema yet is refused."""
    with server_errors(url, "reading the schema version"):
        applied = _Ledger(connection, url, needs).applied()
        connection.rollback()
    missing = pending(migrations(), applied, _Refusals(url))
    if required and not applied:
        raise TeamIndexError(
            f"No team index at {Target.parse(url).shown} yet: the first push creates it"
        )
    return missing


def migrate(connection: psycopg.Connection[Any], url: str) -> None:
    """Apply the migrations the database lacks, all in one transaction."""
    if not _pending(connection, url, required=False, needs="write"):
        return  # the common case: no lock, no write
    with server_errors(url, "creating the team schema", needs="schema"), connection.transaction():
        connection.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        ledger = _Ledger(connection, url, "schema")
        ledger.create()
        apply_pending(ledger, migrations(), _Refusals(url))
    _pending(connection, url, required=True)
