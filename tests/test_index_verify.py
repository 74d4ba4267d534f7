"""Verify and repair: differences found and repaired, a damaged index moved aside and
rebuilt."""

from __future__ import annotations

from session_builder import copy_fixtures

from xcsh_store.index import SessionIndex


def test_verify_finds_and_repairs_differences(agent_dir, index, two_sessions):
    one, _two = two_sessions
    index.connection.execute("UPDATE entries SET parent_id = 'bogus' WHERE id = 'u1'")
    index.connection.execute("UPDATE blobs SET refcount = 5")
    index.connection.execute("INSERT INTO entries_fts (entries_fts) VALUES ('delete-all')")
    report = index.verify()
    assert not report.clean
    assert set(report.differences) == {str(one), str(two_sessions[1])}
    repaired = index.verify(repair=True)
    assert sorted(repaired.repaired) == sorted(map(str, two_sessions))
    assert index.verify().clean


def test_garbage_index_is_moved_aside_and_rebuilt(agent_dir, caplog):
    copy_fixtures(agent_dir)
    db = agent_dir / "index.db"
    db.write_bytes(b"this is not a database" * 100)
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync()
        assert len(index.list_sessions()) == 31
    assert "damaged" in caplog.text
    assert list(agent_dir.glob("index.db.damaged-*"))


def test_truncated_index_is_moved_aside_and_rebuilt(agent_dir):
    copy_fixtures(agent_dir)
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync()
        index.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db = agent_dir / "index.db"
    with open(db, "r+b") as handle:
        handle.truncate(db.stat().st_size // 2)
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync()
        assert len(index.list_sessions()) == 31
        assert index.verify().clean
