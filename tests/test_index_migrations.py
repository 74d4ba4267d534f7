"""The index schema and its migrations: migrating a blank index and an index of every earlier
schema gives exactly tests/schema.sql, rows that older migrations left are derived again, and
a schema from a newer xcsh-store is refused.

tests/schema.sql is written by this module, run as a script, once the schema changes on
purpose (read its diff before committing it)::

    .venv/bin/python tests/test_index_migrations.py > tests/schema.sql
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import apsw
import pytest
from session_builder import copy_fixtures
from store_checks import assert_every_leaf_context_matches, stdlib_reads

from xcsh_store.errors import IndexDatabaseError
from xcsh_store.index import SessionIndex
from xcsh_store.index import db as database

EXPECTED_SCHEMA = Path(__file__).with_name("schema.sql")
MIGRATIONS = database.load_migrations()

SCHEMA_HEADER = """\
-- The index schema that migrating any index.db to the latest migration produces: the rows of
-- sqlite_master (type, name, tbl_name, sql) but the FTS5 shadow tables, which are SQLite's.
-- Written by `python tests/test_index_migrations.py > tests/schema.sql`; do not edit.
"""

# Rows in the columns of 0001, which every later schema keeps: a little of each kind a sync
# writes, so that every migration after that runs over tables that are not empty.
_ROWS_OF_AN_EARLIER_SCHEMA = """
INSERT INTO meta (key, value) VALUES ('last_sync', '2026-01-01T00:00:00.000Z');
INSERT INTO roots (path, added_at) VALUES ('/elsewhere/sessions', '2026-01-01T00:00:00.000Z');
INSERT INTO files (id, path, root, project_dir, size, mtime_ns, inode, indexed_bytes, status)
VALUES (1, :sessions || '/--w--/s.jsonl', :sessions, '--w--', 300, 1, 1, 300, 'ok');
INSERT INTO sessions (file_id, session_id, path, cwd, project_dir, entry_count, message_count,
                      last_entry_id, input_tokens, output_tokens, cost)
VALUES (1, 's1', :sessions || '/--w--/s.jsonl', '/w', '--w--', 3, 2, 'a1', 10, 5, 0.3);
INSERT INTO entries (pk, session, seq, id, parent_id, type, role, provider, model, offset,
                     length, input_tokens, output_tokens, cost, prompt_hash)
VALUES (1, 1, 0, NULL, NULL, 'session', NULL, NULL, NULL, 0, 100, NULL, NULL, NULL, NULL),
       (2, 1, 1, 'u1', NULL, 'message', 'user', NULL, NULL, 100, 100, NULL, NULL, NULL, 'h1'),
       (3, 1, 2, 'a1', 'u1', 'message', 'assistant', 'anthropic', 'claude-test', 200, 100,
        10, 5, 0.3, NULL);
INSERT INTO entries_fts (rowid, text) VALUES (2, 'hello there'), (3, 'general kenobi');
INSERT INTO blob_refs (entry, hash) VALUES (3, :blob);
INSERT INTO history (id, prompt, created_at, cwd, prompt_hash)
VALUES (1, 'hello there', 1767225600, '/w', 'h1');
"""


def schema_of(connection: apsw.Connection) -> str:
    """sqlite_master as text, one object after another (FTS5's own shadow tables left out)."""
    rows = connection.execute(
        "SELECT type, name, tbl_name, sql FROM sqlite_master"
        " WHERE name NOT IN (SELECT name FROM pragma_table_list WHERE type = 'shadow')"
        " ORDER BY type, name"
    ).fetchall()
    return "".join(
        f"\n-- {kind} {name} on {table}\n" + (f"{sql};\n" if sql is not None else "")
        for kind, name, table, sql in rows
    )


def _migrated(connection: apsw.Connection) -> str:
    return SCHEMA_HEADER + schema_of(connection)


def test_a_blank_index_migrates_to_the_expected_schema(agent_dir):
    with SessionIndex.open(str(agent_dir)) as index:
        assert _migrated(index.connection) == EXPECTED_SCHEMA.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "applied",
    range(1, len(MIGRATIONS)),
    ids=[f"from-{migration.name}" for migration in MIGRATIONS[:-1]],
)
def test_an_index_of_every_earlier_schema_migrates_to_the_expected_schema(agent_dir, applied):
    db_path = str(agent_dir / "index.db")
    earlier = database.connect(db_path)
    database.apply_migrations(earlier, MIGRATIONS[:applied])
    bindings = {"sessions": str(agent_dir / "sessions"), "blob": "b" * 64}
    with database.transaction(earlier):
        earlier.execute(_ROWS_OF_AN_EARLIER_SCHEMA, bindings)
    earlier.close()
    with SessionIndex.open(str(agent_dir)) as index:
        assert _migrated(index.connection) == EXPECTED_SCHEMA.read_text(encoding="utf-8")
        applied_names = index.connection.execute("SELECT name FROM schema_migrations")
        assert sorted(row[0] for row in applied_names) == [m.name for m in MIGRATIONS]
        ids = index.connection.execute("SELECT id FROM entries ORDER BY pk").fetchall()
        assert ids == [(None,), ("u1",), ("a1",)]


