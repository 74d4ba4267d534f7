"""Each row type's columns, once: the sessions, the entries, the usage rows and the prompt rows
of index.db and of the team index, each column with its SQLite and PostgreSQL type (its Arrow
type follows from the PostgreSQL one) and what reads and writes it.

Every list of these columns elsewhere is derived from here: the writes (write/indexer.py), the
history mirror (read/prompts.py), the listing and the details of a session (read/sessions.py),
verify's comparison (upkeep/verify.py), the export to other stores (read/export.py: what the
team index's push copies), the Parquet export's schema (team/parquet.py), the team index's
session select and record (team/reader.py), and the records' fields (read/sessions.py: typed
once, on SessionRecord, read by each record from its own row).
tests/test_columns.py holds the tables of both databases, after every migration, and
docs/schema.md to these lists, so a column added in one place and not the others fails there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# How a sync writes a session's column: ``file`` from the file it found (its id, path and
# project folder), ``header`` once, from the session's header (or what another agent's reader
# learnt of it), ``figures`` at every read (the session's counts and sums, write/build.py's
# Totals, by name); None: derived later (the titles the file gives, summary titles) or kept
# elsewhere.
Written = Literal["file", "header", "figures"]

# The Arrow type of each PostgreSQL type a pushed column has (the Parquet export's schema).
_ARROW = {
    "text": "string",
    "smallint": "int64",
    "integer": "int64",
    "bigint": "int64",
    "double precision": "float64",
}


@dataclass(frozen=True, slots=True)
class Column:
    """One column of a row type."""

    name: str
    # Its declared type in index.db's table; None: not a column of that table (``local`` says
    # where index.db keeps it).
    sqlite: str | None
    # Its type in the team index's table; None: not pushed (nor exported to Parquet).
    postgres: str | None
    # Where index.db keeps a session column, as SQL over ``sessions AS s JOIN files AS f``;
    # None: the sessions table's own column of that name.
    local: str | None = None
    # A session listing reads it (the covering index sessions_listing holds it: migration 0008).
    listed: bool = False
    # The session record's field of it (IndexedSession, TeamSession); None: the record does
    # not read it.
    field: str | None = None
    written: Written | None = None
    # Whether verify compares it with a fresh parse of the file (a key is not the file's).
    compared: bool = True

    @property
    def arrow(self) -> str | None:
        """Its Arrow type (pyarrow's name of it) in the Parquet export; None: not exported."""
        return None if self.postgres is None else _ARROW[self.postgres]


def _session(
    name: str,
    sqlite: str | None,
    postgres: str | None,
    *,
    listed: bool = False,
    written: Written | None = None,
    local: str | None = None,
    compared: bool = True,
) -> Column:
    """A session column the record reads as a field of its own name."""
    return Column(name, sqlite, postgres, local, listed, name, written, compared)


# The six usage figures of an entry, and of a session (its sums), in this order (write/build.py).
USAGE_FIGURES = (
    "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
    "premium_requests", "cost",
)  # fmt: skip

# In index.db's order (new columns last, as ALTER TABLE adds them; the team index's order is
# that of the pushed ones).
SESSION_ROW = (
    _session("file_id", "INTEGER", None, listed=True, written="file", compared=False),
    _session("session_id", "TEXT", "text", listed=True, written="header"),
    _session("path", "TEXT", None, written="file"),
    _session("cwd", "TEXT", "text", listed=True, written="header"),
    _session("project_dir", "TEXT", "text", written="file"),
    _session("title", "TEXT", "text", listed=True, written="header"),
    _session("title_source", "TEXT", "text", written="header"),
    Column("parent_session", "TEXT", "text", field="parent_session_path", written="header"),
    _session("version", "INTEGER", "integer", written="header"),
    _session("created_at", "TEXT", "text", written="header"),
    _session("modified_at", "TEXT", "text", listed=True, written="figures"),
    _session("entry_count", "INTEGER", "integer", written="figures"),
    _session("message_count", "INTEGER", "integer", listed=True, written="figures"),
    Column("first_message", "TEXT", "text", listed=True, field="first_prompt", written="figures"),
    _session("last_entry_id", "TEXT", "text", written="figures"),
    _session("input_tokens", "INTEGER", "bigint", listed=True, written="figures"),
    _session("output_tokens", "INTEGER", "bigint", listed=True, written="figures"),
    _session("cache_read_tokens", "INTEGER", "bigint", written="figures"),
    _session("cache_write_tokens", "INTEGER", "bigint", written="figures"),
    _session("premium_requests", "REAL", "double precision", written="figures"),
    _session("cost", "REAL", "double precision", listed=True, written="figures"),
    Column("compaction_title", "TEXT", "text", written="figures"),
    _session("agent", "TEXT", "text", written="header"),
    _session("parent_session_id", "TEXT", "text", written="header"),
    Column("activity_at", "TEXT", None, written="figures"),
    Column("file_title", "TEXT", None),
    Column("file_title_source", "TEXT", None),
    Column("summary_from", "INTEGER", None, compared=False),
    # When its file was found gone (the file's row: migration 0014).
    _session("source_gone_at", None, "text", local="f.gone_at"),
)


def _alike(sqlite: str | None, postgres: str | None, *names: str) -> tuple[Column, ...]:
    """Columns of one type each, none of them a session's."""
    return tuple(Column(name, sqlite, postgres) for name in names)


ENTRY_ROW = (
    Column("pk", "INTEGER", None, compared=False),
    Column("session", "INTEGER", None, compared=False),
    Column("seq", "INTEGER", "integer"),
    *_alike("TEXT", "text", "id", "parent_id", "type", "timestamp", "role", "provider", "model"),
    *_alike("TEXT", "text", "tool_name", "custom_type"),
    # Where its line is: byte offset and length, and which object of the line it is.
    *_alike("INTEGER", None, "offset", "length", "part"),
    *_alike("INTEGER", "bigint", *USAGE_FIGURES[:4]),
    *_alike("REAL", "double precision", *USAGE_FIGURES[4:]),
    Column("prompt_hash", "TEXT", "text"),
    # The pk of the first entry of its chain: pks differ between indexes, so verify compares
    # that entry's seq (upkeep/verify.py).
    Column("chain", "INTEGER", None),
    Column("usage_key", "TEXT", None),
    Column("cost_estimated", "INTEGER", "smallint"),
    Column("list_cost", "REAL", "double precision"),
)

# The mirrored prompt history (the ``history`` table of both).
PROMPT_ROW = (
    *_alike("INTEGER", "bigint", "id"),
    *_alike("TEXT", "text", "prompt"),
    # Epoch seconds.
    *_alike("INTEGER", "bigint", "created_at"),
    *_alike("TEXT", "text", "cwd", "prompt_hash"),
)


def named(row: tuple[Column, ...], *names: str) -> tuple[Column, ...]:
    """The columns of ``row`` called ``names``, in that order."""
    by_name = {column.name: column for column in row}
    return tuple(by_name[name] for name in names)


# The usage_entries view's columns (each entry with usage, a fork's copies counted once): of
# its session, then of the entry.
USAGE_ROW = (
    *named(SESSION_ROW, "session_id", "project_dir", "cwd"),
    *named(ENTRY_ROW, "id", "timestamp", "provider", "model", "input_tokens", "output_tokens"),
    *named(ENTRY_ROW, "cache_read_tokens", "cache_write_tokens", "premium_requests", "cost"),
    *named(SESSION_ROW, "agent"),
    *named(ENTRY_ROW, "cost_estimated", "list_cost"),
)


def names(row: tuple[Column, ...]) -> tuple[str, ...]:
    """The columns of ``row``, in order."""
    return tuple(column.name for column in row)


def pushed(row: tuple[Column, ...]) -> tuple[str, ...]:
    """The columns another store copies (the team index, the Parquet export), in order."""
    return tuple(column.name for column in row if column.postgres is not None)


def written(group: Written) -> tuple[str, ...]:
    """The session columns a sync writes from ``group`` (see Written), in order."""
    return tuple(column.name for column in SESSION_ROW if column.written == group)


def compared(row: tuple[Column, ...]) -> tuple[str, ...]:
    """The columns verify compares, in order."""
    return tuple(column.name for column in row if column.compared and column.sqlite is not None)


def local(column: Column) -> str:
    """Where index.db keeps a session ``column``, as SQL over ``sessions AS s JOIN files AS f``."""
    return column.local or f"s.{column.name}"


def record_fields(listed: bool) -> tuple[Column, ...]:
    """The session columns the record reads: those a listing reads (``listed``), or the rest,
    read on first use."""
    return tuple(column for column in SESSION_ROW if column.field and column.listed == listed)
