"""Hostile and odd input, one test per row of the README's table: no crash, no hang, no valid
line lost, and a clear error where the store refuses."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import threading
import time
from datetime import timedelta
from pathlib import Path

import apsw
import pytest
from click.testing import CliRunner, Result
from fuzzing import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from manager_helpers import assistant, user
from session_builder import (
    copy_fixtures,
    header,
    message,
    random_tree_session,
    sessions_dir,
    write_session,
)
from store_checks import (
    assert_index_matches_files,
    assert_store_survives,
    blob_files_are_whole,
    entry_ids,
    fill_disk,
    hand_over,
    no_hang,
    run_python,
    tree_ids,
)

from xcsh_store import (
    AgentOutputManager,
    HistoryError,
    HistoryStorage,
    PersistenceError,
    SessionManager,
    get_recent_sessions,
    load_entries_from_file,
)
from xcsh_store.cli import cli
from xcsh_store.errors import IndexDatabaseError, SearchQueryError, SessionNotFoundError
from xcsh_store.format import jsonl, loader
from xcsh_store.format.blobs import BlobStore
from xcsh_store.format.storage import FileSessionStorage, FileSessionStorageWriter
from xcsh_store.index import SessionIndex
from xcsh_store.index.db import connect
from xcsh_store.index.read.search import SEARCH_ROLES, parse_search_query
from xcsh_store.js import stringify as dumps
from xcsh_store.session.discovery import resolve_resumable_session


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


def _index_at_rest(agent_dir: Path, tmp_path: Path) -> tuple[Path, bytes]:
    """Sync and checkpoint index.db; returns an empty folder a query may try to write into
    and the index's bytes, which nothing read-only may change."""
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync()
        index.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    outside = tmp_path / "outside"
    outside.mkdir()
    return outside, (agent_dir / "index.db").read_bytes()


@pytest.mark.parametrize("statement", WRITING_STATEMENTS)
def test_a_read_only_connection_refuses_every_write(agent_dir, two_messages, tmp_path, statement):
    """What the ``sql`` verb opens: nothing a query says may change index.db or create a file."""
    outside, before = _index_at_rest(agent_dir, tmp_path)
    database = agent_dir / "index.db"
    connection = connect(str(database), read_only=True)
    try:
        with pytest.raises(apsw.Error):
            connection.execute(statement.format(outside=outside)).fetchall()
        assert connection.execute("SELECT count(*) FROM sessions").fetchall() == [(1,)]
    finally:
        connection.close()
    assert database.read_bytes() == before
    assert list(outside.iterdir()) == [], "a read-only query created a file"


# --------------------------------------------------------------------------------------------
# A full disk


class ShortWriteStorage(FileSessionStorage):
    """The file system with a byte budget: a write past it is cut short and fails with ENOSPC,
    as on a full disk. Used where the machine does not let the tests mount a tmpfs."""

    def __init__(self, budget: int) -> None:
        self.budget = budget

    def open_writer(self, path: str, flags: str = "a") -> FileSessionStorageWriter:
        storage = self

        class Writer(FileSessionStorageWriter):
            def write_line(self, line: str | bytes) -> None:
                data = line.encode() if isinstance(line, str) else line
                allowed = max(0, storage.budget)
                storage.budget -= len(data)
                if len(data) <= allowed:
                    super().write_line(data)
                    return
                if allowed:
                    super().write_line(data[:allowed])
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        return Writer(path, flags)


def _appends_until_the_disk_is_full(manager: SessionManager) -> list[str]:
    """Flushed appends of ~20 KB until persistence fails; the ids that were acknowledged."""
    acknowledged = [manager.append_message(assistant())]
    manager.flush()
    with pytest.raises(PersistenceError, match="No space left on device"):
        for number in range(10_000):
            entry_id = manager.append_message(user(f"{number} " + "x" * 20_000))
            manager.flush()
            acknowledged.append(entry_id)
    with pytest.raises(PersistenceError):
        manager.append_message(user("refused: the error is latched"))
    return acknowledged


