"""Listing sessions from what the listing shows: the same sessions and fields as the sessions
table says, in the same orders, with the fields the listing does not read there when asked for
(also after the index closed), and SQLite serving each order (and the sync's read of the files
table) from an index."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from session_builder import append, copy_fixtures, header, message, sessions_dir, write_session

from xcsh_store.errors import SessionNotFoundError
from xcsh_store.index import SessionIndex
from xcsh_store.index.read.sessions import FIRST_MESSAGE_LISTED, project_condition
from xcsh_store.index.write.scan import IndexedFiles
from xcsh_store.times import parse_iso

FIELDS = (
    "file_id", "session_id", "id", "path", "cwd", "project_dir", "title", "title_source",
    "parent_session_path", "version", "created", "modified", "entry_count", "message_count",
    "first_message", "last_entry_id", "input_tokens", "output_tokens", "cache_read_tokens",
    "cache_write_tokens", "premium_requests", "cost", "legacy", "id_shared",
)  # fmt: skip
_EPOCH = datetime.fromtimestamp(0, UTC)


def fields(session: Any) -> dict[str, Any]:
    return {name: getattr(session, name) for name in FIELDS}


def expected_fields(index: SessionIndex) -> dict[int, dict[str, Any]]:
    """Every session as the sessions and files tables hold it, turned into the listed fields
    as the listing always did (a title from the compaction when the header has none, and so
    on): read with a plain SELECT *, independent of the listing's queries."""
    connection = index.connection
    columns = [row[1] for row in connection.execute("PRAGMA table_info(sessions)")]
    legacy = dict(connection.execute("SELECT id, legacy FROM files").fetchall())
    ids = [row[0] for row in connection.execute("SELECT session_id FROM sessions")]
    found = {}
    for values in connection.execute("SELECT * FROM sessions").fetchall():
        row = dict(zip(columns, values, strict=True))
        found[row["file_id"]] = {
            "file_id": row["file_id"],
            "session_id": row["session_id"],
            "id": row["session_id"],
            "path": row["path"],
            "cwd": row["cwd"] or "",
            "project_dir": row["project_dir"],
            "title": row["title"] or row["compaction_title"],
            "title_source": row["title_source"],
            "parent_session_path": row["parent_session"],
            "version": row["version"],
            "created": parse_iso(row["created_at"]) if row["created_at"] else _EPOCH,
            "modified": parse_iso(row["modified_at"]) if row["modified_at"] else _EPOCH,
            "entry_count": row["entry_count"],
            "message_count": row["message_count"],
            "first_message": row["first_message"] or "(no messages)",
            "last_entry_id": row["last_entry_id"],
            "input_tokens": row["input_tokens"],
            "output_tokens": row["output_tokens"],
            "cache_read_tokens": row["cache_read_tokens"],
            "cache_write_tokens": row["cache_write_tokens"],
            "premium_requests": row["premium_requests"],
            "cost": row["cost"],
            "legacy": bool(legacy[row["file_id"]]),
            "id_shared": ids.count(row["session_id"]) > 1,
        }
    return found


@pytest.fixture
def varied(agent_dir, index):
    """The real fixture sessions (the smaller ones: their sizes do not matter here, their
    headers and first messages do), plus sessions with a long first message, a title, a
    compaction title only, no cwd, and two files sharing one session id."""
    copy_fixtures(agent_dir, max_bytes=400_000)
    folder = sessions_dir(agent_dir)
    long_text = "word " * FIRST_MESSAGE_LISTED
    write_session(folder / "long.jsonl", [header("long"), message("u1", None, "user", long_text)])
    edge = "x" * (FIRST_MESSAGE_LISTED - 1)
    write_session(folder / "edge.jsonl", [header("edge"), message("u1", None, "user", edge)])
    exact = "y" * FIRST_MESSAGE_LISTED
    write_session(folder / "exact.jsonl", [header("exact"), message("u1", None, "user", exact)])
    write_session(
        folder / "titled.jsonl",
        [header("titled", title="A title"), message("u1", None, "user", "hidden behind it")],
    )
    write_session(
        folder / "compacted.jsonl",
        [
            header("compacted"),
            message("u1", None, "user", "before the compaction"),
            {"type": "compaction", "id": "c1", "parentId": "u1", "summary": "s",
             "shortSummary": "From the compaction", "firstKeptEntryId": "u1",
             "tokensBefore": 10, "timestamp": "2026-01-01T00:09:00.000Z"},
        ],
    )  # fmt: skip
    nowhere = {key: value for key, value in header("nowhere").items() if key != "cwd"}
    write_session(folder / "nowhere.jsonl", [nowhere])
    twin = write_session(folder / "twin.jsonl", [header("twin"), message("u1", None, "user", "a")])
    shutil.copy(twin, agent_dir / "sessions" / "--fixtures--" / "twin-copy.jsonl")
    index.sync()
    return index


