"""The one list of each row type's columns (xcsh_store/index/model/columns.py) against what
holds those rows: index.db after every migration, the team index after every team migration,
and docs/schema.md. A column added to one of them and not to the core (or the other way round)
fails here."""

from __future__ import annotations

import re
from pathlib import Path

import apsw
import pytest

from xcsh_store.index import IndexedSession, SessionRecord
from xcsh_store.index.db import apply_migrations, load_migrations
from xcsh_store.index.model.columns import (
    ENTRY_ROW,
    PROMPT_ROW,
    SESSION_ROW,
    USAGE_ROW,
    Column,
    names,
)
from xcsh_store.team import TeamSession

SCHEMA_PAGE = Path(__file__).resolve().parent.parent / "docs" / "schema.md"
ROWS = {"sessions": SESSION_ROW, "entries": ENTRY_ROW, "history": PROMPT_ROW}
# The team index's key columns of each table, and its columns that are no index.db column
# (an entry's text and raw JSON, and the search vector over the text or the prompt).
# The narrow copies a usage-first sync writes (migration 0018) of columns of entries and of
# sessions: each of their columns is one of those rows', of the same type.
NARROW = {"usage_lines": ENTRY_ROW, "usage_sessions": SESSION_ROW}
TEAM_KEYS = {"sessions": ["host", "path"], "entries": ["host", "path"], "history": ["host"]}
TEAM_ONLY = {
    "entries": {"text": "text", "raw": "text", "search": "tsvector"},
    "history": {"search": "tsvector"},
}


def local_differences(connection: apsw.Connection) -> list[str]:
    """How index.db's tables (their columns, in order, with their declared types) differ from
    the core's lists, and the usage_entries view's columns from its usage row."""
    found = []
    for table, row in ROWS.items():
        have = [
            (name, kind) for _, name, kind, *_ in connection.execute(f"PRAGMA table_info({table})")
        ]
        want = [(column.name, column.sqlite) for column in row if column.sqlite is not None]
        if have != want:
            found.append(f"{table}: index.db has {have}, the core {want}")
    for table, row in NARROW.items():
        types = {column.name: column.sqlite for column in row}
        info = connection.execute(f"PRAGMA table_info({table})")
        if odd := [(name, kind) for _, name, kind, *_ in info if types.get(name) != kind]:
            found.append(f"{table}: {odd} are no columns of the core's row of that type")
    view = {name for _, name, *_ in connection.execute("PRAGMA table_info(usage_entries)")}
    if missing := sorted(set(names(USAGE_ROW)) - view):
        found.append(f"usage_entries lacks {missing}")
    return found


def team_differences(connection) -> list[str]:
    """How the team index's tables (their columns with their types) differ from the core's
    lists (its columns that another store copies), and its usage_entries view's columns."""

    def columns(table: str) -> dict[str, str]:
        rows = connection.execute(
            "SELECT column_name, data_type FROM information_schema.columns"
            " WHERE table_schema = current_schema() AND table_name = %s ORDER BY ordinal_position",
            (table,),
        ).fetchall()
        return dict(rows)

    found = []
    for table, row in ROWS.items():
        have = columns(table)
        want = {key: "text" for key in TEAM_KEYS[table]} | TEAM_ONLY.get(table, {})
        want |= {column.name: column.postgres for column in row if column.postgres is not None}
        if have != want:
            found.append(f"{table}: the team index has {have}, the core {want}")
    if missing := sorted(set(names(USAGE_ROW)) - set(columns("usage_entries"))):
        found.append(f"usage_entries lacks {missing}")
    return found


def documented(section: str) -> list[str]:
    """The columns docs/schema.md names in the first cells of the table of ``section`` (a
    heading that begins with it)."""
    text = SCHEMA_PAGE.read_text(encoding="utf-8")
    start = text.index(f"## {section}")
    body = text[start : text.find("\n## ", start + 1)]
    found = []
    for line in body.splitlines():
        if line.startswith("| `"):
            found += re.findall(r"`([a-z_]+)`", line.split("|")[1])
    return found


@pytest.fixture
def migrated() -> apsw.Connection:
    connection = apsw.Connection(":memory:")
    apply_migrations(connection, load_migrations())
    return connection


def test_index_db_has_the_cores_columns(migrated: apsw.Connection):
    assert local_differences(migrated) == []


def test_a_column_index_db_has_and_the_core_lacks_is_found(migrated: apsw.Connection):
    migrated.execute("ALTER TABLE sessions ADD COLUMN mood TEXT")
    (difference,) = local_differences(migrated)
    assert difference.startswith("sessions:") and "('mood', 'TEXT')" in difference


def test_a_narrow_copys_column_the_core_lacks_is_found(migrated: apsw.Connection):
    migrated.execute("ALTER TABLE usage_sessions ADD COLUMN mood TEXT")
    assert local_differences(migrated) == [
        "usage_sessions: [('mood', 'TEXT')] are no columns of the core's row of that type"
    ]


def test_the_team_index_has_the_cores_columns(team_url: str):
    from xcsh_store.team import connect

    with connect(team_url) as connection:
        assert team_differences(connection) == []


def test_a_column_the_team_index_lacks_is_found(team_url: str):
    from xcsh_store.team import connect

    with connect(team_url) as connection:
        connection.execute("ALTER TABLE sessions ADD COLUMN mood text")
        (difference,) = team_differences(connection)
    assert difference.startswith("sessions:") and "'mood': 'text'" in difference


@pytest.mark.parametrize(
    ("section", "row"), [("`sessions`", SESSION_ROW), ("`entries`", ENTRY_ROW)]
)
def test_docs_schema_names_every_column(section: str, row: tuple[Column, ...]):
    assert sorted(documented(section)) == sorted(
        column.name for column in row if column.sqlite is not None
    )


def test_docs_schema_names_every_prompt_column():
    text = SCHEMA_PAGE.read_text(encoding="utf-8")
    section = text[text.index("## `history`") : text.index("## `agent_prompts`")]
    # (`history.id`, `prompt`, …: each name in backticks, or after its table's name.)
    assert [name for name in names(PROMPT_ROW) if not re.search(f"[`.]{name}`", section)] == []


def test_the_docs_check_finds_a_column_the_page_lacks():
    assert "summary_from" in documented("`sessions`")
    assert "mood" not in documented("`sessions`")


def test_both_session_records_read_every_field_the_base_types():
    """SessionRecord types a session's fields once; each record reads each of them (from the
    columns of the core), so a field typed there and read by neither fails here."""
    typed = set(SessionRecord.__annotations__)
    for record in (IndexedSession, TeamSession):
        assert {name for name in typed if not hasattr(record, name)} == set(), record