def _continues_once_space_is_freed(manager: SessionManager, acknowledged: list[str]) -> None:
    """Reopened after space was freed, the session takes appends and keeps every flushed one."""
    path = manager.get_session_file()
    assert path is not None
    manager.set_session_file(path)
    later = manager.append_message(user("after space was freed"))
    manager.close()
    found = entry_ids(path)
    assert [entry for entry in found if entry in acknowledged] == acknowledged
    assert found[-1] == later


def test_full_disk_while_appending_loses_no_acknowledged_entry(small_disk):
    manager = SessionManager.create("/work/full")
    acknowledged = _appends_until_the_disk_is_full(manager)
    found = entry_ids(manager.get_session_file())
    assert [entry for entry in found if entry in acknowledged] == acknowledged
    small_disk.grow(8192)
    _continues_once_space_is_freed(manager, acknowledged)


def test_short_writes_of_a_full_disk_lose_no_acknowledged_entry(tmp_path):
    storage = ShortWriteStorage(budget=300_000)
    manager = SessionManager.create("/work/full", str(tmp_path / "sessions"), storage)
    acknowledged = _appends_until_the_disk_is_full(manager)
    written = Path(manager.get_session_file()).read_bytes()
    assert not written.endswith(b"\n"), "the last write was not cut short"
    storage.budget = 10**9
    _continues_once_space_is_freed(manager, acknowledged)


def test_full_disk_while_indexing_is_a_clear_error_and_sync_resumes(small_disk):
    agent = Path(os.environ["XCSH_AGENT_DIR"])
    copy_fixtures(agent, max_bytes=200_000)
    with SessionIndex.open(str(agent)) as index:
        filler = fill_disk(small_disk.path)
        os.truncate(filler, filler.stat().st_size - 100_000)  # less than the index needs
        with pytest.raises(IndexDatabaseError, match="is full"):
            index.sync()
    small_disk.grow(32768)
    assert_index_matches_files(agent).close()


def test_full_disk_for_history_is_a_clear_error_and_keeps_earlier_prompts(small_disk):
    with HistoryStorage.open() as history:
        history.add("before the disk filled up")
        history.flush()
        filler = fill_disk(small_disk.path)
        for number in range(2000):
            history.add(f"prompt {number} " + "y" * 200)
        with pytest.raises(HistoryError):
            history.flush()
        filler.unlink()
        history.add("after space was freed")
        history.flush()
        prompts = [entry.prompt for entry in history.get_recent(1000)]
    assert prompts[0] == "after space was freed"
    assert prompts[-1] == "before the disk filled up"


def test_full_disk_for_blobs_leaves_no_partial_or_temp_file(small_disk):
    store = BlobStore(str(Path(os.environ["XCSH_AGENT_DIR"]) / "blobs"))
    kept = store.put(b"stored before").hash
    filler = fill_disk(small_disk.path)
    with pytest.raises(OSError, match="No space left"):
        store.put(os.urandom(200_000))
    assert os.listdir(store.dir) == [kept]
    filler.unlink()
    stored = store.put(b"x" * 200_000).hash
    assert sorted(os.listdir(store.dir)) == sorted([kept, stored])
    assert blob_files_are_whole(Path(store.dir)) == []


# --------------------------------------------------------------------------------------------
# Files and folders that cannot be read (as root, the reading runs as ``nobody``)

READ_EVERYTHING = """
import json, sys
from xcsh_store import SessionManager
from xcsh_store.index import SessionIndex
found = {"listed": sorted(info.path for info in SessionManager.list_all())}
with SessionIndex.open() as index:
    report = index.sync()
    found["unreadable"] = sorted(report.unreadable)
    found["indexed"] = sorted(session.path for session in index.list_sessions())
    found["hits"] = sorted(hit.session_id for hit in index.search("hello"))
    found["gc_refused"] = index.blob_gc(apply=True).refused
    found["clean"] = index.verify().clean
try:
    SessionManager.open(sys.argv[1])
    found["open"] = "opened"
except OSError as error:
    found["open"] = str(error)
print(json.dumps(found))
"""


