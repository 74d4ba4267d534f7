"""Damaged databases: index.db is rebuilt from the files with a warning, wherever the damage is
found; a newer schema is refused; a damaged history.db is reported and never emptied."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import apsw
import pytest
from fuzzing import examples
from helpers.damage import damage_objects, page_size
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from session_builder import copy_fixtures
from store_checks import assert_index_matches_files

from xcsh_store import HistoryError, HistoryStorage
from xcsh_store.errors import IndexDatabaseError
from xcsh_store.index import SessionIndex

# The real fixture sessions up to this size: every format, and quick to index again and again.
SMALL_FIXTURE_BYTES = 200_000


@pytest.fixture
def synced(agent_dir: Path) -> Path:
    """An agent dir with the small fixture sessions and 300 prompts, indexed; returns index.db."""
    copy_fixtures(agent_dir, SMALL_FIXTURE_BYTES)
    with HistoryStorage.open() as history:
        for number in range(300):
            history.add(f"xyzzy prompt {number}")
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync()
        index.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return agent_dir / "index.db"


def _moved_aside(agent_dir: Path) -> list[Path]:
    return sorted(agent_dir.glob("index.db.damaged-*"))


# --------------------------------------------------------------------------------------------
# Damage found when the index is opened


@pytest.mark.parametrize(
    "damage",
    ["garbage-header", "schema-format-garbage", "cut-to-50-bytes", "cut-mid-page",
     "last-page-missing"],
)  # fmt: skip
def test_damage_found_on_open_is_moved_aside_and_rebuilt(agent_dir, synced, damage, caplog):
    data = synced.read_bytes()
    size = page_size(synced)
    if damage == "garbage-header":
        synced.write_bytes(os.urandom(100) + data[100:])
    elif damage == "schema-format-garbage":  # SQLite: "unsupported file format"
        synced.write_bytes(data[:47] + b"\x09" + data[48:])
    else:
        keep = {"cut-to-50-bytes": 50, "cut-mid-page": 3 * size + 100}.get(damage, len(data) - size)
        synced.write_bytes(data[:keep])
    with caplog.at_level(logging.WARNING, logger="xcsh_store"):
        assert_index_matches_files(agent_dir).close()
    assert "damaged" in caplog.text
    assert len(_moved_aside(agent_dir)) == 1


# --------------------------------------------------------------------------------------------
# Damage found later


def test_damage_found_in_the_middle_of_a_sync_rebuilds_the_index(agent_dir, synced, caplog):
    assert damage_objects(synced, "entries") > 1
    session = next((agent_dir / "sessions").rglob("*.jsonl"))
    with open(session, "ab") as handle:
        handle.write(b'{"type":"custom","id":"late0001","parentId":null,"customType":"x"}\n')
    with SessionIndex.open(str(agent_dir)) as index, caplog.at_level(logging.WARNING):
        report = index.sync()
        assert report.history_error is None
        assert len(index.list_sessions()) == len(list(agent_dir.glob("sessions/*/*.jsonl")))
    assert "damaged" in caplog.text and len(_moved_aside(agent_dir)) == 1
    assert_index_matches_files(agent_dir).close()


def test_damage_met_by_a_nested_call_of_a_sync_still_rebuilds_the_index(agent_dir, synced, caplog):
    """sync() reads the list of roots through roots(), itself an entry point that explains
    damage to its caller: the sync must still recognise the damage and rebuild."""
    assert damage_objects(synced, "roots", "sqlite_autoindex_roots_1") == 2
    with SessionIndex.open(str(agent_dir)) as index, caplog.at_level(logging.WARNING):
        index.sync()
        assert index.roots() == [str(agent_dir / "sessions")]
    assert "damaged" in caplog.text and len(_moved_aside(agent_dir)) == 1
    assert_index_matches_files(agent_dir).close()


def test_damage_in_the_index_history_mirror_is_not_blamed_on_history_db(agent_dir, synced, caplog):
    history_db = agent_dir / "history.db"
    damage_objects(synced, "history", "idx_history_created_at", "history_prompt_hash")
    # A new prompt: the sync must mirror it, and so meets the damaged mirror (an unchanged
    # history.db is not read at all).
    with HistoryStorage.open() as history:
        history.add("xyzzy prompt 300")
    before = history_db.read_bytes()
    with SessionIndex.open(str(agent_dir)) as index, caplog.at_level(logging.WARNING):
        report = index.sync()
        assert report.history_error is None, report.history_error
        assert "index.db is damaged" in caplog.text
        assert len(index.history_search("xyzzy", limit=1000)) == 301
    assert history_db.read_bytes() == before


def test_damage_no_sync_reads_is_reported_by_queries_and_rebuilt_by_verify(agent_dir, synced):
    damage_objects(synced, "entries_fts_data", "entries_fts_idx")
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync()  # nothing changed: the damaged pages are not read
        with pytest.raises(IndexDatabaseError, match=r"damaged.*verify --repair"):
            index.search("the")
        report = index.verify()
        assert report.damaged and not report.clean
        repaired = index.verify(repair=True)
        assert repaired.rebuilt
        assert index.search("the")
        assert index.verify().clean
    assert len(_moved_aside(agent_dir)) == 1


def _pages_of(database: Path, name: str) -> list[int]:
    connection = apsw.Connection(str(database))
    try:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return [row[0] for row in connection.execute("SELECT pageno FROM dbstat WHERE name = ?",
                                                     (name,))]  # fmt: skip
    finally:
        connection.close()


def test_a_row_changed_under_its_unique_index_rebuilds_the_index(agent_dir, synced, caplog):
    """One changed byte in the path of a files row (not in its UNIQUE index), and the file has
    grown since: looked up by its path the row is not there, inserted it violates the index.
    SQLite's page checks cannot see this; its integrity check can."""
    size = page_size(synced)
    data = bytearray(synced.read_bytes())
    session = next((agent_dir / "sessions").rglob("*.jsonl"))
    with open(session, "ab") as handle:
        handle.write(b'{"type":"custom","id":"grown001","parentId":null,"customType":"x"}\n')
    name = session.name.encode()
    # The leaf holding the row (an earlier page may hold a stale copy in its free space).
    page = [
        page for page in _pages_of(synced, "files") if name in data[(page - 1) * size : page * size]
    ][-1]
    start = data.index(name, (page - 1) * size)
    data[start] = ord("#")
    synced.write_bytes(bytes(data))
    with SessionIndex.open(str(agent_dir)) as index, caplog.at_level(logging.WARNING):
        index.sync()
    assert "is damaged" in caplog.text and len(_moved_aside(agent_dir)) == 1
    assert_index_matches_files(agent_dir).close()


