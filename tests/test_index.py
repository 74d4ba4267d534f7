"""The SQLite index: differential against a fresh parse, incremental sync, queries, GC, verify."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
from session_builder import (
    append,
    copy_fixtures,
    header,
    message,
    random_tree_session,
    sessions_dir,
    write_session,
)

from xcsh_store.errors import (
    EntryNotFoundError,
    IndexDatabaseError,
    SearchQueryError,
    SessionNotFoundError,
)
from xcsh_store.format.blobs import BlobStore
from xcsh_store.format.loader import load_session
from xcsh_store.format.versions import find_header_index, synthetic_ids_for
from xcsh_store.index import SessionIndex
from xcsh_store.index.db import transaction
from xcsh_store.index.indexer import drop_file_rows
from xcsh_store.index.search import parse_search_query
from xcsh_store.index.tree import ChainPath, ListPath, entry_path
from xcsh_store.session.context import build_session_context


@pytest.fixture
def index(agent_dir):
    with SessionIndex.open(str(agent_dir)) as opened:
        yield opened


def _loaded_entries(path: str, blob_store: BlobStore):
    loaded = load_session(path, blob_store=blob_store, new_id=synthetic_ids_for(path))
    return loaded.entries[find_header_index(loaded.entries) + 1 :]


def _assert_every_leaf_context_matches(index: SessionIndex) -> int:
    checked = 0
    for session in index.list_sessions():
        entries = _loaded_entries(session.path, index.blob_store)
        tree = index.tree(session)
        # Every leaf, the default leaf, and interior entries for compaction boundaries.
        for leaf in [*tree.leaves, None, *list(tree.entries)[::25]]:
            expected = build_session_context(entries, leaf or session.last_entry_id)
            assert index.context(session, leaf) == expected, (session.path, leaf)
            checked += 1
    return checked


# --------------------------------------------------------------------------------------------
# Differential


def test_fixtures_index_like_a_fresh_parse(agent_dir, index):
    copy_fixtures(agent_dir)
    report = index.sync()
    assert report.files_seen == report.files_changed == 31
    assert index.verify().clean
    assert _assert_every_leaf_context_matches(index) > 250


def test_generated_branched_sessions_index_like_a_fresh_parse(agent_dir, index):
    store = BlobStore(str(agent_dir / "blobs"))
    for seed in range(12):
        random_tree_session(sessions_dir(agent_dir) / f"s{seed}.jsonl", seed, 80, store)
    index.sync()
    assert index.verify().clean
    _assert_every_leaf_context_matches(index)


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
    _assert_every_leaf_context_matches(index)


# --------------------------------------------------------------------------------------------
# Incremental sync


@pytest.fixture
def two_sessions(agent_dir, index):
    folder = sessions_dir(agent_dir)
    one = write_session(folder / "one.jsonl", [header("one"), message("u1", None, "user", "alpha")])
    two = write_session(folder / "two.jsonl", [header("two"), message("u1", None, "user", "beta")])
    index.sync()
    return one, two


def test_unchanged_files_cost_one_stat(index, two_sessions):
    report = index.sync()
    assert report.files_unchanged == 2
    assert report.read_paths == []
    assert report.bytes_read == 0


@pytest.mark.parametrize("writer", ["this connection", "another connection"])
def test_a_sync_sees_what_was_written_to_the_files_table_since_the_last(
    agent_dir, index, two_sessions, writer
):
    """A sync reuses the files table it read last time only while nothing wrote index.db."""
    one, _two = two_sessions
    assert index.sync().files_unchanged == 2
    with SessionIndex.open(str(agent_dir)) as other:
        connection = index.connection if writer == "this connection" else other.connection
        file_id = index.find_session("one").file_id
        with transaction(connection):
            drop_file_rows(connection, file_id)
    report = index.sync()
    assert report.read_paths == [str(one)]
    assert index.find_session("one").last_entry_id == "u1"
    assert index.sync().read_paths == []


def test_appended_line_reads_only_the_new_bytes(index, two_sessions):
    one, _two = two_sessions
    before = one.stat().st_size
    append(one, message("a1", "u1", "assistant", "appended answer"))
    report = index.sync()
    assert report.read_paths == [str(one)]
    assert report.files_reindexed == 0
    assert report.entries_added == 1
    assert report.bytes_read <= one.stat().st_size - before + 5 * 1024
    assert index.find_session("one").last_entry_id == "a1"
    assert [hit.entry_id for hit in index.search("appended")] == ["a1"]
    assert index.verify().clean


def test_partial_line_waits_until_it_is_complete(index, two_sessions):
    one, _two = two_sessions
    line = json.dumps(message("a1", "u1", "assistant", "slowly written"), separators=(",", ":"))
    with open(one, "ab") as handle:
        handle.write(line[:40].encode())
    report = index.sync()
    assert report.entries_added == 0
    assert index.find_session("one").last_entry_id == "u1"
    with open(one, "ab") as handle:
        handle.write(line[40:].encode() + b"\n")
    report = index.sync()
    assert report.entries_added == 1
    assert report.files_reindexed == 0
    assert index.verify().clean


def test_complete_last_line_without_newline_is_indexed(index, two_sessions):
    one, _two = two_sessions
    with open(one, "ab") as handle:
        handle.write(json.dumps(message("a1", "u1", "assistant", "no newline")).encode())
    assert index.sync().entries_added == 1
    # The next append continues the unterminated line (glued objects): the line is re-read.
    append(one, message("a2", "a1", "assistant", "next line"))
    index.sync()
    assert index.find_session("one").last_entry_id == "a2"
    assert index.verify().clean


def test_truncated_file_is_reindexed(index, two_sessions):
    one, _two = two_sessions
    write_session(one, [header("one")])
    report = index.sync()
    assert report.files_reindexed == 1
    assert report.read_paths == [str(one)]
    assert index.find_session("one").message_count == 0
    assert index.verify().clean


def test_same_size_rewrite_in_place_is_detected(index, two_sessions):
    one, _two = two_sessions
    data = one.read_bytes()
    changed = data.replace(b"alpha", b"gamma")
    assert len(changed) == len(data)
    with open(one, "r+b") as handle:
        handle.write(changed)
    os.utime(one, ns=(time.time_ns(), time.time_ns() + 1_000_000))
    report = index.sync()
    assert report.files_reindexed == 1
    assert [hit.session_id for hit in index.search("gamma")] == ["one"]
    assert index.search("alpha") == []
    assert index.verify().clean


@pytest.mark.parametrize("word", ["first", "middle"])
def test_same_size_edit_with_its_mtime_put_back_is_detected(agent_dir, index, word):
    # "first" lies in the head the append check hashes; "middle" in neither hashed part.
    filler = [message(f"f{n}", f"f{n - 1}", "user", "filler " * 20) for n in range(1, 80)]
    path = write_session(
        sessions_dir(agent_dir) / "edited.jsonl",
        [header("edited"), message("f0", None, "user", "first"), *filler[:40],
         message("m", "f40", "user", "middle"), *filler[40:]],
    )  # fmt: skip
    index.sync()
    before = os.stat(path)
    data = path.read_bytes()
    path.write_bytes(data.replace(f'"{word}"'.encode(), f'"{word[::-1]}"'.encode()))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.stat(path).st_size == before.st_size
    index.sync()
    assert [hit.session_id for hit in index.search(word[::-1])] == ["edited"]
    assert index.search(word) == []


def test_atomic_replace_is_reindexed(index, two_sessions):
    one, _two = two_sessions
    temp = one.with_name(".one.jsonl.tmp")
    write_session(temp, [header("one"), message("x1", None, "user", "replacement")])
    os.replace(temp, one)
    report = index.sync()
    assert report.read_paths == [str(one)]
    assert report.files_reindexed == 1
    assert index.find_session("one").first_message == "replacement"
    assert index.verify().clean


def test_deleted_file_is_removed(index, two_sessions):
    one, _two = two_sessions
    one.unlink()
    report = index.sync()
    assert report.files_removed == 1
    assert report.entries_removed == 2
    with pytest.raises(SessionNotFoundError):
        index.find_session("one")
    assert index.verify().clean


def test_renamed_file_is_followed_without_reading_it(index, two_sessions):
    one, _two = two_sessions
    moved = one.with_name("moved.jsonl")
    one.rename(moved)
    report = index.sync()
    assert report.files_renamed == 1
    assert report.read_paths == []
    assert index.find_session("one").path == str(moved)
    assert index.verify().clean


def test_file_growing_while_sync_reads_it(index, two_sessions):
    one, _two = two_sessions
    append(one, message("a1", "u1", "assistant", "first"))
    line = json.dumps(message("a2", "a1", "assistant", "second")).encode()

    def grow(done: int, total: int, path: str) -> None:
        if path == str(one):
            with open(one, "ab") as handle:
                handle.write(line[:30])

    index.sync(progress=grow)
    assert index.find_session("one").last_entry_id == "a1"
    with open(one, "ab") as handle:
        handle.write(line[30:] + b"\n")
    report = index.sync()
    assert report.entries_added == 1
    assert index.find_session("one").last_entry_id == "a2"
    assert index.verify().clean


def test_full_sync_rereads_everything(index, two_sessions):
    report = index.sync(full=True)
    assert report.files_reindexed == 2
    assert index.verify().clean


def test_duplicate_ids_the_later_line_wins(agent_dir, index):
    path = sessions_dir(agent_dir) / "dup.jsonl"
    write_session(
        path,
        [
            header("dup"),
            message("x", None, "user", "first version"),
            message("x", None, "user", "second version"),
        ],
    )
    index.sync()
    assert [hit.snippet for hit in index.search("version")] == ["second [version]"]
    append(path, message("x", None, "user", "third version"))
    index.sync()
    assert [hit.snippet for hit in index.search("version")] == ["third [version]"]
    assert index.verify().clean


def test_parent_cycles_do_not_hang(agent_dir, index):
    write_session(
        sessions_dir(agent_dir) / "cycle.jsonl",
        [header("cycle"), message("a", "b", "user", "one"), message("b", "a", "user", "two"),
         message("c", "c", "user", "self")],
    )  # fmt: skip
    index.sync()
    assert [row.id for row in index.branch("cycle", "b")] == ["a", "b"]
    assert [row.id for row in index.branch("cycle", "c")] == ["c"]
    assert sorted(index.tree("cycle").roots) == ["c"]
    _assert_every_leaf_context_matches(index)


def test_well_formed_sessions_are_followed_by_chains_and_odd_ones_by_parent_links(agent_dir, index):
    copy_fixtures(agent_dir)
    write_session(
        sessions_dir(agent_dir) / "late.jsonl",
        [header("late"), message("b", "a", "user", "child first"), message("a", None, "user", "x")],
    )
    index.sync()
    kinds = {}
    for session in index.list_sessions():
        if session.last_entry_id is not None and not session.legacy:
            path = entry_path(index.connection, session.file_id, session.last_entry_id)
            kinds[session.session_id] = type(path)
    # A child written before its parent is walked by parent links; every fixture by chains
    # (kuato's pi-session names a parent that never appears: a root, still chained).
    assert kinds.pop("late") is ListPath
    assert len(kinds) == 20
    assert all(kind is ChainPath for kind in kinds.values())
    assert [row.id for row in index.branch("late", "b")] == ["a", "b"]
    _assert_every_leaf_context_matches(index)


def test_an_index_from_before_chains_derives_them_on_its_next_sync(agent_dir):
    copy_fixtures(agent_dir)
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync()
        # Take the index back to its state under 0001 alone, rows included.
        index.connection.execute(
            "DROP INDEX entries_chain; ALTER TABLE entries DROP COLUMN chain;"
            " ALTER TABLE files DROP COLUMN chained; ALTER TABLE files DROP COLUMN ctime_ns;"
            " DELETE FROM meta; DELETE FROM schema_migrations"
            " WHERE name IN ('0002_entry_chains', '0003_file_identity')"
        )
    with SessionIndex.open(str(agent_dir)) as index:
        assert index.sync().files_reindexed == 31
        assert index.connection.execute("SELECT sum(chained) FROM files").fetchall() == [(31,)]
        assert index.sync().files_changed == 0
        assert index.verify().clean
        _assert_every_leaf_context_matches(index)


def test_an_index_from_before_file_identity_learns_its_agent_dir_and_ctimes(agent_dir, tmp_path):
    copy_fixtures(agent_dir)
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync()
        # Take the index back to its state under 0001 and 0002, rows included.
        index.connection.execute(
            "ALTER TABLE files DROP COLUMN ctime_ns; DELETE FROM meta;"
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
        _assert_every_leaf_context_matches(index)


# --------------------------------------------------------------------------------------------
# Queries


def test_list_and_find_sessions(agent_dir, index):
    copy_fixtures(agent_dir)
    index.sync()
    sessions = index.list_sessions()
    assert len(sessions) == 31
    assert [s.modified for s in sessions] == sorted((s.modified for s in sessions), reverse=True)
    assert len(index.list_sessions(limit=3)) == 3
    assert {s.cwd for s in index.list_sessions(cwd="/tmp/pi-v3")} == {"/tmp/pi-v3"}
    assert index.find_session("2638DAEE").session_id.startswith("2638daee")
    by_name = index.find_session("badlogic__pi-mono__compact")
    assert by_name.path.endswith("badlogic__pi-mono__compact.jsonl")
    assert index.find_session(by_name.path).file_id == by_name.file_id
    assert index.find_session("compac").file_id == by_name.file_id  # after the last "_"
    with pytest.raises(SessionNotFoundError):
        index.find_session("no-such-session")


def test_branch_and_tree(agent_dir, index):
    path = sessions_dir(agent_dir) / "t.jsonl"
    write_session(
        path,
        [header("tree"), message("r", None, "user", "root"), message("a", "r", "assistant", "A"),
         message("b", "r", "assistant", "B"), message("c", "b", "user", "C")],
    )  # fmt: skip
    index.sync()
    assert [row.id for row in index.branch("tree")] == ["r", "b", "c"]
    assert [row.id for row in index.branch("tree", "a")] == ["r", "a"]
    tree = index.tree("tree")
    assert tree.roots == ["r"]
    assert tree.children["r"] == ["a", "b"]
    assert sorted(tree.leaves) == ["a", "c"]
    assert tree.branch_points == ["r"]
    with pytest.raises(EntryNotFoundError):
        index.branch("tree", "nope")
    entries = index.branch_entries("tree", "a")
    assert [entry["message"]["content"][0]["text"] for entry in entries] == ["root", "A"]


def test_search_filters_and_ranking(agent_dir, index):
    folder = sessions_dir(agent_dir)
    write_session(
        folder / "x.jsonl",
        [header("x"), message("u1", None, "user", "deploy the kubernetes cluster"),
         message("a1", "u1", "assistant", "kubernetes kubernetes kubernetes is deployed")],
    )  # fmt: skip
    write_session(
        folder / "y.jsonl",
        [header("y", cwd="/elsewhere"), message("u1", None, "user", "kubernetes once")],
    )
    index.sync()
    hits = index.search("kubernetes")
    assert hits[0].entry_id == "a1" and hits[0].session_id == "x"
    assert {(hit.session_id, hit.entry_id) for hit in hits} == {
        ("x", "u1"),
        ("x", "a1"),
        ("y", "u1"),
    }
    assert [hit.entry_id for hit in index.search("kubernetes", role="user", cwd="/elsewhere")] == [
        "u1"
    ]
    assert [hit.session_id for hit in index.search("kube")] != []
    assert index.search("kubernetes -deployed", role="assistant") == []
    assert [hit.entry_id for hit in index.search('"deploy the"')] == ["u1"]
    assert [hit.model for hit in index.search("deployed")] == ["claude-test"]
    assert index.search("kubernetes", since="2099-01-01") == []
    assert index.on_active_branch(hits[0])


@pytest.mark.parametrize(
    "query",
    ['"', '"unbalanced', "a*", "AND", "OR NOT", "NEAR(a b)", "-", "--", "col:val", "^x", "(", ")",
     "'; DROP TABLE entries; --", "x OR 1=1", "\\", "\x00", "*", "{a b}", "a + b", "👍", ""],
)  # fmt: skip
def test_no_query_text_breaks_search(agent_dir, index, query):
    copy_fixtures(agent_dir)
    index.sync()
    if parse_search_query(query).terms:
        index.search(query)
    else:
        with pytest.raises(SearchQueryError):
            index.search(query)
    index.history_search(query)
    assert index.connection.execute("SELECT count(*) FROM entries").fetchall()[0][0] > 0


def test_query_parsing():
    assert parse_search_query("hello world").match == '"hello" AND "world"*'
    assert parse_search_query('"exact phrase" x').match == '"exact phrase" AND "x"*'
    assert parse_search_query('x "exact phrase"').match == '"x" AND "exact phrase"'
    assert parse_search_query("a -b -c").match == '("a"*) NOT "b" NOT "c"'
    assert parse_search_query('say "hi').match == '"say" AND "hi"'
    assert parse_search_query('a"b').match == '"a""b"*'
    assert parse_search_query("-only").match is None


def test_prefix_word_expands_to_its_common_completions():
    parsed = parse_search_query("deploy kube")
    assert parsed.expression(["kube", "kubernetes"]) == '"deploy" AND ("kube" OR "kubernetes")'
    assert parsed.expression([]) is None


def test_prefix_search_finds_completions(agent_dir, index):
    write_session(
        sessions_dir(agent_dir) / "p.jsonl",
        [header("p"), message("u1", None, "user", "Kubernetes rollout"),
         message("u2", "u1", "user", "Kübelet restart")],
    )  # fmt: skip
    index.sync()
    assert {hit.entry_id for hit in index.search("kub")} == {"u1", "u2"}
    assert [hit.snippet for hit in index.search("rollout kube")] == ["[Kubernetes] [rollout]"]


def test_usage_counts_each_entry_once(agent_dir, index):
    folder = sessions_dir(agent_dir)
    records = [
        header("orig"),
        message("u1", None, "user", "q"),
        message("a1", "u1", "assistant", "r"),
    ]
    write_session(folder / "orig.jsonl", records)
    fork_header = header("fork", timestamp="2026-02-01T00:00:00.000Z", parentSession="orig")
    fork = [fork_header, *records[1:], message("a2", "a1", "assistant", "more")]
    write_session(folder / "fork.jsonl", fork)
    index.sync()
    (by_model,) = index.usage(by="model")
    assert by_model.key == "anthropic/claude-test"
    assert (by_model.entries, by_model.input_tokens, round(by_model.cost, 6)) == (2, 20, 0.6)
    by_session = {row.key: row.entries for row in index.usage(by="session")}
    assert by_session == {"orig": 1, "fork": 1}
    assert sum(row.entries for row in index.usage(by="day")) == 2
    assert index.usage(by="month", since="2030-01-01") == []
    with pytest.raises(ValueError):
        index.usage(by="galaxy")


def test_history_is_mirrored_and_linked(agent_dir, index):
    import apsw

    folder = sessions_dir(agent_dir)
    write_session(
        folder / "h.jsonl", [header("hist"), message("u1", None, "user", "refactor the parser")]
    )
    history = apsw.Connection(str(agent_dir / "history.db"))
    history.execute(
        "CREATE TABLE history (id INTEGER PRIMARY KEY AUTOINCREMENT, prompt TEXT NOT NULL,"
        " created_at INTEGER NOT NULL DEFAULT (CAST(strftime('%s','now') AS INTEGER)), cwd TEXT)"
    )
    history.execute("INSERT INTO history (prompt, cwd) VALUES ('refactor the parser', '/w')")
    history.execute("INSERT INTO history (prompt, cwd) VALUES ('write more tests', '/w')")
    history.close()
    assert index.sync().history_mirrored == 2
    hits = index.history_search("refactor")
    assert [(hit.source, hit.session_id, hit.entry_id) for hit in hits] == [
        ("history", "hist", "u1")
    ]
    assert [hit.prompt for hit in index.history_recent(10)] == [
        "write more tests",
        "refactor the parser",
    ]
    assert index.sync().history_mirrored == 0


# --------------------------------------------------------------------------------------------
# Blobs


def _image_session(path: Path, session_id: str, ref: str) -> None:
    record = message("u1", None, "user", "look")
    record["message"]["content"].append({"type": "image", "data": ref})
    record["message"]["details"] = {"nested": [{"deep": {"image_url": ref}}]}
    write_session(path, [header(session_id), record])


def test_blob_refs_are_counted_at_any_depth(agent_dir, index):
    store = BlobStore(str(agent_dir / "blobs"))
    ref = store.put(b"image bytes").ref
    _image_session(sessions_dir(agent_dir) / "img.jsonl", "img", ref)
    index.sync()
    rows = index.connection.execute("SELECT hash, refcount FROM blobs").fetchall()
    assert rows == [(ref[12:], 1)]


def test_gc_dry_run_apply_and_grace(agent_dir, index):
    store = BlobStore(str(agent_dir / "blobs"))
    kept = store.put(b"referenced").ref
    orphan = store.put(b"orphan").hash
    fresh = store.put(b"fresh orphan").hash
    old = time.time() - 7200
    for digest in (kept[12:], orphan):
        os.utime(store.path_for(digest), (old, old))
    _image_session(sessions_dir(agent_dir) / "img.jsonl", "img", kept)
    dangling = "blob:sha256:" + "e" * 64
    _image_session(sessions_dir(agent_dir) / "dangling.jsonl", "dangling", dangling)
    dry = index.blob_gc()
    assert dry.candidates == [orphan]
    assert dry.kept_recent == 1
    assert dry.dangling == ["e" * 64]
    assert not dry.applied and store.has(orphan)
    applied = index.blob_gc(apply=True)
    assert applied.deleted == [orphan]
    assert not store.has(orphan)
    assert store.has(kept[12:]) and store.has(fresh)
    assert index.blob_gc(apply=True, grace=timedelta(0)).deleted == [fresh]
    assert store.has(kept[12:])


def test_gc_grace_counts_from_its_sync_not_from_the_collection(agent_dir, index, monkeypatch):
    """A line written after the GC's sync read its file is missing from the counts; its blob,
    stored just before, must survive however long the GC then takes (a slow sync, a wait for
    the lock) to get to the deleting."""
    store = BlobStore(str(agent_dir / "blobs"))
    path = sessions_dir(agent_dir) / "late.jsonl"
    write_session(path, [header("late"), message("u1", None, "user", "look")])
    late = store.put(b"stored just before the line that references it")
    sync = index._sync_locked  # what blob_gc syncs with, under the lock it holds

    def sync_then_a_late_line(*args, **kwargs):
        report = sync(*args, **kwargs)
        record = message("u2", "u1", "user", "and this")
        record["message"]["content"].append({"type": "image", "data": late.ref})
        with open(path, "ab") as handle:
            handle.write(json.dumps(record).encode() + b"\n")
        time.sleep(0.4)
        return report

    monkeypatch.setattr(index, "_sync_locked", sync_then_a_late_line)
    report = index.blob_gc(apply=True, grace=timedelta(seconds=0.2))
    assert report.applied and report.kept_recent == 1 and report.deleted == []
    assert store.has(late.hash)
    monkeypatch.undo()
    assert index.blob_gc(apply=True, grace=timedelta(0)).deleted == []
    assert index.connection.execute("SELECT refcount FROM blobs").fetchall() == [(1,)]


def test_gc_refuses_while_a_session_file_is_unreadable(agent_dir, index):
    store = BlobStore(str(agent_dir / "blobs"))
    orphan = store.put(b"maybe referenced").hash
    os.utime(store.path_for(orphan), (0, 0))
    loop = sessions_dir(agent_dir) / "loop.jsonl"
    loop.symlink_to(loop)
    report = index.blob_gc(apply=True)
    assert report.refused and "could not be read" in report.refused
    assert report.deleted == [] and store.has(orphan)


def test_gc_refuses_while_a_known_root_is_missing(agent_dir, index, tmp_path):
    extra = tmp_path / "extra-root"
    extra.mkdir()
    index.add_root(str(extra))
    store = BlobStore(str(agent_dir / "blobs"))
    orphan = store.put(b"maybe referenced elsewhere").hash
    os.utime(store.path_for(orphan), (0, 0))
    extra.rmdir()
    report = index.blob_gc(apply=True)
    assert report.refused and "missing" in report.refused
    assert store.has(orphan)


def test_removing_a_session_releases_its_blob_refs(agent_dir, index):
    store = BlobStore(str(agent_dir / "blobs"))
    ref = store.put(b"only here").ref
    path = sessions_dir(agent_dir) / "img.jsonl"
    _image_session(path, "img", ref)
    index.sync()
    path.unlink()
    index.sync()
    assert index.connection.execute("SELECT refcount FROM blobs").fetchall() == [(0,)]


# --------------------------------------------------------------------------------------------
# Verify, damage, compatibility


def test_verify_finds_and_repairs_differences(agent_dir, index, two_sessions):
    one, _two = two_sessions
    index.connection.execute("UPDATE entries SET parent_id = 'bogus' WHERE id = 'u1'")
    index.connection.execute("UPDATE blobs SET refcount = 5")
    index.connection.execute("DELETE FROM entries_fts")
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


def test_newer_schema_is_refused_clearly(agent_dir):
    with SessionIndex.open(str(agent_dir)) as index:
        index.connection.execute(
            "INSERT INTO schema_migrations VALUES ('9999_from_the_future', 'x', 'now')"
        )
    with pytest.raises(IndexDatabaseError, match="newer xcsh-store"):
        SessionIndex.open(str(agent_dir))


def test_read_only_index_refuses_writes(agent_dir, index, two_sessions):
    with SessionIndex.open(str(agent_dir), read_only=True) as reader:
        assert len(reader.list_sessions()) == 2
        with pytest.raises(IndexDatabaseError):
            reader.sync()


def test_index_is_readable_by_stdlib_sqlite3(agent_dir, index):
    copy_fixtures(agent_dir)
    index.sync()
    script = """
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
kinds = "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')"
tables = [row[0] for row in db.execute(kinds)]
counts = {t: db.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in tables}
match = "SELECT count(*) FROM entries_fts WHERE entries_fts MATCH 'compaction'"
hits = db.execute(match).fetchone()[0]
print(json.dumps({"version": sqlite3.sqlite_version, "counts": counts, "hits": hits}))
"""
    result = subprocess.run(
        [sys.executable, "-c", script, str(agent_dir / "index.db")],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    output = json.loads(result.stdout)
    assert output["counts"]["sessions"] == 31
    assert output["counts"]["usage_by_day"] > 0
    assert output["hits"] > 0


def test_gc_notices_blob_files_removed_or_added_behind_its_back(agent_dir, index):
    store = BlobStore(str(agent_dir / "blobs"))
    ref = store.put(b"referenced, then lost").ref
    _image_session(sessions_dir(agent_dir) / "img.jsonl", "img", ref)
    assert index.blob_gc().dangling == []
    os.unlink(store.path_for(ref[12:]))
    assert index.blob_gc().dangling == [ref[12:]]
    orphan = store.put(b"appeared later").hash
    os.utime(store.path_for(orphan), (0, 0))
    assert index.blob_gc().candidates == [orphan]
