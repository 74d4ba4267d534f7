"""Hostile and odd input, one test per row of the README's table: no crash, no hang, no valid
line lost, and a clear error where the store refuses."""

from __future__ import annotations

import os
from pathlib import Path

import apsw
import pytest
from session_builder import header, message, sessions_dir, write_session
from store_checks import (
    assert_store_survives,
    no_hang,
)

from xcsh_store import (
    SessionManager,
    get_recent_sessions,
    load_entries_from_file,
)
from xcsh_store.blobs import BlobStore
from xcsh_store.index import SessionIndex
from xcsh_store.index.db import connect
from xcsh_store.jsonl import dumps


@pytest.fixture
def two_messages(agent_dir: Path) -> Path:
    """A small valid session: a user prompt and an answer."""
    return write_session(
        sessions_dir(agent_dir) / "valid.jsonl",
        [
            header("valid"),
            message("u1", None, "user", "hello"),
            message("a1", "u1", "assistant", "hi"),
        ],
    )


# --------------------------------------------------------------------------------------------
# Files the kernel will not read like a file


def test_fifo_named_like_a_session_blob_or_breadcrumb_never_blocks(agent_dir, two_messages):
    folder = two_messages.parent
    fifo = folder / "fifo.jsonl"
    os.mkfifo(fifo)
    store = BlobStore(str(agent_dir / "blobs"))
    digest = "ab" * 32
    store_dir = Path(store.dir)
    store_dir.mkdir(parents=True, exist_ok=True)
    os.mkfifo(store_dir / digest)
    (agent_dir / "terminal-sessions").mkdir(parents=True, exist_ok=True)
    os.mkfifo(agent_dir / "terminal-sessions" / "pytest-terminal")
    with no_hang():
        assert [info.path for info in SessionManager.list_all()] == [str(two_messages)]
        assert [info.path for info in get_recent_sessions(str(folder))] == [str(two_messages)]
        with SessionManager.continue_recent("/work/demo", str(folder)) as manager:
            assert manager.get_session_file() == str(two_messages)
        for read in (SessionManager.open, load_entries_from_file):
            with pytest.raises(OSError, match="Not a regular file"):
                read(str(fifo))
        with pytest.raises(OSError, match="Not a regular file"):
            store.get(digest)
    assert fifo.exists(), "the FIFO was replaced"
    with no_hang():
        assert_store_survives(agent_dir, two_messages, ["u1", "a1"]).close()


# --------------------------------------------------------------------------------------------
# Lines


@pytest.mark.parametrize(
    ("cut", "valid"),
    [
        (b'{"type":"message","id":"zz","parentId":"a1","mess', ["u1", "a1"]),
        (b"{", ["u1", "a1"]),
        (b'{"type":"custom","id":"c1","parentId":"a1","customType":"x"}', ["u1", "a1", "c1"]),
    ],
    ids=["cut-json", "one-brace", "whole-object-without-newline"],
)
def test_a_last_line_cut_by_a_crash_is_not_glued_to_the_next_append(
    agent_dir, two_messages, cut, valid
):
    """A SIGKILL or a full disk in the middle of an append leaves a line without its newline;
    the next session to open the file must not write its first entry onto that line."""
    with open(two_messages, "ab") as handle:
        handle.write(cut)
    assert_store_survives(agent_dir, two_messages, valid).close()
    assert two_messages.read_bytes().count(cut + b"\n") == 1, "the cut line was not ended"


def test_lone_surrogates_are_kept_in_the_file_and_indexed_as_replacement_characters(agent_dir):
    path = sessions_dir(agent_dir) / "surrogates.jsonl"
    path.write_bytes(
        b'{"type":"session","version":3,"id":"sur","timestamp":"2026-01-01T00:00:00.000Z",'
        b'"cwd":"/work/\\udc80demo","title":"half \\ud83d"}\n'
        + dumps(message("u1", None, "user", "PLACEHOLDER")).replace(b"PLACEHOLDER", b"a\\ud800b")
        + b"\n"
        + dumps(message("a1", "u1", "assistant", "answer"))
        + b"\n"
    )
    with SessionManager.open(str(path)) as manager:
        manager.append_message({"role": "user", "content": "python text \udcff here"})
    index = assert_store_survives(agent_dir, path, ["u1", "a1"])
    with index:
        session = index.find_session("sur")
        assert session.title == "half \ufffd" and session.cwd == "/work/\ufffddemo"
        assert [hit.snippet for hit in index.search("python")] == ["[python] text \ufffd here"]
        assert index.search("a\ufffdb")[0].entry_id == "u1"
    assert b"a\\ud800b" in path.read_bytes(), "the escape was not written back as it was"


def test_file_names_that_are_not_utf8_are_reported_not_fatal(agent_dir, two_messages):
    odd = os.path.join(os.fsencode(two_messages.parent), b"odd-\xff.jsonl")
    with open(odd, "wb") as handle:
        handle.write(two_messages.read_bytes())
    with SessionIndex.open(str(agent_dir)) as index:
        report = index.sync()
        assert [session.path for session in index.list_sessions()] == [str(two_messages)]
        (reason,) = report.unreadable.values()
        assert "not valid UTF-8" in reason
        gc = index.blob_gc(apply=True)
        assert gc.refused, "GC must not run while a session file cannot be indexed"
    assert len(SessionManager.list_all()) == 2


# --------------------------------------------------------------------------------------------
# SQL


WRITING_STATEMENTS = [
    "INSERT INTO meta (key, value) VALUES ('owned', 'yes')",
    "UPDATE files SET size = 0",
    "DELETE FROM entries",
    "DROP TABLE sessions",
    "CREATE TABLE evil (x)",
    "CREATE INDEX evil ON files (size)",
    "INSERT INTO entries_fts (entries_fts) VALUES ('delete-all')",
    "PRAGMA query_only = OFF; DELETE FROM files",
    "PRAGMA writable_schema = ON; UPDATE sqlite_master SET sql = ''",
    "PRAGMA user_version = 7",
    "PRAGMA journal_mode = DELETE",
    "VACUUM",
    "REINDEX",
    "ANALYZE",
    "VACUUM INTO '{outside}/copy.db'",
    "ATTACH '{outside}/attached.db' AS other",
    "ATTACH 'file:{outside}/uri.db?mode=rwc' AS other",
    "SELECT load_extension('{outside}/evil')",
]


@pytest.mark.parametrize("statement", WRITING_STATEMENTS)
def test_a_read_only_connection_refuses_every_write(agent_dir, two_messages, tmp_path, statement):
    """What the ``sql`` verb opens: nothing a query says may change index.db or create a file."""
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync()
        index.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    outside = tmp_path / "outside"
    outside.mkdir()
    database = agent_dir / "index.db"
    before = database.read_bytes()
    connection = connect(str(database), read_only=True)
    try:
        with pytest.raises(apsw.Error):
            connection.execute(statement.format(outside=outside)).fetchall()
        assert connection.execute("SELECT count(*) FROM sessions").fetchall() == [(1,)]
    finally:
        connection.close()
    assert database.read_bytes() == before
    assert list(outside.iterdir()) == [], "a read-only query created a file"
