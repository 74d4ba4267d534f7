"""Ad-hoc read-only SQL on the index (the ``sql`` verb): nothing a query says can change it, and
no query can run unbounded: one statement, rows streamed, a time limit, interruptible at once."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import apsw
import apsw.ext

from xcsh_store.errors import IndexDatabaseError
from xcsh_store.index import db as database
from xcsh_store.index.sql_functions import register_search_functions

# SQLite calls the progress handler every this many virtual-machine steps: often enough that a
# time limit or Ctrl-C stops a statement within milliseconds, rarely enough to cost nothing.
PROGRESS_STEPS = 10_000


class QueryTimeoutError(IndexDatabaseError):
    """The statement ran past its time limit and was stopped."""


class QueryInterruptedError(IndexDatabaseError):
    """The statement was stopped by :meth:`QueryStream.interrupt` (Ctrl-C)."""


@dataclass
class QueryResult:
    """Column names and rows of a query's statement."""

    columns: list[str] = field(default_factory=list)
    rows: list[tuple[Any, ...]] = field(default_factory=list)


class QueryStream:
    """One running statement: its ``columns`` and its rows, read as they are iterated.

    SQLite's time spent on the statement is limited to ``timeout`` seconds (None: no limit);
    the time the caller spends between rows does not count.
    """

    def __init__(
        self,
        connection: apsw.Connection,
        sql: str,
        parameters: Mapping[str, Any],
        timeout: float | None,
    ) -> None:
        self.columns: list[str] = []
        self._connection = connection
        self._sql = sql
        self._parameters = parameters
        self._timeout = timeout
        self._spent = 0.0
        self._step_started: float | None = None
        self._interrupted = False
        self._timed_out = False
        connection.set_progress_handler(self._progress, PROGRESS_STEPS)

    def interrupt(self) -> None:
        """Stop the statement as soon as SQLite next checks (safe from a signal handler)."""
        self._interrupted = True
        self._connection.interrupt()

    def _progress(self) -> bool:
        if self._interrupted:
            return True
        if self._timeout is not None and self._step_started is not None:
            self._timed_out = self._spent + time.monotonic() - self._step_started > self._timeout
        return self._timed_out

    def _start(self) -> apsw.Cursor:
        def start_statement(cursor: apsw.Cursor, statement: str, bindings: Any) -> bool:
            # Runs with the statement prepared, before its first row: even a query that
            # returns no rows reports its column names.
            self.columns = [column[0] for column in cursor.description]
            return True

        cursor = self._connection.cursor()
        cursor.exec_trace = start_statement
        return self._timed(lambda: cursor.execute(self._sql, self._parameters))

    def _timed(self, work: Any) -> Any:
        self._step_started = time.monotonic()
        try:
            return work()
        except apsw.InterruptError:
            if self._timed_out:
                raise QueryTimeoutError(
                    f"The query ran past its {self._timeout:g}s time limit and was stopped"
                ) from None
            raise QueryInterruptedError("The query was interrupted") from None
        finally:
            self._spent += time.monotonic() - self._step_started
            self._step_started = None

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        """The rows; the statement starts with the first (``columns`` is set from then on)."""
        with _sqlite_errors():
            cursor = self._start()
        while True:
            if self._interrupted:
                raise QueryInterruptedError("The query was interrupted")
            with _sqlite_errors():
                row = self._timed(lambda: next(cursor, None))
            if row is None:
                return
            yield row


@contextmanager
def open_query(
    db_path: str,
    sql: str,
    parameters: Mapping[str, Any] | None = None,
    *,
    timeout: float | None = None,
) -> Iterator[QueryStream]:
    """Prepare ``sql`` (exactly one statement) on a connection opened with SQLite's read-only
    flag and ``query_only``; it runs, and its rows come, as the returned stream is iterated
    (once).

    Several statements, a parameter the query names but ``parameters`` lacks, a write, a syntax
    error or a missing table are an :class:`IndexDatabaseError` with a one-line reason, raised
    before any row is read.
    """
    if not os.path.exists(db_path):
        raise IndexDatabaseError(f"No index at {db_path}; run `xcsh-store sync` first")
    if not sql.strip():
        raise IndexDatabaseError("The query is empty")
    given = dict(parameters or {})
    connection = database.connect(db_path, read_only=True)
    register_search_functions(connection)
    try:
        _check_statement(connection, sql, given)
        yield QueryStream(connection, sql, given, timeout)
    finally:
        connection.close()


@contextmanager
def _sqlite_errors() -> Iterator[None]:
    try:
        yield
    except apsw.ReadOnlyError as error:
        raise IndexDatabaseError(f"sql is read-only: {error}") from None
    except apsw.Error as error:
        raise IndexDatabaseError(f"SQL error: {error}") from None


def _check_statement(connection: apsw.Connection, sql: str, parameters: Mapping[str, Any]) -> None:
    """Refuse several statements (only one result could be shown) and unbound parameters."""
    statements = 0
    names: list[str | None] = []
    remaining: str | None = sql
    with _sqlite_errors():
        while remaining:
            details = apsw.ext.query_info(connection, remaining)
            if details.has_vdbe:  # not just a comment or a lone semicolon
                statements += 1
                names += details.bindings_names
            remaining = details.query_remaining
    if statements > 1:
        raise IndexDatabaseError(f"sql runs one statement at a time; the query has {statements}")
    if any(name is None for name in names):
        raise IndexDatabaseError("Name every parameter (:name) and give it with -p NAME VALUE")
    missing = sorted({name for name in names if name is not None and name not in parameters})
    if missing:
        raise IndexDatabaseError(
            "No value for " + ", ".join(f":{name}" for name in missing) + " (give -p NAME VALUE)"
        )


def run_read_only_query(
    db_path: str,
    sql: str,
    parameters: Mapping[str, Any] | None = None,
    timeout: float | None = None,
) -> QueryResult:
    """:func:`open_query` with every row read into memory."""
    with open_query(db_path, sql, parameters, timeout=timeout) as stream:
        rows = list(stream)
        return QueryResult(columns=stream.columns, rows=rows)
