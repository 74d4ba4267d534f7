"""The index database file: opening it with apsw, its numbered SQL migrations (the top-level
migrations/ folder, run by xcsh_store/sql_migrations.py), damage handling."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import apsw

from xcsh_store.errors import IndexDatabaseError
from xcsh_store.files import free_bytes_if_full
from xcsh_store.index.usage_ranks import settle_ranks
from xcsh_store.paths import FILE_MODE, ensure_private_dir

# The runner is imported when there is a migration to apply: an index of the current schema
# is opened without it (schema_is_current).
if TYPE_CHECKING:
    from xcsh_store.sql_migrations import Applied, Migration

log = logging.getLogger("xcsh_store")

BUSY_TIMEOUT_MS = 30_000
_FTS5_TABLE = re.compile(r"USING\s+fts5\s*\(", re.IGNORECASE)  # not fts5vocab


def migrations_dir() -> Path:
    """The copy shipped inside the installed package, else the top-level ``migrations/`` of a
    checkout.

    The shipped folder comes first: next to an installed package, ``parents[2]`` is
    site-packages, where another distribution may have put a ``migrations`` folder of its own.
    """
    here = Path(__file__).resolve()
    shipped = here.parents[1] / "migrations"
    return shipped if shipped.is_dir() else here.parents[2] / "migrations"


def load_migrations(directory: Path | None = None) -> list[Migration]:
    from xcsh_store.sql_migrations import load_migrations as load_folder

    return load_folder(directory or migrations_dir(), IndexDatabaseError)


# Free pages below this (1 MiB of 4 KiB pages) are not worth a VACUUM.
COMPACT_MIN_FREE_PAGES = 256


def missing_migrations(connection: apsw.Connection) -> list[str]:
    """The migrations this installation has and the database lacks (an index written by an
    older xcsh-store and not synced since)."""
    names, applied = _migration_names(connection)
    return sorted(names - applied)


def schema_is_current(connection: apsw.Connection) -> bool:
    """Whether the database has recorded every migration of this installation and no other:
    then there is nothing to apply, and opening it reads no migration's SQL (the checks of
    apply_migrations, a migration changed since it was applied or one of a newer xcsh-store,
    run when one is to be applied: the next upgrade)."""
    try:
        names, applied = _migration_names(connection)
    except apsw.SQLError:  # no ledger yet: a new database
        return False
    return names == applied


def _migration_names(connection: apsw.Connection) -> tuple[set[str], set[str]]:
    """(the migrations of this installation, those the database recorded), by name."""
    names = {name.removesuffix(".sql") for name in os.listdir(migrations_dir())
             if name.endswith(".sql")}  # fmt: skip
    applied = {row[0] for row in connection.execute("SELECT name FROM schema_migrations")}
    return names, applied


class _Refusals:
    """What the index says when it cannot be migrated (xcsh_store/sql_migrations.py)."""

    def newer(self, newest: Applied, known: Migration) -> IndexDatabaseError:
        return IndexDatabaseError(
            f"The index was written by a newer xcsh-store (schema {newest.name}); "
            "upgrade xcsh-store, or delete index.db to rebuild it from the session files"
        )

    def changed(self, applied: Applied) -> IndexDatabaseError:
        return IndexDatabaseError(
            f"Migration {applied.name} changed after it was applied to this index; "
            "delete index.db to rebuild it"
        )


def apply_migrations(connection: apsw.Connection, migrations: list[Migration]) -> list[str]:
    """Apply the migrations this database lacks, each in its own transaction; names applied."""
    from xcsh_store.sql_migrations import SQLiteLedger, apply_pending

    ledger = SQLiteLedger(connection, migrations)
    return [migration.name for migration in apply_pending(ledger, migrations, _Refusals())]


def compact_if_sparse(connection: apsw.Connection) -> bool:
    """VACUUM when over a quarter of index.db is free pages (after a resync rewrote every row);
    returns whether it did. A file that size is compacted in seconds, and a smaller file is
    worth more than those seconds to every later query and backup."""
    ((free,),) = connection.execute("PRAGMA freelist_count")
    ((pages,),) = connection.execute("PRAGMA page_count")
    if free < COMPACT_MIN_FREE_PAGES or free * 4 < pages:
        return False
    # VACUUM copies the database into a temporary one: on disk, not in memory, whatever its size.
    with temporary_on_disk(connection):
        connection.execute("VACUUM")
    return True


@contextlib.contextmanager
def temporary_on_disk(connection: apsw.Connection) -> Iterator[None]:
    """SQLite's temporary files (a VACUUM's copy, a CREATE INDEX's sort) on disk meanwhile, not
    in memory as every connection keeps them: their size is the index's, which is the user's
    to grow (a first sync of 3 GB of sessions held 266 MB sorting one index in memory, 79 MB on
    disk). Outside any transaction: changing it drops the connection's temporary tables."""
    connection.execute("PRAGMA temp_store = FILE")
    try:
        yield
    finally:
        connection.execute("PRAGMA temp_store = MEMORY")