def test_a_null_where_the_store_wrote_text_rebuilds_the_index(agent_dir, synced, caplog):
    """Garbage can turn a value's type to NULL: code reading the row then fails with a
    TypeError or AttributeError, which is damage when SQLite's integrity check agrees."""
    connection = apsw.Connection(str(synced))
    connection.execute("PRAGMA writable_schema = ON")
    original = connection.execute("SELECT sql FROM sqlite_master WHERE name = 'files'").fetchall()[
        0
    ][0]
    loose = original.replace("path TEXT NOT NULL UNIQUE", "path TEXT UNIQUE")
    connection.execute("UPDATE sqlite_master SET sql = ? WHERE name = 'files'", (loose,))
    connection.close()
    connection = apsw.Connection(str(synced))
    connection.execute("UPDATE files SET path = NULL WHERE id = (SELECT min(id) FROM files)")
    connection.execute("PRAGMA writable_schema = ON")
    connection.execute("UPDATE sqlite_master SET sql = ? WHERE name = 'files'", (original,))
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    connection.close()
    with SessionIndex.open(str(agent_dir)) as index, caplog.at_level(logging.WARNING):
        index.sync()
    assert "NULL value in files.path" in caplog.text and len(_moved_aside(agent_dir)) == 1
    assert_index_matches_files(agent_dir).close()


