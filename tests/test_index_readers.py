"""Other readers of index.db: a read-only index refuses writes, Python's own sqlite3 reads
every table and searches the full-text index (tests/test_outside_readers.py: the sqlite3
command, sqlite-utils, Datasette and doctor)."""

from __future__ import annotations

import pytest
from session_builder import copy_fixtures
from store_checks import stdlib_reads

from xcsh_store.errors import IndexDatabaseError
from xcsh_store.index import SessionIndex


def test_read_only_index_refuses_writes(agent_dir, index, two_sessions):
    with SessionIndex.open(str(agent_dir), read_only=True) as reader:
        assert len(reader.list_sessions()) == 2
        with pytest.raises(IndexDatabaseError):
            reader.sync()


def test_index_is_readable_by_stdlib_sqlite3(agent_dir, index):
    """Python's sqlite3 (SQLite 3.40 on Debian 12) reads every row of every table and view,
    the full-text index included, and finds entries with it (index.md, guarantee 5)."""
    copy_fixtures(agent_dir)
    index.sync()
    expected = [
        row[0]
        for row in index.connection.execute(
            "SELECT e.id FROM entries_fts JOIN entries AS e ON e.pk = entries_fts.rowid"
            " WHERE entries_fts MATCH '\"compaction\"'"
        )
    ]
    read = stdlib_reads(agent_dir / "index.db", '"compaction"')
    assert read["errors"] == {}
    assert read["counts"]["sessions"] == 31
    assert read["counts"]["usage_by_day"] > 0
    assert read["counts"]["entries_fts"] == read["counts"]["entries_fts_docsize"] > 0
    assert read["counts"]["entries_vocab"] > 0
    assert sorted(read["hits"]) == sorted(expected) and len(expected) > 10