def test_every_listed_field_is_what_the_sessions_table_says(agent_dir, varied):
    expected = expected_fields(varied)
    listed = {session.file_id: fields(session) for session in varied.list_sessions()}
    assert listed == expected
    assert len(listed) == len(list(agent_dir.glob("sessions/*/*.jsonl")))


def test_a_lookup_gives_the_same_fields_as_the_listing(varied):
    for session in varied.list_sessions():
        assert fields(varied.find_session(session.path)) == fields(session)


def test_first_messages_are_whole_however_long_and_behind_a_title(varied):
    by_id = {session.session_id: session for session in varied.list_sessions()}
    assert by_id["long"].first_message == "word " * FIRST_MESSAGE_LISTED
    assert by_id["edge"].first_message == "x" * (FIRST_MESSAGE_LISTED - 1)
    assert by_id["exact"].first_message == "y" * FIRST_MESSAGE_LISTED
    assert by_id["titled"].first_message == "hidden behind it"
    assert by_id["compacted"].title == "From the compaction"
    assert by_id["nowhere"].first_message == "(no messages)"
    assert by_id["nowhere"].cwd == ""


def test_shared_ids_are_marked_on_both_files(varied):
    shared = {
        session.path.rsplit("/", 1)[1] for session in varied.list_sessions() if session.id_shared
    }
    assert {"twin.jsonl", "twin-copy.jsonl"} <= shared
    assert not {"titled.jsonl", "long.jsonl"} & shared


def _order_key(order: str):
    def key(item: dict[str, Any]) -> tuple[Any, ...]:
        if order == "title":
            title = (item["title"] or "").strip(" \t\n\r").lower() or None
            return (title is None, title or "", -item["modified"].timestamp(), item["file_id"])
        return (-item[order].timestamp(), item["file_id"])

    return key


@pytest.mark.parametrize("order", ["modified", "created", "title"])
def test_each_order_and_limit_is_the_full_list_sorted_then_cut(varied, order):
    everything = sorted(expected_fields(varied).values(), key=_order_key(order))
    listed = varied.list_sessions(order=order)
    if order != "title":  # SQLite's NOCASE folds ASCII only, as the listing always did
        assert [session.file_id for session in listed] == [item["file_id"] for item in everything]
    for limit in (0, 1, 5, len(listed), len(listed) + 3):
        cut = varied.list_sessions(order=order, limit=limit)
        assert [session.file_id for session in cut] == [s.file_id for s in listed[:limit]]


def test_a_cwd_or_project_listing_is_the_full_listing_filtered(varied):
    listed = varied.list_sessions()
    for cwd in {session.cwd for session in listed}:
        found = varied.list_sessions(cwd=cwd or None)
        if cwd:
            assert [s.file_id for s in found] == [s.file_id for s in listed if s.cwd == cwd]
    # A project: a folder and the folders inside it.
    cwds = {session.cwd for session in listed if session.cwd}
    for project in (cwds | {os.path.dirname(cwd) for cwd in cwds}) - {""}:
        found = varied.list_sessions(project=project, limit=3)
        assert [s.file_id for s in found] == [
            s.file_id
            for s in listed
            if s.cwd == project or s.cwd.startswith(project.rstrip("/") + "/")
        ][:3]