def test_an_index_from_before_chains_derives_them_on_its_next_sync(agent_dir):
    copy_fixtures(agent_dir)
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync()
        # Take the index back to its state under 0001 alone, rows included (but for the later
        # migrations: 0008's index on the file identity goes before the column it indexes).
        index.connection.execute(
            "DROP INDEX entries_chain; ALTER TABLE entries DROP COLUMN chain;"
            " ALTER TABLE files DROP COLUMN chained; DROP INDEX files_identity;"
            " ALTER TABLE files DROP COLUMN ctime_ns;"
            " DELETE FROM meta; DELETE FROM schema_migrations"
            " WHERE name IN ('0002_entry_chains', '0003_file_identity')"
        )
    with SessionIndex.open(str(agent_dir)) as index:
        assert index.sync().files_reindexed == 31
        assert index.connection.execute("SELECT sum(chained) FROM files").fetchall() == [(31,)]
        assert index.sync().files_changed == 0
        assert index.verify().clean
        assert_every_leaf_context_matches(index)


def test_an_index_from_before_file_identity_learns_its_agent_dir_and_ctimes(agent_dir, tmp_path):
    copy_fixtures(agent_dir)
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync()
        # Take the index back to its state under 0001 and 0002, rows included (see above).
        index.connection.execute(
            "DROP INDEX files_identity; ALTER TABLE files DROP COLUMN ctime_ns; DELETE FROM meta;"
            " DELETE FROM schema_migrations WHERE name = '0003_file_identity'"
        )
    moved = tmp_path / "moved-agent"
    os.rename(agent_dir, moved)
    with SessionIndex.open(str(moved)) as index:
        # Before any sync, the index already reads the files where they are now.
        assert index.relocation is not None and index.relocation.stored == str(agent_dir)
        assert all(s.path.startswith(f"{moved}{os.sep}") for s in index.list_sessions())
        assert index.sync().files_reindexed == 31
        assert index.connection.execute(
            "SELECT count(*) FROM files WHERE ctime_ns = 0"
        ).fetchall() == [(0,)]
        assert index.sync().files_changed == 0
        assert index.verify().clean
        assert_every_leaf_context_matches(index)


_TEXT_AGAIN = "0012_search_for_sqlite_3_40: search text indexed again"


def test_an_index_of_0009_gives_up_its_search_rows_and_reads_with_sqlite_3_40(agent_dir):
    """An index written by 0009's xcsh-store, search rows and all: its entries_fts
    (contentless_delete, SQLite 3.43) is made again without that option, empty, and the next
    sync indexes every text again; then Python's sqlite3 reads every table and searches."""
    copy_fixtures(agent_dir)
    db_path = agent_dir / "index.db"
    earlier = database.connect(str(db_path))
    database.apply_migrations(earlier, [m for m in MIGRATIONS if m.number <= 9])
    bindings = {"sessions": str(agent_dir / "sessions"), "blob": "b" * 64}
    with database.transaction(earlier):
        earlier.execute(_ROWS_OF_AN_EARLIER_SCHEMA, bindings)
    earlier.close()
    before = stdlib_reads(db_path, '"kenobi"')
    if tuple(map(int, before["version"].split("."))) < (3, 43):
        assert before["errors"]["entries_fts"] == 'unrecognized option: "contentless_delete"'
    with SessionIndex.open(str(agent_dir)) as index:
        assert index.pending_upgrade() == _TEXT_AGAIN
        assert index.connection.execute("SELECT count(*) FROM entries_fts").fetchall() == [(0,)]
        index.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    migrated = stdlib_reads(db_path, '"kenobi"')
    assert migrated["errors"] == {} and migrated["hits"] == []
    with SessionIndex.open(str(agent_dir)) as index:
        assert index.sync().resync_reason == _TEXT_AGAIN
        assert index.pending_upgrade() is None
        assert index.verify().clean
    synced = stdlib_reads(db_path, '"compaction"')
    assert synced["errors"] == {} and len(synced["hits"]) > 10


