"""Finding sessions by scanning files: recent sessions, listings, lookup by prefix."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest
from manager_helpers import assistant, copy_fixture, user
from session_builder import PI_FIXTURES

from xcsh_store import (
    MemorySessionStorage,
    RecentSessionInfo,
    SessionInfo,
    SessionManager,
    find_most_recent_session,
    get_recent_sessions,
    resolve_resumable_session,
)
from xcsh_store.paths import encode_cwd


def header(session_id: str, **fields: object) -> dict:
    record = {"type": "session", "version": 3, "id": session_id}
    record["timestamp"] = "2026-02-16T10:20:30.000Z"
    record["cwd"] = "/work/p"
    record.update(fields)
    return record


def message(entry_id: str, payload: dict, parent: str | None = None) -> dict:
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": "2026-02-16T10:20:31.000Z",
        "message": payload,
    }


def write(path: Path, *records: dict, mtime: float | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(orjson.dumps(record) + b"\n" for record in records))
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


# --------------------------------------------------------------------------------------------
# Prefix scans


def test_recent_sessions_newest_first_and_limited(tmp_path: Path) -> None:
    for number in range(5):
        write(tmp_path / f"s{number}.jsonl", header(f"id{number}"), mtime=1000 + number)
    recent = get_recent_sessions(str(tmp_path))
    assert [info.header["id"] for info in recent] == ["id4", "id3", "id2"]
    assert recent[0].mtime == 1004.0
    assert len(get_recent_sessions(str(tmp_path), limit=10)) == 5
    assert isinstance(recent[0], RecentSessionInfo)


def test_recent_session_names_prefer_the_title(tmp_path: Path) -> None:
    write(
        tmp_path / "a.jsonl",
        header("abc", title="Titled\nsecond line"),
        message("m", user("prompt")),
    )
    (info,) = get_recent_sessions(str(tmp_path))
    assert info.full_name == "Titled"
    assert info.first_prompt is None


def test_recent_session_name_falls_back_to_the_first_prompt(tmp_path: Path) -> None:
    blocks = {"role": "user", "content": [{"type": "image", "data": "x"}, {"text": "from blocks"}]}
    write(
        tmp_path / "a.jsonl",
        header("abc"),
        message("m0", {"role": "assistant", "content": "not a prompt"}),
        message("m1", blocks),
    )
    (info,) = get_recent_sessions(str(tmp_path))
    assert info.first_prompt == "from blocks"
    assert info.full_name == "from blocks"


def test_recent_session_name_falls_back_to_the_id(tmp_path: Path) -> None:
    write(tmp_path / "a.jsonl", header("\x01 the-id \x7f"))
    (info,) = get_recent_sessions(str(tmp_path))
    assert info.full_name == "the-id"


def test_long_names_are_cut_at_forty_characters(tmp_path: Path) -> None:
    write(tmp_path / "a.jsonl", header("abc", title="x" * 41))
    write(tmp_path / "b.jsonl", header("abd", title="y" * 40), mtime=1)
    long_name, exact = get_recent_sessions(str(tmp_path))
    assert long_name.name == "x" * 39 + "…"
    assert long_name.full_name == "x" * 41
    assert exact.name == "y" * 40


def test_a_title_record_names_a_recent_session(tmp_path: Path) -> None:
    """(compatibility: Title records before the header)"""
    title = {"type": "title", "v": 1, "title": "OMP title", "source": "user"}
    write(tmp_path / "a.jsonl", title, header("abc"), message("m", user("prompt")))
    (info,) = get_recent_sessions(str(tmp_path))
    assert info.full_name == "OMP title"
    assert info.header["id"] == "abc"


def test_a_header_longer_than_the_prefix_hides_the_file(tmp_path: Path) -> None:
    write(tmp_path / "long.jsonl", header("abc", title="t" * 5000))
    write(tmp_path / "short.jsonl", header("def"))
    assert [info.header["id"] for info in get_recent_sessions(str(tmp_path))] == ["def"]


def test_bad_files_never_break_the_scan(tmp_path: Path) -> None:
    write(tmp_path / "good.jsonl", header("good"), mtime=1)
    (tmp_path / "garbage.jsonl").write_bytes(b"\x00\xff\xfe not json at all\n{{{\n")
    (tmp_path / "utf8.jsonl").write_bytes(b'{"type":"session","id":"\xff\xfe","cwd":"/x"}\n')
    (tmp_path / "no-header.jsonl").write_bytes(b'{"type":"message","id":"a"}\n')
    (tmp_path / "numeric-id.jsonl").write_bytes(b'{"type":"session","id":5}\n')
    (tmp_path / "empty.jsonl").write_bytes(b"")
    (tmp_path / "folder.jsonl").mkdir()
    os.symlink(tmp_path / "missing", tmp_path / "dangling.jsonl")
    found = {info.header["id"] for info in get_recent_sessions(str(tmp_path), limit=20)}
    assert found == {"good", "\ufffd\ufffd"}
    assert find_most_recent_session(str(tmp_path)) == str(tmp_path / "utf8.jsonl")


def test_find_most_recent_session(tmp_path: Path) -> None:
    write(tmp_path / "old.jsonl", header("old"), mtime=100)
    write(tmp_path / "new.jsonl", header("new"), mtime=200)
    (tmp_path / "newest-but-invalid.jsonl").write_text("nope\n")
    assert find_most_recent_session(str(tmp_path)) == str(tmp_path / "new.jsonl")


def test_find_most_recent_session_without_sessions(tmp_path: Path) -> None:
    assert find_most_recent_session(str(tmp_path / "missing")) is None
    (tmp_path / "other.txt").write_text("x")
    assert find_most_recent_session(str(tmp_path)) is None


def test_prefix_scans_work_on_memory_storage() -> None:
    storage = MemorySessionStorage()
    storage.write_text("/s/a.jsonl", orjson.dumps(header("mem")).decode() + "\n")
    storage.write_text("/s/sub/b.jsonl", orjson.dumps(header("nested")).decode() + "\n")
    assert find_most_recent_session("/s", storage) == "/s/a.jsonl"


# --------------------------------------------------------------------------------------------
# Full-read listings


ANSWER_BLOCKS = [
    {"type": "text", "text": "an"},
    {"type": "thinking", "thinking": "t"},
    {"type": "text", "text": "answer"},
]


def test_list_reports_every_field(tmp_path: Path) -> None:
    path = write(
        tmp_path / "a.jsonl",
        header("abc", parentSession="/old.jsonl"),
        message("u1", user("first question")),
        message("a1", {"role": "assistant", "content": ANSWER_BLOCKS}),
        message("t1", {"role": "toolResult", "content": [{"type": "text", "text": "tool"}]}),
        message("u2", user("second")),
        mtime=1_700_000_000,
    )
    (info,) = SessionManager.list("/work/p", session_dir=str(tmp_path))
    assert info == SessionInfo(
        path=str(path),
        id="abc",
        cwd="/work/p",
        title=None,
        parent_session_path="/old.jsonl",
        created=datetime(2026, 2, 16, 10, 20, 30, tzinfo=UTC),
        modified=datetime.fromtimestamp(1_700_000_000, UTC),
        message_count=4,
        first_message="first question",
        all_messages_text="first question an answer second",
    )


def test_list_includes_sessions_without_messages(tmp_path: Path) -> None:
    write(tmp_path / "a.jsonl", header("abc", cwd=42))
    (info,) = SessionManager.list("/work/p", session_dir=str(tmp_path))
    assert info.first_message == "(no messages)"
    assert info.message_count == 0
    assert info.all_messages_text == ""
    assert info.cwd == ""


def test_list_title_falls_back_to_the_latest_short_summary(tmp_path: Path) -> None:
    compaction = {"type": "compaction", "id": "c", "parentId": None, "timestamp": "t"}
    write(
        tmp_path / "a.jsonl",
        header("abc"),
        {**compaction, "shortSummary": "older"},
        {**compaction, "id": "d", "shortSummary": "latest"},
    )
    (info,) = SessionManager.list("/work/p", session_dir=str(tmp_path))
    assert info.title == "latest"


def test_list_is_sorted_by_modification_time(tmp_path: Path) -> None:
    write(tmp_path / "a.jsonl", header("old"), mtime=100)
    write(tmp_path / "b.jsonl", header("new"), mtime=300)
    write(tmp_path / "c.jsonl", header("mid"), mtime=200)
    ids = [info.id for info in SessionManager.list("/work/p", session_dir=str(tmp_path))]
    assert ids == ["new", "mid", "old"]


def test_list_skips_bad_files(tmp_path: Path) -> None:
    write(tmp_path / "good.jsonl", header("good"))
    (tmp_path / "bad.jsonl").write_bytes(b"\xff\xfe\x00garbage")
    (tmp_path / "falsy-id.jsonl").write_bytes(b'{"type":"session","id":""}\n')
    (tmp_path / "dir.jsonl").mkdir()
    ids = [info.id for info in SessionManager.list("/work/p", session_dir=str(tmp_path))]
    assert ids == ["good"]


def test_list_defaults_to_the_project_folder(agent_dir: Path) -> None:
    manager = SessionManager.create("/work/p")
    manager.append_message(user("hello"))
    manager.append_message(assistant())
    (info,) = SessionManager.list("/work/p")
    assert info.path == manager.get_session_file()
    assert info.first_message == "hello"


def test_list_all_finds_every_folder_and_nested_sessions(agent_dir: Path) -> None:
    """Any folder name under sessions/, recursively, so subagent sessions in artifact dirs too
    (compatibility: Sessions in any folder)."""
    sessions = agent_dir / "sessions"
    write(sessions / encode_cwd("/work/p") / "a.jsonl", header("ours"), mtime=300)
    write(sessions / "-Projects-foo" / "b.jsonl", header("home-style"), mtime=200)
    write(sessions / "-tmp-x" / "c" / "0-Sub.jsonl", header("subagent"), mtime=100)
    write(sessions / "-tmp-x" / ".hidden.jsonl", header("hidden"))
    (sessions / "-tmp-x" / "notes.txt").write_text("x")
    ids = [info.id for info in SessionManager.list_all()]
    assert ids == ["ours", "home-style", "subagent"]


def test_list_all_with_an_explicit_agent_dir(tmp_path: Path) -> None:
    write(tmp_path / "elsewhere" / "sessions" / "any" / "a.jsonl", header("there"))
    assert [info.id for info in SessionManager.list_all(agent_dir=str(tmp_path / "elsewhere"))] == [
        "there"
    ]
    assert SessionManager.list_all(agent_dir=str(tmp_path / "nothing")) == []


def test_list_all_on_memory_storage(agent_dir: Path) -> None:
    storage = MemorySessionStorage()
    root = agent_dir / "sessions"
    storage.write_text(f"{root}/x/a.jsonl", orjson.dumps(header("m1")).decode() + "\n")
    storage.write_text(f"{root}/x/y/b.jsonl", orjson.dumps(header("m2")).decode() + "\n")
    storage.write_text("/outside/c.jsonl", orjson.dumps(header("m3")).decode() + "\n")
    assert sorted(info.id for info in SessionManager.list_all(storage)) == ["m1", "m2"]


@pytest.mark.parametrize("fixture", PI_FIXTURES, ids=[path.name for path in PI_FIXTURES])
def test_every_fixture_is_listed(fixture: Path, tmp_path: Path) -> None:
    copy_fixture(fixture, tmp_path)
    (info,) = SessionManager.list("/work/p", session_dir=str(tmp_path))
    assert info.id
    assert info.created.tzinfo is not None
    (recent,) = get_recent_sessions(str(tmp_path))
    assert recent.header["id"] == info.id


# --------------------------------------------------------------------------------------------
# Lookup by prefix (compatibility: Finding sessions as in the reference)


@pytest.fixture
def project(agent_dir: Path) -> Path:
    folder = agent_dir / "sessions" / encode_cwd("/work/p")
    write(folder / "2026-02-16T10-20-30-000Z_0123456789abcdef.jsonl", header("0123456789ABCDEF"))
    write(agent_dir / "sessions" / "other" / "2026-01-01T00-00-00-000Z_fedcba.jsonl", header("zz"))
    return folder


@pytest.mark.parametrize("query", ["0123", "0123456789abcd", "2026-02-16", "0123456789ABCDEF"])
def test_resolve_by_id_file_name_or_suffix(project: Path, query: str) -> None:
    found = resolve_resumable_session(query, "/work/p")
    assert found is not None
    assert found.scope == "local"
    assert found.session.id == "0123456789ABCDEF"


def test_resolve_falls_back_to_every_project(project: Path) -> None:
    found = resolve_resumable_session("fedc", "/work/p")
    assert found is not None
    assert (found.scope, found.session.id) == ("global", "zz")


def test_resolve_with_an_explicit_folder_stays_local(project: Path) -> None:
    assert resolve_resumable_session("fedc", "/work/p", session_dir=str(project)) is None


def test_resolve_unknown(project: Path) -> None:
    assert resolve_resumable_session("nothing-like-it", "/work/p") is None