@contextlib.contextmanager
def transaction(connection: apsw.Connection, mode: str = "IMMEDIATE") -> Iterator[None]:
    """``BEGIN IMMEDIATE`` … ``COMMIT``, rolled back on any error; the usage ranks its writes
    noted are ranked again before the commit."""
    connection.execute(f"BEGIN {mode}")
    try:
        yield
        settle_ranks(connection)
    except BaseException:
        connection.execute("ROLLBACK")
        raise
    connection.execute("COMMIT")


def get_meta(connection: apsw.Connection, key: str) -> str | None:
    """A value of the ``meta`` table (None when the key is absent)."""
    rows = list(connection.execute("SELECT value FROM meta WHERE key = ?", (key,)))
    return rows[0][0] if rows else None


def set_meta(connection: apsw.Connection, key: str, value: str | None) -> None:
    connection.execute(
        "INSERT INTO meta (key, value) VALUES (?, ?)"
        " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (key, value),
    )


class DamagedIndexError(IndexDatabaseError):
    """The index file is not a usable SQLite database (garbage, truncated, malformed)."""


# Garbage inside a row that SQLite's page checks let through shows up as text that is not UTF-8
# (every text the store writes is), as a value too big to read, or as a constraint the store's
# own writes never violate (a row changed under its UNIQUE index). DamagedIndexError: damage a
# nested call has already explained, which the sync or verify that called it must rebuild from.
DAMAGE_ERRORS = (
    apsw.NotADBError,
    apsw.CorruptError,
    apsw.TooBigError,
    apsw.ConstraintError,
    apsw.MismatchError,
    UnicodeDecodeError,
    DamagedIndexError,
)


@contextlib.contextmanager
def errors_explained(path: str) -> Iterator[None]:
    """Turn the SQLite failures a user can act on into one-line :class:`IndexDatabaseError`."""
    try:
        yield
    except IndexDatabaseError:
        raise  # explained already (by a nested call, or as what it is)
    except DAMAGE_ERRORS as error:
        raise DamagedIndexError(
            f"{path} is damaged ({error}); `xcsh-store verify --repair` rebuilds it from the"
            " session files"
        ) from error
    except (apsw.FullError, apsw.IOError) as error:
        folder = os.path.dirname(path) or "."
        free = free_bytes_if_full(folder)
        if free is None and isinstance(error, apsw.IOError):
            raise  # a disk I/O error with room left: the disk itself, not its space
        left = f"{free:,} bytes free" if free is not None else "SQLite found no space"
        raise IndexDatabaseError(
            f"The disk holding {folder} is full ({left}; SQLite: {error}): {path} keeps what"
            " was written before, and the session files are not affected. Free some space"
            " and run it again (a sync goes on where this one stopped)"
        ) from error


@contextlib.contextmanager
def type_confusion_as_damage(connection: apsw.Connection) -> Iterator[None]:
    """A TypeError or AttributeError becomes damage (CorruptError) when the file is damaged.

    Garbage SQLite's checks let through changes the type of a value (NULL, a blob or a number
    where the store wrote text) as easily as its bytes, and code reading it then fails like
    this. Whether that is what happened is for :func:`check_integrity` to say; when the file is
    sound, the error stands (it is a bug).
    """
    try:
        yield
    except (TypeError, AttributeError) as error:
        damage = check_integrity(connection)
        if damage is None:
            raise
        raise apsw.CorruptError(f"{damage} ({type(error).__name__}: {error})") from error


def check_integrity(connection: apsw.Connection) -> str | None:
    """What SQLite finds wrong with the file, or None: every b-tree, and every index against
    its table (``integrity_check``; ``quick_check`` skips that, and a changed byte in an index
    misleads every lookup through it), then each FTS5 index against its text (unless the
    connection is read-only)."""
    try:
        problems = [
            row[0] for row in connection.execute("PRAGMA integrity_check") if row[0] != "ok"
        ]
        if problems:
            return "; ".join(problems[:3])
        tables = connection.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'")
        for table in [name for name, sql in list(tables) if _FTS5_TABLE.search(sql or "")]:
            with contextlib.suppress(apsw.ReadOnlyError):
                connection.execute(
                    f'INSERT INTO "{table}" ("{table}", rank) VALUES (\'integrity-check\', 1)'
                )
    except DAMAGE_ERRORS as error:
        return str(error)
    return None


