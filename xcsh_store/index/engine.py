"""The SQLite library under the index (apsw's): its versions, whether it has FTS5, and the class
of the errors SQLite itself raises, for callers that report them."""

from __future__ import annotations

import apsw

# Every error SQLite raises through apsw; the store's own errors are XcshStoreErrors.
SQLiteError = apsw.Error


def sqlite_versions() -> dict[str, str]:
    """The SQLite inside apsw, apsw, and the SQLite of the stdlib ``sqlite3`` module (which
    sqlite-utils and Datasette use on index.db)."""
    # Only the version string: no database is opened with a second SQLite library
    # (compatibility: One SQLite library per process).
    import sqlite3

    return {
        "sqlite": apsw.sqlite_lib_version(),
        "apsw": apsw.apsw_version(),
        "stdlib_sqlite3": sqlite3.sqlite_version,
    }


def has_fts5() -> bool:
    """Whether the SQLite inside apsw was built with FTS5 (the search tables need it)."""
    return "ENABLE_FTS5" in apsw.compile_options
