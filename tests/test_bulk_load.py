"""A first load (index/write/bulk_load.py): the entries' secondary indexes are dropped while the
rows go in and built once at the end, FTS5 flushes in bigger pieces meanwhile; the same rows
and the same schema as a sync that keeps them; a sync killed mid-load leaves a state the next
sync completes, and a file SQLite 3.40 reads and searches all along."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import apsw
import pytest
from helpers.held_sync import start_held_sync, wait_for_files
from session_builder import copy_fixtures, random_tree_session, sessions_dir
from store_checks import stdlib_reads

from xcsh_store.format.blobs import BlobStore
from xcsh_store.index import SessionIndex
from xcsh_store.index.write import bulk_load

# Everything of entries a search or a listing reads, by content (keys differ between a sync
# that carries on after a kill and one clean sync).
_CONTENT = (
    "SELECT f.path, e.seq, e.id, e.parent_id, e.type, e.timestamp, e.role, e.model,"
    " e.input_tokens, e.output_tokens, e.cost, e.usage_key, e.prompt_hash"
    " FROM entries AS e JOIN files AS f ON f.id = e.session ORDER BY 1, 2"
)
_INDEXES = (
    "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'entries'"
    " AND sql IS NOT NULL"
    " ORDER BY name"
)


def corpus(agent_dir: Path) -> None:
    copy_fixtures(agent_dir)
    store = BlobStore(str(agent_dir / "blobs"))
    for seed in range(4):
        random_tree_session(sessions_dir(agent_dir) / f"tree-{seed}.jsonl", seed, 120, store)


def read(db_path: Path, sql: str) -> list[Any]:
    connection = apsw.Connection(str(db_path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return connection.execute(sql).fetchall()
    finally:
        connection.close()


def sync(agent_dir: Path, db_path: Path, **options: Any) -> Any:
    with SessionIndex.open(str(agent_dir), db_path=str(db_path)) as index:
        return index.sync(**options)


def hashsize(db_path: Path) -> list[Any]:
    return read(db_path, "SELECT v FROM entries_fts_config WHERE k = 'hashsize'")


def test_a_first_load_builds_the_indexes_at_the_end(agent_dir, tmp_path, monkeypatch):
    corpus(agent_dir)
    sync(agent_dir, tmp_path / "kept.db")  # (a test corpus is far below BULK_MIN_BYTES)
    monkeypatch.setattr(bulk_load, "BULK_MIN_BYTES", 0)
    db_path = tmp_path / "index.db"
    during: list[list[Any]] = []

    def look(done: int, total: int, path: str) -> None:
        if done > 0 and not during:
            during.append(read(db_path, _INDEXES))

    sync(agent_dir, db_path, progress=look)
    assert during == [[]], "the entries' indexes were kept during a first load"
    assert read(db_path, _INDEXES) == read(tmp_path / "kept.db", _INDEXES)
    assert read(db_path, _CONTENT) == read(tmp_path / "kept.db", _CONTENT)
    assert not read(db_path, f"SELECT 1 FROM meta WHERE key = '{bulk_load.DEFERRED_KEY}'")
    assert hashsize(db_path) == [(bulk_load.DEFAULT_HASHSIZE,)]
    with SessionIndex.open(str(agent_dir), db_path=str(db_path)) as index:
        assert index.verify().clean
        assert index.search("packages")


def test_the_indexes_are_sorted_on_disk_not_in_the_writers_memory(agent_dir, tmp_path):
    """CREATE INDEX sorts every row of entries at once: with the connection's temporary store
    in memory, the writer of a 3 GB first load held 266 MB for one index (79 MB on disk)."""
    corpus(agent_dir)
    db_path = tmp_path / "index.db"
    sync(agent_dir, db_path)
    with SessionIndex.open(str(agent_dir), db_path=str(db_path)) as index:
        connection = index.connection
        bulk_load.defer_indexes(connection)
        statements: list[str] = []
        connection.exec_trace = lambda _cursor, sql, _bindings: statements.append(sql) or True
        bulk_load.build_indexes(connection)
        connection.exec_trace = None
        ((store,),) = connection.execute("PRAGMA temp_store")
    creates = [at for at, sql in enumerate(statements) if sql.startswith("CREATE INDEX")]
    assert creates
    on_disk = statements.index("PRAGMA temp_store = FILE")
    back = statements.index("PRAGMA temp_store = MEMORY")
    assert on_disk < creates[0] and creates[-1] < back
    assert store == 2  # MEMORY again for the connection's other work


def test_a_sync_of_an_index_with_rows_keeps_its_indexes(agent_dir, tmp_path, monkeypatch):
    corpus(agent_dir)
    db_path = tmp_path / "index.db"
    sync(agent_dir, db_path)
    monkeypatch.setattr(bulk_load, "BULK_MIN_BYTES", 0)
    during: list[list[Any]] = []

    def look(done: int, total: int, path: str) -> None:
        if not during:
            during.append(read(db_path, _INDEXES))

    before = read(db_path, _INDEXES)
    sync(agent_dir, db_path, full=True, progress=look)
    assert during == [before] and read(db_path, _INDEXES) == before


# A first load that reports each file it starts and, after ``held`` of them, waits there until
# it is killed; it commits every few rows, so the kill finds some files committed.
_SETTINGS = """
from xcsh_store.index.write import bulk_load, indexer

