"""Incremental sync: what a sync reads again after appends, partial lines, truncation,
rewrites, replacements, deletions, renames and a file growing while it is read."""

from __future__ import annotations

import json
import os
import time

import pytest
from session_builder import append, header, message, sessions_dir, write_session

from xcsh_store.errors import SessionNotFoundError
from xcsh_store.index import SessionIndex
from xcsh_store.index.db import transaction
from xcsh_store.index.write.indexer import drop_file_rows


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