def _two_sessions(agent: Path, folder: str) -> tuple[Path, Path]:
    project = agent / "sessions" / folder
    return tuple(  # type: ignore[return-value]
        write_session(
            project / f"{name}.jsonl", [header(name), message("u1", None, "user", "hello")]
        )
        for name in ("one", "two")
    )


def test_an_unreadable_session_file_is_reported_skipped_and_never_replaced(shared_agent_dir):
    readable = _two_sessions(shared_agent_dir, "--open--")[0]
    secret = _two_sessions(shared_agent_dir, "--closed--")[1]
    content = secret.read_bytes()
    hand_over(shared_agent_dir)
    secret.chmod(0)
    found = json.loads(run_python(READ_EVERYTHING, shared_agent_dir, str(secret)))
    others = sorted(str(path) for path in shared_agent_dir.glob("sessions/*/*.jsonl"))
    assert found["listed"] == [path for path in others if path != str(secret)]
    assert found["unreadable"] == [str(secret)]
    assert str(readable) in found["indexed"] and str(secret) not in found["indexed"]
    assert "could not be read" in found["gc_refused"]
    assert "Permission denied" in found["open"]
    secret.chmod(0o600)
    assert secret.read_bytes() == content, "the unreadable file was changed"
    assert not list(secret.parent.glob("*.invalid-*")), "the unreadable file was moved aside"
    found = json.loads(run_python(READ_EVERYTHING, shared_agent_dir, str(secret)))
    assert found["indexed"] == others and found["clean"] and found["gc_refused"] is None


def test_an_unreadable_folder_keeps_its_sessions_in_the_index(shared_agent_dir):
    closed = _two_sessions(shared_agent_dir, "--closed--")
    _two_sessions(shared_agent_dir, "--open--")
    hand_over(shared_agent_dir)
    everything = sorted(str(path) for path in shared_agent_dir.glob("sessions/*/*.jsonl"))
    assert (
        json.loads(run_python(READ_EVERYTHING, shared_agent_dir, str(closed[0])))["indexed"]
        == everything
    )
    closed[0].parent.chmod(0)
    try:
        found = json.loads(run_python(READ_EVERYTHING, shared_agent_dir, str(closed[0])))
    finally:
        closed[0].parent.chmod(0o700)
    assert found["unreadable"] == [str(closed[0].parent)]
    assert found["indexed"] == everything, "sessions of an unreadable folder were dropped"
    assert found["hits"] == ["one", "one", "two", "two"]
    assert "could not be read" in found["gc_refused"]
    assert "Permission denied" in found["open"]


# --------------------------------------------------------------------------------------------
# Odd lines (each test: the loader, the index and the manager keep every valid entry)


def _line(record: dict) -> bytes:
    return dumps(record) + b"\n"


def _raw_session(agent_dir: Path, name: str, *lines: bytes) -> Path:
    """A session file of a header and exactly the given bytes."""
    path = sessions_dir(agent_dir) / f"{name}.jsonl"
    path.write_bytes(_line(header(name)) + b"".join(lines))
    return path


U1 = message("u1", None, "user", "hello there")
A1 = message("a1", "u1", "assistant", "general kenobi")
A2 = message("a2", "a1", "user", "glued after")


def test_malformed_lines_are_skipped_and_every_valid_line_kept(agent_dir):
    path = _raw_session(
        agent_dir,
        "malformed",
        b"{oops\n",
        _line(U1),
        b'not json at all\n[1, 2, 3]\n"a string"\n42\nnull\n}\n{"open": "string\n',
        b"   \n\n\t\n",
        _line(A1),
        b'{"type":"message","id":"zz","parentId":"a1","message":{"role":"user","content":"cu',
    )
    assert_store_survives(agent_dir, path, ["u1", "a1"]).close()