def test_newer_schema_is_refused_clearly(agent_dir):
    with SessionIndex.open(str(agent_dir)) as index:
        index.connection.execute(
            "INSERT INTO schema_migrations VALUES ('9999_from_the_future', 'x', 'now')"
        )
    with pytest.raises(IndexDatabaseError, match="newer xcsh-store"):
        SessionIndex.open(str(agent_dir))


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as folder, SessionIndex.open(folder) as index:
        sys.stdout.write(_migrated(index.connection))


# The checksum of every migration a release has shipped. An index records the checksum of each
# migration applied to it and refuses one whose file has changed since, so a shipped migration
# is never edited, not even its comments: a change to the schema is a new numbered file.
SHIPPED_MIGRATIONS = {
    "0001_initial": "e36a70b58f9422ebd17fddc54b9f39abd49242cb386e1a57dc2c4cd9122ba668",
    "0002_entry_chains": "dacfa648f2c29f5e48c997e1640a4ae78bb3aebd40be74dab2a487ae5ccfb08a",
    "0003_file_identity": "2030d3e95e5440f3e401cae21977aaccf777dcc773aea68a2050fc56d7de4a40",
    "0004_skipped_lines": "0a5f95fc1feff2031c132e47c67322a563691adb30ab9158c5a0bdfa1e27f68f",
    "0005_pi_names_and_models": "e3cf089f46b9e8793f1b5ba906b7df59a3e335f800a7170710bfb98816491dba",
    "0006_fts_symbols": "f48a79ab2d8eb57450a4cb9e71a57e46b3b168e840216a9bc4c6aa7df67812d9",
    "0007_text_once": "e5b78b70ed9421b819a4cff8018f3ece5b342a080d02de9e7c27f2e3868e86c7",
    "0008_listing_indexes": "f80de2ef106f497a22146b67ea83f8e647f2320d5712abde23fba4eb5835ab7e",
    "0009_agents": "ec618af5a3e17631dfbb32e26cc218de2cdbbea48a13df1f44c106829810d95f",
}


def test_no_shipped_migration_is_ever_edited():
    checksums = {migration.name: migration.checksum for migration in MIGRATIONS}
    assert {name: checksums.get(name) for name in SHIPPED_MIGRATIONS} == SHIPPED_MIGRATIONS


def test_an_index_of_0016_learns_how_each_cost_is_known(agent_dir):
    """0017 (issue 35, unknown is never $0): the costs of agents that record none were the
    index's estimates; the files of agents that record costs are read again (a pi line without
    a cost was counted as $0, an opencode $0 had no list price beside it)."""
    db_path = agent_dir / "index.db"
    earlier = database.connect(str(db_path))
    database.apply_migrations(earlier, [m for m in MIGRATIONS if m.number <= 16])
    sessions = str(agent_dir / "sessions")
    with database.transaction(earlier):
        for file_id, agent in enumerate(("claude", "pi", "opencode"), start=1):
            earlier.execute(
                "INSERT INTO files (id, path, root, project_dir, size, mtime_ns, inode,"
                " indexed_bytes, status, agent) VALUES (?, ?, ?, '', 300, 7, ?, 300, 'ok', ?)",
                (file_id, f"{sessions}/{agent}.jsonl", sessions, file_id, agent),
            )
            earlier.execute(
                "INSERT INTO entries (pk, session, seq, type, role, offset, length, input_tokens,"
                " output_tokens, cost) VALUES (?, ?, 0, 'message', 'assistant', 0, 300, 10, 5, ?)",
                (file_id, file_id, 0.25 if agent == "claude" else 0.0),
            )
    database.apply_migrations(earlier, MIGRATIONS)
    rows = earlier.execute(
        "SELECT f.agent, e.cost_estimated, f.mtime_ns, f.indexed_bytes FROM entries AS e"
        " JOIN files AS f ON f.id = e.session ORDER BY f.id"
    ).fetchall()
    earlier.close()
    assert rows == [("claude", 1, 7, 300), ("pi", 0, -1, 0), ("opencode", 0, -1, 0)]
