"""Ad-hoc read-only SQL on the index (the ``sql`` verb): nothing a query says can change it."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import apsw

from xcsh_store.errors import IndexDatabaseError
from xcsh_store.index import db as database


@dataclass
class QueryResult:
    """Column names and rows of the last statement of a query."""

    columns: list[str] = field(default_factory=list)
    rows: list[tuple[Any, ...]] = field(default_factory=list)


def run_read_only_query(
    db_path: str, sql: str, parameters: dict[str, Any] | tuple[Any, ...] = ()
) -> QueryResult:
    """Run ``sql`` on a connection opened with SQLite's read-only flag and ``query_only``.

    Several statements may be given; the result is the last one's. Any write, syntax error or
    missing table is an :class:`IndexDatabaseError` with SQLite's one-line reason.
    """
    if not os.path.exists(db_path):
        raise IndexDatabaseError(f"No index at {db_path}; run `xcsh-store sync` first")
    if not sql.strip():
        raise IndexDatabaseError("The query is empty")
    connection = database.connect(db_path, read_only=True)
    results: list[QueryResult] = []

    def start_statement(cursor: apsw.Cursor, statement: str, bindings: Any) -> bool:
        # The tracer runs once per statement with the statement prepared, so even a query that
        # returns no rows reports its column names.
        results.append(QueryResult(columns=[column[0] for column in cursor.description]))
        return True

    try:
        cursor = connection.cursor()
        cursor.exec_trace = start_statement
        for row in cursor.execute(sql, parameters):
            results[-1].rows.append(row)
    except apsw.ReadOnlyError as error:
        raise IndexDatabaseError(f"sql is read-only: {error}") from None
    except apsw.Error as error:
        raise IndexDatabaseError(f"SQL error: {error}") from None
    finally:
        connection.close()
    return results[-1] if results else QueryResult()