def test_glued_objects_on_one_line_are_all_kept(agent_dir):
    path = _raw_session(
        agent_dir, "glued", dumps(U1) + dumps(A1) + b"\n", dumps(A2) + b"  trailing junk\n"
    )
    with assert_store_survives(agent_dir, path, ["u1", "a1", "a2"]) as index:
        assert [row.id for row in index.branch("glued", "a2")] == ["u1", "a1", "a2"]


def test_a_leading_bom_is_skipped_and_byte_offsets_stay_right(agent_dir):
    path = sessions_dir(agent_dir) / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + _line(header("bom")) + _line(U1) + _line(A1))
    with assert_store_survives(agent_dir, path, ["u1", "a1"]) as index:
        assert [entry["id"] for entry in index.branch_entries("bom", "a1")] == ["u1", "a1"]


def test_nul_bytes_make_only_their_line_malformed_and_escaped_nuls_are_data(agent_dir):
    escaped = message("n1", "a1", "user", "PLACEHOLDER")
    path = _raw_session(
        agent_dir,
        "nul",
        _line(U1),
        b'{"type":"message",\x00"id":"raw"}\n',
        _line(A1),
        _line(escaped).replace(b"PLACEHOLDER", b"beforenul\\u0000afternul"),
    )
    with assert_store_survives(agent_dir, path, ["u1", "a1", "n1"]) as index:
        assert [hit.entry_id for hit in index.search("afternul")] == ["n1"]


def test_invalid_utf8_becomes_replacement_characters_and_the_line_is_kept(agent_dir):
    odd = message("x1", "a1", "user", "PLACEHOLDER")
    path = _raw_session(
        agent_dir,
        "utf8",
        _line(U1),
        _line(A1),
        _line(odd).replace(b"PLACEHOLDER", b"caf\xe9 \xff\xfe latte \xc3"),
    )
    with assert_store_survives(agent_dir, path, ["u1", "a1", "x1"]) as index:
        (hit,) = index.search("latte")
        assert hit.entry_id == "x1" and "\ufffd" in hit.snippet


@pytest.mark.slow
def test_a_100_mb_line_loads_indexes_and_takes_appends(agent_dir):
    huge = message("h1", "a1", "user", "PLACEHOLDER")
    text = b"needle " + b"a" * (100 * 1024 * 1024) + b" haystack"
    path = _raw_session(
        agent_dir, "huge", _line(U1), _line(A1), _line(huge).replace(b"PLACEHOLDER", text)
    )
    assert path.stat().st_size > 100 * 1024 * 1024
    with assert_store_survives(agent_dir, path, ["u1", "a1", "h1"]) as index:
        assert [hit.entry_id for hit in index.search("needle")] == ["h1"]


def test_a_long_line_is_read_in_time_linear_in_its_length(agent_dir, monkeypatch):
    """Read in 4 KiB chunks, a 16 MiB line is 4096 chunks: gluing each one onto the piece
    before (as the readers once did) copies 34 GB and takes minutes."""
    for module in (jsonl, loader):
        monkeypatch.setattr(module, "READ_CHUNK", 4096)
    long_entry = message("l1", "a1", "user", "PLACEHOLDER")
    text = b"start " + b"b" * (16 << 20) + b" end"
    path = _raw_session(
        agent_dir, "long", _line(U1), _line(A1), _line(long_entry).replace(b"PLACEHOLDER", text)
    )
    with no_hang():
        assert entry_ids(path) == ["u1", "a1", "l1"]
        with SessionIndex.open(str(agent_dir)) as index:
            index.sync()
            assert [hit.entry_id for hit in index.search("start")] == ["l1"]


def _deep(depth: int) -> list:
    """``[[[...]]]`` nested ``depth`` times, built without recursion."""
    root: list = []
    current = root
    for _ in range(depth - 1):
        inner: list = []
        current.append(inner)
        current = inner
    return root


