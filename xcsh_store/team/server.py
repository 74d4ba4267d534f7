"""The connection to the team index's PostgreSQL database: opening it, creating and migrating
its schema (the numbered SQL files in team/migrations/), and errors worth one line.

The schema is applied by the store itself, in one transaction under an advisory lock, so two
hosts pushing to a fresh database for the first time do not both create it. A server whose
schema is newer than this client knows is refused: an old client would write rows a newer
reader no longer understands.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from importlib import resources
from typing import Any

import psycopg

from xcsh_store.errors import XcshStoreError

# The advisory lock key every migration takes (any constant no other user of the database
# takes: the bytes of "xcsh" as an integer).
MIGRATION_LOCK = 0x78637368

_MIGRATION_NAME = re.compile(r"^(\d{4})_\w+\.sql$")


class TeamIndexError(XcshStoreError):
    """The team index cannot be reached, read or written; the message says why in a line."""


class TeamConnectionError(TeamIndexError):
    """The server cannot be reached, or the connection was lost: trying again may work."""


def migrations() -> list[tuple[int, str, str]]:
    """(version, file name, SQL) of each shipped team migration, in order."""
    folder = resources.files("xcsh_store.team") / "migrations"
    found = []
    for item in folder.iterdir():
        match = _MIGRATION_NAME.match(item.name)
        if match:
            found.append((int(match.group(1)), item.name, item.read_text("utf-8")))
    return sorted(found)


def schema_version() -> int:
    """The newest team schema this client knows."""
    return migrations()[-1][0]


def redacted(url: str) -> str:
    """The URL without its password, as messages show it."""
    return re.sub(r"(://[^:/@]*):[^@/]*@", r"\1:***@", url)


def connect(url: str, *, read_only: bool = False) -> psycopg.Connection[Any]:
    """A connection to the team database at ``url``, its schema created or migrated (not when
    ``read_only``: a reader of a database nobody pushed to yet is told so)."""
    if not url.startswith(("postgresql://", "postgres://")):
        raise TeamIndexError(f"Not a PostgreSQL URL: {redacted(url)} (postgresql://…)")
    try:
        connection = psycopg.connect(url, connect_timeout=10, application_name="xcsh-store")
    except psycopg.Error as error:
        raise TeamConnectionError(f"Cannot connect to {redacted(url)}: {one_line(error)}") from None
    try:
        if read_only:
            _check_version(connection, url, required=True)
        else:
            migrate(connection, url)
    except BaseException:
        connection.close()
        raise
    return connection


def one_line(error: BaseException) -> str:
    """PostgreSQL's message without its DETAIL/HINT lines and the libpq prefixes."""
    text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return re.sub(r"^connection to server at [^,]*, port \d+ failed: ", "", text)


@contextlib.contextmanager
def server_errors(url: str, doing: str) -> Iterator[None]:
    """PostgreSQL errors raised while ``doing`` something, as one TeamIndexError line."""
    try:
        yield
    except psycopg.errors.InsufficientPrivilege as error:
        raise TeamIndexError(
            f"No permission {doing} at {redacted(url)}: {one_line(error)}"
            " (the role needs INSERT, UPDATE and DELETE on the team tables)"
        ) from None
    except psycopg.OperationalError as error:
        raise TeamConnectionError(
            f"Lost the connection to {redacted(url)} {doing}: {one_line(error)}"
            " (nothing half-written is kept; run it again)"
        ) from None
    except psycopg.Error as error:
        raise TeamIndexError(f"PostgreSQL error {doing}: {one_line(error)}") from None


def _installed_version(connection: psycopg.Connection[Any]) -> int | None:
    exists = connection.execute("SELECT to_regclass('xcsh_schema') IS NOT NULL").fetchone()
    if not exists or not exists[0]:
        return None
    row = connection.execute("SELECT max(version) FROM xcsh_schema").fetchone()
    return row[0] if row else None


def _check_version(connection: psycopg.Connection[Any], url: str, required: bool) -> int:
    with server_errors(url, "reading the schema version"):
        installed = _installed_version(connection)
        connection.rollback()
    known = schema_version()
    if installed is not None and installed > known:
        raise TeamIndexError(
            f"The team index at {redacted(url)} has schema version {installed}, newer than"
            f" this xcsh-store knows ({known}): upgrade xcsh-store"
        )
    if required and installed is None:
        raise TeamIndexError(
            f"No team index at {redacted(url)} yet: `xcsh-store push {redacted(url)}` creates it"
        )
    return installed or 0


def migrate(connection: psycopg.Connection[Any], url: str) -> None:
    """Apply the migrations the database lacks, all in one transaction."""
    if _check_version(connection, url, required=False) == schema_version():
        return  # the common case: no lock, no write
    with server_errors(url, "creating the team schema"), connection.transaction():
        connection.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        connection.execute(
            "CREATE TABLE IF NOT EXISTS xcsh_schema ("
            " version integer PRIMARY KEY, name text NOT NULL,"
            " applied_at timestamptz NOT NULL DEFAULT now())"
        )
        installed = _installed_version(connection) or 0
        for version, name, sql in migrations():
            if version > installed:
                connection.execute(sql)
                connection.execute(
                    "INSERT INTO xcsh_schema (version, name) VALUES (%s, %s)", (version, name)
                )
    _check_version(connection, url, required=True)
