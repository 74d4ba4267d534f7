"""The index against a fresh parse: the real fixtures and generated trees, the rows of one
file, files without a valid header, stable ids for legacy files."""

from __future__ import annotations

from session_builder import (
    copy_fixtures,
    header,
    message,
    random_tree_session,
    sessions_dir,
    write_session,
)
from store_checks import assert_every_leaf_context_matches

from xcsh_store.format.blobs import BlobStore


def test_fixtures_index_like_a_fresh_parse(agent_dir, index):
    copy_fixtures(agent_dir)
    report = index.sync()
    assert report.files_seen == report.files_changed == 31
    assert index.verify().clean
    assert assert_every_leaf_context_matches(index) > 250


def test_generated_branched_sessions_index_like_a_fresh_parse(agent_dir, index):
    store = BlobStore(str(agent_dir / "blobs"))
    for seed in range(12):
        random_tree_session(sessions_dir(agent_dir) / f"s{seed}.jsonl", seed, 80, store)
    index.sync()
    assert index.verify().clean
    assert_every_leaf_context_matches(index)


def test_glued_objects_are_two_entries_on_one_line(agent_dir, index):
    copy_fixtures(agent_dir)
    index.sync()
    session = index.find_session("2638daee")  # badlogic compact.jsonl
    parts = index.connection.execute(
        "SELECT type, part, offset FROM entries WHERE session = ? AND offset ="
        " (SELECT offset FROM entries WHERE session = ? AND part = 1)",
        (session.file_id, session.file_id),
    ).fetchall()
    assert [(kind, part) for kind, part, _offset in parts] == [("message", 0), ("compaction", 1)]


def test_header_rows_and_session_row(agent_dir, index):
    path = write_session(
        sessions_dir(agent_dir) / "a.jsonl",
        [
            {"type": "title", "v": 1, "title": "From the title record", "source": "user"},
            header("abc123", parentSession="parent-id"),
            message("u1", None, "user", "hello there"),
            message("a1", "u1", "assistant", "general kenobi"),
        ],
    )
    index.sync()
    (session,) = index.list_sessions()
    assert session.session_id == "abc123"
    assert session.path == str(path)
    assert session.title == "From the title record"
    assert session.title_source == "user"
    assert session.parent_session_path == "parent-id"
    assert session.message_count == 2
    assert session.first_message == "hello there"
    assert session.last_entry_id == "a1"
    assert (session.input_tokens, session.output_tokens, session.cost) == (10, 5, 0.3)
    assert session.all_messages_text == "hello there general kenobi"
    rows = index.connection.execute(
        "SELECT seq, id, type FROM entries WHERE session = ? ORDER BY seq", (session.file_id,)
    ).fetchall()
    assert rows == [
        (0, None, "title"),
        (1, None, "session"),
        (2, "u1", "message"),
        (3, "a1", "message"),
    ]


def test_file_without_a_valid_header_is_indexed_as_invalid(agent_dir, index):
    path = write_session(
        sessions_dir(agent_dir) / "broken.jsonl",
        [message("u1", None, "user", "orphaned words"), message("a1", "u1", "assistant", "x")],
    )
    moved = path.with_name("old.jsonl.invalid-20260101T000000Z")
    write_session(moved, [message("u2", None, "user", "moved aside")])
    index.sync()
    statuses = dict(index.connection.execute("SELECT path, status FROM files").fetchall())
    assert statuses == {str(path): "invalid_header", str(moved): "invalid_header"}
    assert index.list_sessions() == []
    entries = index.connection.execute("SELECT count(*) FROM entries").fetchall()[0][0]
    assert entries == 3
    assert index.verify().clean


def test_legacy_v1_file_gets_stable_ids(agent_dir, index):
    v1 = [
        {"type": "session", "id": "legacy", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/w"},
        {"type": "message", "timestamp": "t1", "message": {"role": "user", "content": "old times"}},
        {"type": "message", "timestamp": "t2", "message": {"role": "assistant", "content": []}},
        {"type": "compaction", "timestamp": "t3", "summary": "s", "firstKeptEntryIndex": 2},
    ]
    write_session(sessions_dir(agent_dir) / "v1.jsonl", v1)
    index.sync()
    first = [row.id for row in index.branch("legacy")]
    assert len(first) == 3
    index.sync(full=True)
    assert [row.id for row in index.branch("legacy")] == first
    assert index.verify().clean
    assert_every_leaf_context_matches(index)