def test_10000_deep_nesting_loads_indexes_and_round_trips(agent_dir):
    deep_line = (
        b'{"type":"message","id":"d1","parentId":"a1","timestamp":"2026-01-01T00:00:00.000Z",'
        b'"message":{"role":"assistant","content":[{"type":"toolCall","name":"t","arguments":'
        + b"[" * 10_000 + b"]" * 10_000 + b'}],"extra":' + b'{"a":' * 10_000 + b"1"
        + b"}" * 10_000 + b"}}\n"
    )  # fmt: skip
    path = _raw_session(agent_dir, "deep", _line(U1), _line(A1), deep_line)
    assert_store_survives(agent_dir, path, ["u1", "a1", "d1"]).close()
    with SessionManager.open(str(path)) as manager:
        manager.append_custom_entry("deep", _deep(10_000))
        manager.set_session_name("rewritten whole")
    reloaded = load_entries_from_file(str(path))
    assert dumps(reloaded[-1]["data"]) == dumps(_deep(10_000))
    assert dumps(reloaded[3]) + b"\n" == deep_line, "a deep entry changed when rewritten"


def test_parent_cycles_never_hang_a_walk(agent_dir):
    path = _raw_session(
        agent_dir,
        "cycle",
        _line(message("a", "b", "user", "one")),
        _line(message("b", "a", "assistant", "two")),
        _line(message("c", "c", "user", "self")),
        _line(message("d", "c", "assistant", "after the self loop")),
    )
    with no_hang():
        assert_store_survives(agent_dir, path, ["a", "b", "c", "d"]).close()
        with SessionManager.open(str(path)) as manager:
            ids = tree_ids(manager)
            assert sorted(ids) == sorted({entry["id"] for entry in manager.get_entries()})
            assert [entry["id"] for entry in manager.get_branch("b")] == ["a", "b"]
            assert [entry["id"] for entry in manager.get_branch("d")] == ["c", "d"]


def test_duplicate_ids_the_later_line_wins_everywhere(agent_dir):
    first = message("x", "u1", "assistant", "first version")
    second = message("x", "u1", "assistant", "second version")
    path = _raw_session(agent_dir, "dup", _line(U1), _line(first), _line(second))
    with assert_store_survives(agent_dir, path, ["u1", "x", "x"]) as index:
        assert [hit.snippet for hit in index.search("version")] == ["second [version]"]
    with SessionManager.open(str(path)) as manager:
        assert manager.get_entry("x")["message"]["content"][0]["text"] == "second version"


def test_missing_parents_make_an_entry_a_root(agent_dir):
    orphan = message("o1", "ghost", "user", "my parent is gone")
    path = _raw_session(agent_dir, "orphan", _line(U1), _line(A1), _line(orphan))
    with assert_store_survives(agent_dir, path, ["u1", "a1", "o1"]) as index:
        assert sorted(index.tree("orphan").roots) == ["o1", "u1"]
        assert [row.id for row in index.branch("orphan", "o1")] == ["o1"]
    with SessionManager.open(str(path)) as manager:
        assert sorted(node.entry["id"] for node in manager.get_tree()) == ["o1", "u1"]


def _with_image(entry_id: str, parent: str, ref: str) -> dict:
    record = message(entry_id, parent, "user", "see the picture")
    record["message"]["content"].append({"type": "image", "data": ref, "mimeType": "image/png"})
    return record


def test_dangling_blob_refs_are_kept_reported_and_never_fatal(agent_dir, caplog):
    missing = "f" * 64
    path = _raw_session(
        agent_dir, "dangling", _line(U1), _line(_with_image("i1", "u1", f"blob:sha256:{missing}"))
    )
    with assert_store_survives(agent_dir, path, ["u1", "i1"]) as index:
        assert index.blob_gc().dangling == [missing]
    with SessionManager.open(str(path)) as manager:
        image = manager.get_entry("i1")["message"]["content"][1]
        assert image["data"] == f"blob:sha256:{missing}"
    assert "Blob not found" in caplog.text