def test_listed_sessions_keep_every_field_after_the_index_closed(agent_dir, two_sessions):
    with SessionIndex.open(str(agent_dir), read_only=True) as reader:
        listed = reader.list_sessions()
        expected = {
            session.file_id: fields(reader.find_session(session.path)) for session in listed
        }
    assert {session.file_id: fields(session) for session in listed} == expected


def test_a_field_read_after_a_sync_removed_the_session_says_so(agent_dir, index, two_sessions):
    one, _two = two_sessions
    listed = {session.session_id: session for session in index.list_sessions()}
    one.unlink()
    index.sync()
    assert listed["one"].session_id == "one"  # read by the listing
    with pytest.raises(SessionNotFoundError, match="no longer indexed"):
        _ = listed["one"].path
    assert listed["two"].path.endswith("two.jsonl")


def test_fields_read_later_say_what_the_index_says_then(agent_dir, index, two_sessions):
    one, _two = two_sessions
    (listed,) = [session for session in index.list_sessions() if session.session_id == "one"]
    append(one, message("a1", "u1", "assistant", "later"))
    index.sync()
    assert listed.message_count == 1  # as listed
    assert listed.last_entry_id == "a1"  # read now


def _plan(index: SessionIndex, sql: str, arguments: tuple[Any, ...] = ()) -> str:
    return " | ".join(
        row[3] for row in index.connection.execute("EXPLAIN QUERY PLAN " + sql, arguments)
    )


def _statements(index: SessionIndex, call: Callable[[], object]) -> list[str]:
    """The statements ``call`` runs on the index's connection, caught by a tracer."""
    statements: list[str] = []

    def trace(_cursor: Any, sql: str, _bindings: Any) -> bool:
        statements.append(sql)
        return True

    index.connection.exec_trace = trace
    try:
        call()
    finally:
        index.connection.exec_trace = None
    return statements


def _listing_sql(index: SessionIndex, **options: Any) -> list[str]:
    return _statements(index, lambda: index.list_sessions(**options))


@pytest.mark.parametrize(
    ("options", "index_name"),
    [
        ({}, "sessions_listing"),
        ({"limit": 3}, "sessions_listing"),
        ({"order": "created"}, "sessions_created"),
        ({"cwd": "/work/demo"}, "sessions_cwd"),
        # (A project's sessions: those of the newest first whose cwd is in that folder.)
        ({"project": "/work", "limit": 2}, "sessions_listing"),
    ],
)
def test_sqlite_serves_each_listing_order_from_an_index(varied, options, index_name):
    (sql,) = _listing_sql(varied, **options)
    arguments = tuple(value for key, value in options.items() if key == "cwd")
    if "project" in options:
        arguments += tuple(project_condition("s.cwd", options["project"])[1])
    arguments += tuple(value for key, value in options.items() if key == "limit")
    plan = _plan(varied, sql, arguments)
    assert index_name in plan, plan
    assert "TEMP B-TREE" not in plan, plan  # no sorting of its own


def test_the_full_listing_reads_one_covering_index_only(varied):
    (sql,) = _listing_sql(varied)
    assert _plan(varied, sql) == "SCAN s USING COVERING INDEX sessions_listing"


def test_a_sync_reads_the_files_table_from_its_covering_index(two_sessions, index):
    files, gone, forgotten, stale = _statements(index, lambda: IndexedFiles.read(index.connection))
    assert _plan(index, files) == "SCAN files USING COVERING INDEX files_identity"
    # The gone files alone (migration 0014's partial index): no other row of the table.
    assert _plan(index, gone) == "SCAN files USING INDEX files_gone"
    assert _plan(index, forgotten) == "SCAN forgotten"  # (files forgotten on purpose: few)
    # The files of an earlier reader revision alone: a seek on each side of each agent's
    # revision (migration 0016), never a scan.
    arguments = tuple(stale.count("?") * ["claude"])
    searches = [step for step in _plan(index, stale, arguments).split(" | ") if "files" in step]
    assert searches and all(
        step.startswith("SEARCH files USING INDEX files_revision (agent=? AND reader_revision")
        for step in searches
    ), searches