class ReaderConnection(apsw.Connection):
    """A connection opened with SQLite's read-only flag that leaves no ``-wal``/``-shm`` behind.

    SQLite needs both side files to read a WAL database, and a read-only connection creates
    them when they are missing but can never delete them (that takes a write lock on the file).
    So when neither existed before, :meth:`close` lets a connection that may write, and runs no
    statement of its own, remove them the way SQLite does: the last connection to close a WAL
    database checkpoints an empty log and deletes both files. While another process has the
    database open, that process removes them instead when it closes.
    """

    def __init__(self, path: str) -> None:
        self.side_files_absent = not any(os.path.exists(path + suffix) for suffix in _SIDE_FILES)
        self.database_path = path
        super().__init__(path, flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)

    def close(self, force: bool = False) -> None:
        super().close(force)
        if self.side_files_absent:
            self.side_files_absent = False
            remove_side_files(self.database_path)


_SIDE_FILES = ("-wal", "-shm")


def remove_side_files(path: str) -> None:
    """Let SQLite delete the ``-wal``/``-shm`` of ``path`` if no connection is using them."""
    if not any(os.path.exists(path + suffix) for suffix in _SIDE_FILES):
        return
    with contextlib.suppress(apsw.Error, OSError):
        # READWRITE without CREATE: a database that went away is not made again; on a file
        # this user may not write, SQLite opens read-only and the files stay (nothing lost).
        tidy = apsw.Connection(path, flags=apsw.SQLITE_OPEN_READWRITE)
        try:
            tidy.set_busy_timeout(0)
            tidy.execute("SELECT count(*) FROM sqlite_master").fetchall()
        finally:
            tidy.close()


def connect(path: str, read_only: bool = False) -> apsw.Connection:
    """An apsw connection with the store's settings (WAL, NORMAL sync, long busy timeout).

    ``read_only``: SQLite's read-only flag and ``query_only``, and no file left behind
    (:class:`ReaderConnection`).
    """
    if read_only:
        connection: apsw.Connection = ReaderConnection(path)
    else:
        ensure_private_dir(os.path.dirname(path) or ".")
        if not os.path.exists(path):
            # Create it private before SQLite does (SQLite uses 0644 minus the umask).
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT, FILE_MODE))
        connection = apsw.Connection(path)
    connection.set_busy_timeout(BUSY_TIMEOUT_MS)
    try:
        _check_readable(connection, path)
        if not read_only:
            connection.execute("PRAGMA journal_mode = WAL")
            connection.execute("PRAGMA synchronous = NORMAL")
        connection.execute("PRAGMA cache_size = -32768")  # 32 MiB
        connection.execute("PRAGMA temp_store = MEMORY")
        if read_only:
            connection.execute("PRAGMA query_only = ON")
            # VACUUM INTO and ATTACH create the file they name before query_only refuses the
            # write; with no attached databases allowed, neither can touch the file system.
            connection.limit(apsw.SQLITE_LIMIT_ATTACHED, 0)
    except DAMAGE_ERRORS as error:
        connection.close()
        raise DamagedIndexError(f"{path} is damaged: {error}") from error
    return connection


def _check_readable(connection: apsw.Connection, path: str) -> None:
    try:
        connection.execute("SELECT count(*) FROM sqlite_master").fetchall()
    except apsw.SQLError as error:
        # Only the file can make this statement fail: "unsupported file format" is a header
        # whose schema format number is garbage.
        raise apsw.CorruptError(f"{error} (the file header is damaged)") from error
    wal = path + "-wal"
    if os.path.exists(wal) and os.path.getsize(wal) > 0:
        return  # pages may legitimately live in the WAL only
    ((page_size,),) = connection.execute("PRAGMA page_size")
    ((page_count,),) = connection.execute("PRAGMA page_count")
    size = os.path.getsize(path)
    if size < page_size * page_count:
        raise apsw.CorruptError(
            f"file is {size} bytes but its header says {page_size * page_count} (truncated)"
        )


def move_aside(path: str) -> str:
    """Rename a damaged index (and its WAL files) out of the way; returns the new name."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    target = f"{path}.damaged-{stamp}"
    os.replace(path, target)
    for suffix in _SIDE_FILES:
        with contextlib.suppress(FileNotFoundError):
            os.replace(path + suffix, target + suffix)
    return target