@pytest.mark.parametrize(
    "ref",
    [
        "blob:sha256:../../secret",
        "blob:sha256:../blobs/" + "a" * 64,
        "blob:sha256:" + "A" * 64,
        "blob:sha256:" + "a" * 63,
        "blob:sha256:" + "a" * 64 + "/../../secret",
        "blob:sha256:/etc/passwd",
    ],
)
def test_malformed_blob_refs_never_read_a_file(agent_dir, ref):
    (agent_dir / "secret").parent.mkdir(parents=True, exist_ok=True)
    (agent_dir / "secret").write_text("SECRET")
    path = _raw_session(agent_dir, "refs", _line(U1), _line(_with_image("i1", "u1", ref)))
    with assert_store_survives(agent_dir, path, ["u1", "i1"]) as index:
        assert index.connection.execute("SELECT count(*) FROM blob_refs").fetchall() == [(0,)]
        report = index.blob_gc(apply=True, grace=timedelta(0))
        assert report.dangling == [] and report.deleted == []
        assert "SECRET" not in str(index.branch_entries("refs", "i1"))
    with SessionManager.open(str(path)) as manager:
        assert manager.get_entry("i1")["message"]["content"][1]["data"] == ref
    assert (agent_dir / "secret").read_text() == "SECRET"


def test_symlink_loops_under_sessions_end_every_walk(agent_dir, two_messages):
    sessions = agent_dir / "sessions"
    (sessions / "--loop--").symlink_to(sessions)
    (two_messages.parent / "inner-loop").symlink_to(two_messages.parent)
    (two_messages.parent / "self.jsonl").symlink_to(two_messages.parent / "self.jsonl")
    (two_messages.parent / "a.jsonl").symlink_to(two_messages.parent / "b.jsonl")
    (two_messages.parent / "b.jsonl").symlink_to(two_messages.parent / "a.jsonl")
    with no_hang():
        assert [info.path for info in SessionManager.list_all()] == [str(two_messages)]
        with SessionIndex.open(str(agent_dir)) as index:
            report = index.sync()
            assert [session.path for session in index.list_sessions()] == [str(two_messages)]
            assert len(report.unreadable) == 3  # self.jsonl, a.jsonl, b.jsonl: ELOOP
            assert index.blob_gc(apply=True).refused
        with pytest.raises(OSError):
            SessionManager.open(str(two_messages.parent / "self.jsonl"))


def test_a_line_of_millions_of_brackets_is_skipped_without_hanging(agent_dir):
    """Nesting far deeper than JSON.parse allows (it stops near 10,000) is garbage: reading
    it must neither build millions of lists nor take minutes."""
    path = _raw_session(
        agent_dir, "brackets", b"[" * 2_000_000 + b"\n", _line(U1), b'{"a":' * 500_000 + b"\n"
    )
    with no_hang():
        assert_store_survives(agent_dir, path, ["u1"]).close()


# --------------------------------------------------------------------------------------------
# Files that change while a sync reads them


def test_a_file_deleted_in_the_middle_of_a_sync(agent_dir):
    paths = [
        random_tree_session(sessions_dir(agent_dir) / f"s{number}.jsonl", number)
        for number in range(4)
    ]
    victim = paths[2]

    def delete_just_before_reading(done: int, total: int, path: str) -> None:
        if path == str(victim) and victim.exists():
            victim.unlink()

    with SessionIndex.open(str(agent_dir)) as index:
        report = index.sync(progress=delete_just_before_reading)
        assert not victim.exists()
        assert sorted(session.path for session in index.list_sessions()) == sorted(
            str(path) for path in paths if path != victim
        )
        # Reported, so a GC in the same run refuses; the next sync finds the file gone.
        assert report.unreadable.keys() == {str(victim)}
        assert index.sync().files_removed == 1
    assert_index_matches_files(agent_dir).close()


