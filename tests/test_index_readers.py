"""Other readers of index.db: a read-only index refuses writes, Python's own sqlite3 reads
every table and the full-text index."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from session_builder import copy_fixtures

from xcsh_store.errors import IndexDatabaseError
from xcsh_store.index import SessionIndex


def test_read_only_index_refuses_writes(agent_dir, index, two_sessions):
    with SessionIndex.open(str(agent_dir), read_only=True) as reader:
        assert len(reader.list_sessions()) == 2
        with pytest.raises(IndexDatabaseError):
            reader.sync()


def test_index_is_readable_by_stdlib_sqlite3(agent_dir, index):
    """Python's sqlite3 (SQLite 3.40 on Debian 12) reads every table and view; entries_fts
    (and entries_vocab over it) needs SQLite 3.43 for contentless_delete, as the README says."""
    copy_fixtures(agent_dir)
    index.sync()
    script = """
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
kinds = "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')"
search = ("entries_fts", "entries_vocab")
tables = [row[0] for row in db.execute(kinds) if row[0] not in search]
counts = {t: db.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in tables}
match = "SELECT count(*) FROM entries_fts WHERE entries_fts MATCH 'compaction'"
try:
    hits = db.execute(match).fetchone()[0]
except sqlite3.OperationalError as error:
    hits = str(error)
print(json.dumps({"version": sqlite3.sqlite_version_info, "counts": counts, "hits": hits}))
"""
    result = subprocess.run(
        [sys.executable, "-c", script, str(agent_dir / "index.db")],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    output = json.loads(result.stdout)
    assert output["counts"]["sessions"] == 31
    assert output["counts"]["usage_by_day"] > 0
    assert output["counts"]["entries_fts_docsize"] > 0
    if tuple(output["version"]) < (3, 43):
        assert output["hits"] == 'unrecognized option: "contentless_delete"'
    else:
        assert output["hits"] > 0