bulk_load.BULK_MIN_BYTES = 0
indexer.COMMIT_EVERY_VALUES = 50
"""


def killed_first_load(agent_dir: Path, db_path: Path, held: int) -> None:
    writer = start_held_sync(agent_dir, db_path, held, _SETTINGS, workers=1)
    wait_for_files(writer, held)
    os.kill(writer.pid, signal.SIGKILL)
    writer.communicate()


@pytest.mark.parametrize("next_is_bulk", [True, False], ids=["bulk-again", "small-next"])
def test_a_killed_first_load_is_completed_by_the_next_sync(
    agent_dir, tmp_path, monkeypatch, next_is_bulk
):
    corpus(agent_dir)
    sync(agent_dir, tmp_path / "clean.db")
    db_path = tmp_path / "index.db"
    killed_first_load(agent_dir, db_path, 12)
    assert read(db_path, _INDEXES) == [], "the kill did not land in the load"
    assert read(db_path, f"SELECT 1 FROM meta WHERE key = '{bulk_load.DEFERRED_KEY}'")
    assert read(db_path, "SELECT count(*) FROM entries")[0][0] > 0, "nothing was committed"
    # What the kill left reads and searches with SQLite 3.40 (its FTS5 hashsize included).
    found = stdlib_reads(db_path)
    assert found["errors"] == {} and isinstance(found["hits"], list)
    if next_is_bulk:
        monkeypatch.setattr(bulk_load, "BULK_MIN_BYTES", 0)
    with SessionIndex.open(str(agent_dir), db_path=str(db_path)) as index:
        index.sync()
        assert index.verify().clean
    assert read(db_path, _INDEXES) == read(tmp_path / "clean.db", _INDEXES)
    assert read(db_path, _CONTENT) == read(tmp_path / "clean.db", _CONTENT)
    assert not read(db_path, f"SELECT 1 FROM meta WHERE key = '{bulk_load.DEFERRED_KEY}'")
    assert hashsize(db_path) == [(bulk_load.DEFAULT_HASHSIZE,)]


def test_an_index_after_a_first_load_reads_and_searches_with_sqlite_3_40(
    agent_dir, tmp_path, monkeypatch
):
    corpus(agent_dir)
    sync(agent_dir, tmp_path / "kept.db")
    monkeypatch.setattr(bulk_load, "BULK_MIN_BYTES", 0)
    sync(agent_dir, tmp_path / "index.db")
    found = stdlib_reads(tmp_path / "index.db", "packages")
    kept = stdlib_reads(tmp_path / "kept.db", "packages")
    assert found["errors"] == {}
    assert found["hits"] and found["hits"] == kept["hits"]