def test_a_changed_byte_in_an_index_btree_is_found_by_verify(agent_dir, synced):
    """quick_check does not compare indexes with their tables; a lookup through a changed
    index then finds the wrong rows. verify runs the full integrity check."""
    size = page_size(synced)
    data = bytearray(synced.read_bytes())
    page = _pages_of(synced, "entries_parent")[-1]
    offset = (page - 1) * size + size - 40  # inside the cell content at the end of the page
    data[offset] ^= 0x01
    synced.write_bytes(bytes(data))
    with SessionIndex.open(str(agent_dir)) as index:
        report = index.verify()
        assert report.damaged, "a changed index entry went unnoticed"
        assert index.verify(repair=True).rebuilt
    assert_index_matches_files(agent_dir).close()


def test_a_newer_schema_is_refused_and_left_as_it_is(agent_dir, synced):
    with SessionIndex.open(str(agent_dir)) as index:
        index.connection.execute(
            "INSERT INTO schema_migrations VALUES ('9999_from_the_future', 'x', 'now')"
        )
        index.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    before = synced.read_bytes()
    with pytest.raises(IndexDatabaseError, match=r"newer xcsh-store.*upgrade"):
        SessionIndex.open(str(agent_dir))
    assert synced.read_bytes() == before
    assert _moved_aside(agent_dir) == []


@settings(
    max_examples=examples(8),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    damage=st.lists(
        st.tuples(st.floats(0, 1), st.integers(1, 20_000), st.randoms(use_true_random=False)),
        min_size=1,
        max_size=4,
    )
)
def test_garbage_anywhere_in_the_index_never_escapes_as_a_raw_sqlite_error(
    agent_dir, synced, damage
):
    """Whatever bytes are overwritten: open, sync and verify(repair=True) leave an index that
    equals the files, and nothing but IndexDatabaseError ever reaches the caller."""
    pristine = synced.read_bytes()
    size = len(pristine)
    data = bytearray(pristine)
    for start, length, garbage in damage:
        offset = int(start * (size - 1))
        data[offset : offset + length] = garbage.randbytes(len(data[offset : offset + length]))
    synced.write_bytes(bytes(data))
    try:
        with SessionIndex.open(str(agent_dir)) as index:
            index.sync()
            index.verify(repair=True)
        assert_index_matches_files(agent_dir).close()
    finally:
        for path in _moved_aside(agent_dir):
            path.unlink()
        synced.write_bytes(pristine)


# --------------------------------------------------------------------------------------------
# history.db


def _damage_history(path: Path, how: str) -> None:
    data = path.read_bytes()
    if how == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif how == "garbage-pages":
        path.write_bytes(data[:4096] + os.urandom(len(data) - 8192) + data[-4096:])
    elif how == "not-a-database":
        path.write_bytes(b"this is not a database\n" * 200)
    else:
        path.unlink()
        connection = apsw.Connection(str(path))
        connection.execute("CREATE TABLE history (id INTEGER PRIMARY KEY, text TEXT)")
        connection.close()


@pytest.mark.parametrize("how", ["truncated", "garbage-pages", "not-a-database", "foreign-table"])
def test_a_damaged_history_db_is_reported_and_the_mirror_kept(agent_dir, synced, how):
    history_db = agent_dir / "history.db"
    wal = Path(f"{history_db}-wal")
    assert not wal.exists() or wal.stat().st_size == 0, "the damage must hit the only copy"
    _damage_history(history_db, how)
    damaged = history_db.read_bytes()
    with SessionIndex.open(str(agent_dir)) as index:
        report = index.sync()
        assert report.history_error and "history.db" in report.history_error
        assert len(index.history_search("xyzzy", limit=1000)) == 300
        assert index.stats().history_prompts == 300
    assert history_db.read_bytes() == damaged, "history.db was changed"
    with pytest.raises(HistoryError, match="history"):
        HistoryStorage.open()
    assert history_db.read_bytes() == damaged, "opening history.db changed it"


def test_history_damaged_while_open_raises_instead_of_returning_nothing(agent_dir, synced):
    history_db = agent_dir / "history.db"
    with HistoryStorage.open() as history:
        assert len(history.get_recent(1000)) == 300
        damage_objects(history_db, "history", "idx_history_created_at")
        with pytest.raises(HistoryError, match="corrupt"):
            history.get_recent(1000)
        with pytest.raises(HistoryError):
            history.search("prompt", 10)
        history.add("one more")
        with pytest.raises(HistoryError):
            history.flush()