def test_a_file_truncated_while_a_sync_reads_it(agent_dir):
    big = sessions_dir(agent_dir) / "big.jsonl"
    records = [header("big")] + [
        message(f"m{number:05d}", f"m{number - 1:05d}" if number else None, "user", "z" * 2000)
        for number in range(15_000)
    ]
    write_session(big, records)
    random_tree_session(sessions_dir(agent_dir) / "other.jsonl", 7)
    size = big.stat().st_size

    def truncate_soon(done: int, total: int, path: str) -> None:
        if path == str(big):
            threading.Timer(0.01, os.truncate, (big, size // 3)).start()

    with SessionIndex.open(str(agent_dir)) as index:
        index.sync(progress=truncate_soon)
        time.sleep(0.05)
        assert big.stat().st_size == size // 3
    assert_index_matches_files(agent_dir).close()


# --------------------------------------------------------------------------------------------
# Names that try to leave the agent dir


@pytest.mark.parametrize(
    "name", ["../../escape", "..", ".", "/etc/evil", "a/../../b", "a\\..\\b", "nul\0byte", ""]
)
def test_artifact_and_agent_output_names_cannot_leave_the_folder(agent_dir, tmp_path, name):
    before = set(tmp_path.rglob("*"))
    with SessionManager.create("/work/names") as manager:
        manager.append_message(assistant())
        with pytest.raises(ValueError, match="invalid"):
            manager.save_artifact("content", name)
        with pytest.raises(ValueError, match="invalid"):
            manager.allocate_artifact_path(name)
        assert manager.get_artifact_path(name) is None
        outputs = AgentOutputManager(manager.get_artifacts_dir)
        with pytest.raises(ValueError, match="invalid"):
            outputs.allocate(name)
    created = {path for path in set(tmp_path.rglob("*")) - before if path.is_file()}
    assert all(agent_dir in path.parents for path in created), created


@pytest.mark.parametrize(
    "query",
    ["../../etc/passwd", "/etc/passwd", "..", "%", "_", "%valid%", "*", "'; DROP TABLE files; --",
     "valid' OR '1'='1", "\0", "../" * 40 + "etc/passwd", "~/.ssh/id_rsa"],
)  # fmt: skip
def test_session_lookups_only_ever_find_indexed_sessions(agent_dir, two_messages, query):
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync()
        with pytest.raises(SessionNotFoundError):
            index.find_session(query)
        assert index.connection.execute("SELECT count(*) FROM files").fetchall() == [(1,)]
    assert resolve_resumable_session(query, "/work/demo") is None


def test_a_session_id_shaped_like_a_path_never_names_a_file(agent_dir, tmp_path):
    path = write_session(
        sessions_dir(agent_dir) / "odd-id.jsonl",
        [header("../../../escaped"), message("u1", None, "user", "hi"),
         message("a1", "u1", "assistant", "hello")],
    )  # fmt: skip
    before = set(tmp_path.rglob("*"))
    with SessionManager.open(str(path)) as manager:
        forked = manager.fork()
        assert forked is not None
        manager.create_branched_session("a1")
        manager.new_session()
        manager.append_message(assistant())
    created = set(tmp_path.rglob("*")) - before
    assert created and all(agent_dir in item.parents for item in created), created
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync()
        assert index.find_session("../../../escaped").path == str(path)


# --------------------------------------------------------------------------------------------
# Search boxes

SEARCH_TEXT = [
    '"', '"unbalanced', "a*", "*", "AND", "OR NOT", "NEAR(a b)", "NEAR/2", "-", "--", "- -x",
    "col:val", "text:hello", "{text}: hello", "^hello", "(", ")", "((hello", "hello)", "\\",
    "\0", "hello\0world", "'; DROP TABLE entries; --", "x' OR 1=1 --", '" OR ""="', "%", "_",
    "%hello%", "[a-z]", "👍", "\u202e", "e\u0301", "hello" * 500, "a" * 10_000, " ", "",
    "MATCH 'x'", "rowid:1", "hello AND OR", "\ud800", "a\udfffb",
]  # fmt: skip


@pytest.mark.parametrize("text", SEARCH_TEXT)
def test_no_text_in_any_search_box_is_syntax_or_sql(agent_dir, two_messages, text):
    """Index search (and each of its filters), find_session, prompt recall in the index, and
    HistoryStorage search and its filters: a result or nothing, never an SQL or FTS5 error (a
    search without any word, or of an unknown role, is refused as such)."""
    with HistoryStorage.open() as history:
        history.add("hello from the history")
        history.flush()
        history.search(text, 10)
        history.search(text, 10, order="rank")
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync()
        rows = index.connection.execute("SELECT count(*) FROM entries").fetchall()
        _search_or_refused(index, text)
        for name in ("cwd", "project", "model", "since", "until"):
            assert index.search("hello", **{name: text}) == [] or name in ("since", "until")
        _search_or_refused(index, "hello", role=text)
        index.history_search(text)
        index.list_sessions(cwd=text, project=text)
        index.usage(since=text, until=text)
        with pytest.raises(SessionNotFoundError):
            index.find_session(text + "\x01no-such-session")
        assert [hit.entry_id for hit in index.search("hello")] == ["u1"]
        assert index.connection.execute("SELECT count(*) FROM entries").fetchall() == rows


def _search_or_refused(index: SessionIndex, query: str, role: str | None = None) -> None:
    """Search; SearchQueryError exactly when the query has no word or the role is unknown."""
    roles = {known.casefold() for known in SEARCH_ROLES}
    if parse_search_query(query).terms and (role is None or role.casefold() in roles):
        index.search(query, role=role)
    else:
        with pytest.raises(SearchQueryError):
            index.search(query, role=role)


@settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
# Any code point, lone surrogates included (a JavaScript caller or a surrogate-escaped path).
@given(text=st.text(st.characters(exclude_categories=()), max_size=40))
def test_arbitrary_text_in_the_search_boxes_never_raises(agent_dir, two_messages, text):
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync()
        _search_or_refused(index, text)
        _search_or_refused(index, "hello", role=text)
        index.search("hello", cwd=text)
        index.history_search(text)
        with contextlib.suppress(SessionNotFoundError):
            index.find_session(text)


# --------------------------------------------------------------------------------------------
# The same through the command line: one-line errors, exit code 1, no traceback, no change


def _cli(agent_dir: Path, *arguments: str) -> Result:
    return CliRunner().invoke(cli, ["--agent-dir", str(agent_dir), *arguments])


def _refused_in_one_line(result: Result, text: str) -> None:
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith("Error: ") and text in result.stderr, result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.output


@pytest.mark.parametrize("statement", WRITING_STATEMENTS)
def test_the_sql_verb_refuses_every_write(agent_dir, two_messages, tmp_path, statement):
    outside, before = _index_at_rest(agent_dir, tmp_path)
    _refused_in_one_line(_cli(agent_dir, "sql", statement.format(outside=outside)), "")
    assert (agent_dir / "index.db").read_bytes() == before
    assert list(outside.iterdir()) == []


@pytest.mark.parametrize(
    "argument", ["../../etc/passwd", "/etc/passwd", "..", "%", "_", "'; DROP TABLE files; --"]
)
def test_show_and_cat_only_open_indexed_sessions(agent_dir, two_messages, argument):
    _cli(agent_dir, "sync")
    _refused_in_one_line(_cli(agent_dir, "show", argument), "No session matches")
    _refused_in_one_line(
        _cli(agent_dir, "cat", "artifact://0", "--session", argument), "No session matches"
    )
    for url in ("artifact://../../etc/passwd", "agent://..%2F..%2Fetc%2Fpasswd"):
        _refused_in_one_line(_cli(agent_dir, "cat", url, "--session", "valid"), "")


@pytest.mark.parametrize("text", ['"', "NEAR(a b", "'; DROP TABLE entries; --", "\\", "*", "-"])
def test_search_and_history_verbs_take_any_text(agent_dir, two_messages, text):
    _cli(agent_dir, "sync")
    for arguments in (("search", "--", text), ("history", "search", text)):
        result = _cli(agent_dir, *arguments)
        # Without any word (`"`, `*`, `-`) a session search is a usage error, said as such.
        refused = arguments[0] == "search" and not parse_search_query(text).terms
        assert result.exit_code == (2 if refused else 0), result.output
        assert "Traceback" not in result.output and ("Error: " in result.stderr) == refused
