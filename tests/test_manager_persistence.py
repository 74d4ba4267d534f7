"""SessionManager on disk: lazy first write, appends, atomic rewrites, migration, switching,
fork, branched sessions, moves, breadcrumbs, error latching, and every real fixture."""

from __future__ import annotations

import base64
import logging
import os
from pathlib import Path

import orjson
import pytest
from manager_helpers import FlakyStorage, assistant, copy_fixture, read_records, user
from session_builder import PI_FIXTURES

from xcsh_store import (
    EntryNotFoundError,
    MemorySessionStorage,
    PersistenceError,
    SessionManager,
    load_entries_from_file,
)
from xcsh_store.paths import encode_cwd

CWD = "/work/project"


@pytest.fixture
def session_dir(agent_dir: Path) -> Path:
    return agent_dir / "sessions" / encode_cwd(CWD)


@pytest.fixture
def manager(session_dir: Path) -> SessionManager:
    return SessionManager.create(CWD, session_dir=str(session_dir))


def breadcrumb_lines(agent_dir: Path) -> list[str]:
    return (agent_dir / "terminal-sessions" / "pytest-terminal").read_text().splitlines()


def temp_files(folder: Path) -> list[str]:
    return [name for name in os.listdir(folder) if name.endswith(".tmp")]


def write_lines(path: Path, *records: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(orjson.dumps(record) + b"\n" for record in records))
    return path


# --------------------------------------------------------------------------------------------
# When things are written (compatibility: Persistence as in the reference)


def test_create_writes_nothing(manager: SessionManager) -> None:
    assert manager.get_session_file().endswith(f"_{manager.get_session_id()}.jsonl")
    assert not os.path.exists(manager.get_session_file())


def test_nothing_is_written_before_the_first_assistant_message(manager: SessionManager) -> None:
    manager.append_message(user("hello"))
    manager.append_custom_entry("state", {"a": 1})
    manager.append_model_change("anthropic/claude")
    manager.flush()
    assert not os.path.exists(manager.get_session_file())


def test_first_assistant_message_writes_the_whole_session(manager: SessionManager) -> None:
    manager.append_message(user("hello"))
    manager.append_thinking_level_change("high")
    manager.append_message(assistant())
    records = read_records(manager.get_session_file())
    assert records[0] == manager.get_header()
    assert records[1:] == manager.get_entries()


def test_after_the_first_write_each_append_adds_one_line(manager: SessionManager) -> None:
    manager.append_message(user("hello"))
    manager.append_message(assistant())
    path = Path(manager.get_session_file())
    before = path.read_bytes()
    entry_id = manager.append_message(user("next"))
    after = path.read_bytes()
    assert after.startswith(before)
    assert orjson.loads(after[len(before) :]) == manager.get_entry(entry_id)
    assert after.endswith(b"\n")


def test_no_temp_files_are_left_behind(manager: SessionManager, session_dir: Path) -> None:
    manager.append_message(assistant())
    manager.set_session_name("named", "user")
    manager.rewrite_entries()
    assert temp_files(session_dir) == []


def test_flush_fsyncs_the_session_file(
    manager: SessionManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    manager.append_message(assistant())
    manager.append_message(user("x"))
    synced: list[str] = []
    real_fsync = os.fsync

    def spy(descriptor: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{descriptor}"))
        real_fsync(descriptor)

    monkeypatch.setattr(os, "fsync", spy)
    manager.flush()
    assert synced == [manager.get_session_file()]


def test_in_memory_storage_keeps_the_same_rules() -> None:
    storage = MemorySessionStorage()
    manager = SessionManager.create(CWD, session_dir="/virtual", storage=storage)
    manager.append_message(user("q"))
    assert not storage.exists(manager.get_session_file())
    manager.append_message(assistant())
    manager.append_message(user("again"))
    assert load_entries_from_file(manager.get_session_file(), storage)[1:] == manager.get_entries()


def test_ensure_on_disk_writes_an_empty_session_and_later_entries(
    manager: SessionManager,
) -> None:
    manager.ensure_on_disk()
    assert read_records(manager.get_session_file()) == [manager.get_header()]
    manager.append_message(user("no answer yet"))
    assert read_records(manager.get_session_file())[1:] == manager.get_entries()


def test_rewrite_entries_writes_changes_made_in_place(manager: SessionManager) -> None:
    entry_id = manager.append_message(assistant("first"))
    manager.get_entry(entry_id)["message"]["content"][0]["text"] = "edited"
    manager.rewrite_entries()
    assert read_records(manager.get_session_file())[1]["message"]["content"][0]["text"] == "edited"


def test_close_then_append_reopens_the_file(manager: SessionManager) -> None:
    manager.append_message(assistant())
    manager.close()
    manager.append_message(user("after close"))
    assert read_records(manager.get_session_file())[1:] == manager.get_entries()


# --------------------------------------------------------------------------------------------
# Session names on disk


def test_set_session_name_rewrites_an_existing_file(manager: SessionManager) -> None:
    manager.append_message(assistant())
    manager.set_session_name("Refactor\tparser", "user")
    header = read_records(manager.get_session_file())[0]
    assert list(header)[-2:] == ["title", "titleSource"]
    assert header["title"] == "Refactor parser"
    assert header["titleSource"] == "user"


def test_set_session_name_before_the_first_write_waits_for_it(manager: SessionManager) -> None:
    manager.set_session_name("pending")
    assert not os.path.exists(manager.get_session_file())
    manager.append_message(assistant())
    assert read_records(manager.get_session_file())[0]["title"] == "pending"


def test_title_persists_across_reopen(manager: SessionManager) -> None:
    manager.append_message(assistant())
    manager.set_session_name("kept", "user")
    reopened = SessionManager.open(manager.get_session_file())
    assert reopened.get_session_name() == "kept"
    assert reopened.title_source == "user"
    assert reopened.set_session_name("auto title") is False


def test_leading_title_record_names_the_session_and_stays_first(tmp_path: Path) -> None:
    """oh-my-pi title records before the header (compatibility: Title records before the
    header)."""
    title = {"type": "title", "v": 1, "title": "OMP name", "source": "user"}
    header = {"type": "session", "version": 3, "id": "s1", "timestamp": "t", "cwd": "/x"}
    path = write_lines(tmp_path / "omp.jsonl", title, header)
    manager = SessionManager.open(str(path))
    assert manager.get_session_name() == "OMP name"
    assert manager.title_source == "user"
    manager.append_message(assistant())
    manager.rewrite_entries()
    records = read_records(path)
    assert records[:2] == [title, header]


def test_a_second_session_line_is_kept_as_an_opaque_record(tmp_path: Path) -> None:
    """Only the first session line is the header (compatibility: A second header is an opaque
    record)."""
    header = {"type": "session", "version": 3, "id": "s1", "timestamp": "t", "cwd": "/x"}
    stray = {"type": "session", "version": 3, "id": "s2", "timestamp": "t", "cwd": "/y"}
    message = {"type": "message", "id": "m1", "parentId": None, "timestamp": "t"}
    message["message"] = user("hi")
    path = write_lines(tmp_path / "s.jsonl", header, stray, message)
    manager = SessionManager.open(str(path))
    assert manager.get_session_id() == "s1"
    assert manager.get_entries() == [stray, message]
    assert manager.get_entry("s2") is None
    assert manager.get_leaf_id() == "m1"
    manager.rewrite_entries()
    assert read_records(path) == [header, stray, message]


# --------------------------------------------------------------------------------------------
# Size controls and blobs on the way to disk (compatibility: Persistence as in the reference)


def test_long_signatures_are_blanked_and_long_text_truncated(manager: SessionManager) -> None:
    huge = "x" * 600_000
    message = assistant()
    message["content"] = [
        {"type": "thinking", "thinking": "t", "thinkingSignature": huge},
        {"type": "text", "text": huge, "textSignature": huge},
        {"type": "toolCall", "id": "c", "name": "n", "arguments": {}, "partialJson": "{"},
    ]
    manager.append_message(message)
    written = read_records(manager.get_session_file())[1]["message"]["content"]
    assert written[0]["thinkingSignature"] == ""
    assert written[1]["textSignature"] == ""
    assert len(written[1]["text"]) == 500_000
    assert written[1]["text"].endswith("\n\n[Session persistence truncated large content]")
    assert "partialJson" not in written[2]
    assert manager.get_entries()[0]["message"]["content"][1]["text"] == huge


def test_images_go_to_the_blob_store_and_come_back_on_load(
    manager: SessionManager, agent_dir: Path
) -> None:
    raw = os.urandom(2048)
    data = base64.b64encode(raw).decode()
    message = user("see")
    message["content"] = [{"type": "image", "data": data, "mimeType": "image/png"}]
    manager.append_message(message)
    manager.append_message(assistant())
    written = read_records(manager.get_session_file())[1]["message"]["content"][0]["data"]
    assert written.startswith("blob:sha256:")
    digest = written.removeprefix("blob:sha256:")
    assert (agent_dir / "blobs" / digest).read_bytes() == raw
    reopened = SessionManager.open(manager.get_session_file())
    assert reopened.get_entries()[0]["message"]["content"][0]["data"] == data


def test_put_blob(manager: SessionManager, agent_dir: Path) -> None:
    result = manager.put_blob(b"abc")
    assert result.ref == f"blob:sha256:{result.hash}"
    assert Path(result.path) == agent_dir / "blobs" / result.hash


# --------------------------------------------------------------------------------------------
# Opening and switching files


def test_open_uses_the_header_cwd_and_the_file_folder(tmp_path: Path) -> None:
    header = {"type": "session", "version": 3, "id": "s1", "timestamp": "t", "cwd": "/from/header"}
    path = write_lines(tmp_path / "a" / "s.jsonl", header)
    manager = SessionManager.open(str(path))
    assert manager.get_cwd() == "/from/header"
    assert manager.get_session_dir() == str(tmp_path / "a")
    assert manager.get_session_file() == str(path)


def test_opening_a_v1_file_rewrites_it_at_once(tmp_path: Path) -> None:
    """A migration on load is written back immediately (compatibility: Migrations are written
    back at once)."""
    source = next(p for p in PI_FIXTURES if p.name == "emilio3435__formic__v1-linear.jsonl")
    path = copy_fixture(source, tmp_path)
    manager = SessionManager.open(str(path))
    records = read_records(path)
    assert records[0]["version"] == 3
    assert records[1]["parentId"] is None
    assert records[2]["parentId"] == records[1]["id"]
    assert records[1:] == manager.get_entries()
    assert SessionManager.open(str(path)).get_entries() == manager.get_entries()


def test_opening_a_v2_file_renames_hook_messages(tmp_path: Path) -> None:
    source = next(p for p in PI_FIXTURES if p.name == "emilio3435__formic__v2-hook-message.jsonl")
    path = copy_fixture(source, tmp_path)
    SessionManager.open(str(path))
    records = read_records(path)
    assert records[0]["version"] == 3
    assert records[2]["id"] == "v2-hook"
    assert records[2]["message"]["role"] == "custom"


def test_opening_a_current_file_does_not_rewrite_it(tmp_path: Path) -> None:
    header = {"type": "session", "version": 3, "id": "s1", "timestamp": "t", "cwd": "/x"}
    stale = assistant()
    stale["providerPayload"] = {"type": "openaiResponsesHistory", "items": []}
    message = {"type": "message", "id": "m", "parentId": None, "timestamp": "t", "message": stale}
    path = write_lines(tmp_path / "s.jsonl", header, message)
    before = path.read_bytes()
    manager = SessionManager.open(str(path))
    # Replay sanitising is not a migration (compatibility: OpenAI replay data dropped in memory
    # only).
    assert path.read_bytes() == before
    assert "providerPayload" not in manager.get_entries()[0]["message"]


@pytest.mark.parametrize("content", [None, b""])
def test_missing_or_empty_file_becomes_a_header_only_session(
    tmp_path: Path, content: bytes | None
) -> None:
    path = tmp_path / "new.jsonl"
    if content is not None:
        path.write_bytes(content)
    manager = SessionManager.open(str(path))
    records = read_records(path)
    assert records == [manager.get_header()]
    assert list(records[0]) == ["type", "version", "id", "timestamp", "cwd"]
    assert records[0]["cwd"] == os.getcwd()


def test_invalid_file_is_moved_aside_not_destroyed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A non-empty file without a valid header (compatibility: Invalid files are moved aside)."""
    path = tmp_path / "broken.jsonl"
    original = b'{"type":"message","id":"a","parentId":null}\n{"type":"message","id":"b"}\n'
    path.write_bytes(original)
    with caplog.at_level(logging.WARNING, logger="xcsh_store"):
        manager = SessionManager.open(str(path))
    aside = [name for name in os.listdir(tmp_path) if name.startswith("broken.jsonl.invalid-")]
    assert len(aside) == 1
    assert (tmp_path / aside[0]).read_bytes() == original
    assert read_records(path) == [manager.get_header()]
    assert any(aside[0] in record.getMessage() for record in caplog.records)


def test_appends_after_opening_an_invalid_file_follow_the_header(tmp_path: Path) -> None:
    """The file on disk always starts with its header (compatibility: Header always first)."""
    path = tmp_path / "broken.jsonl"
    path.write_bytes(b"garbage\n")
    manager = SessionManager.open(str(path))
    manager.append_message(user("first"))
    manager.append_message(user("second"))
    records = read_records(path)
    assert records[0]["type"] == "session"
    assert records[1:] == manager.get_entries()


@pytest.mark.parametrize("damage", ["delete", "truncate"])
def test_a_file_lost_under_us_is_written_whole_on_the_next_append(
    manager: SessionManager, damage: str
) -> None:
    """Never append to a file that lost its header (compatibility: Header always first)."""
    manager.append_message(user("q"))
    manager.append_message(assistant())
    path = Path(manager.get_session_file())
    if damage == "delete":
        path.unlink()
    else:
        path.write_bytes(b"")
    manager.append_message(user("after"))
    records = read_records(path)
    assert records[0] == manager.get_header()
    assert records[1:] == manager.get_entries()


def test_set_session_file_switches_sessions(manager: SessionManager, tmp_path: Path) -> None:
    manager.append_message(assistant())
    other = SessionManager.create(CWD, session_dir=str(tmp_path / "other"))
    other.append_message(assistant("other"))
    manager.set_session_file(other.get_session_file())
    assert manager.get_session_id() == other.get_session_id()
    assert manager.get_entries() == other.get_entries()
    assert manager.get_cwd() == CWD


def test_leaf_after_loading_is_the_last_entry_in_the_file(manager: SessionManager) -> None:
    root = manager.append_message(user("q"))
    manager.append_message(assistant())
    manager.branch(root)
    last = manager.append_message(user("other branch"))
    assert SessionManager.open(manager.get_session_file()).get_leaf_id() == last


# --------------------------------------------------------------------------------------------
# Terminal breadcrumbs (compatibility: Ids and paths as in the reference; One breadcrumb per
# switch)


def test_create_points_the_breadcrumb_at_the_future_file(
    manager: SessionManager, agent_dir: Path
) -> None:
    assert breadcrumb_lines(agent_dir) == [CWD, manager.get_session_file()]


def test_opening_a_missing_file_leaves_one_breadcrumb_at_that_file(
    tmp_path: Path, agent_dir: Path
) -> None:
    path = tmp_path / "explicit.jsonl"
    manager = SessionManager.open(str(path))
    assert breadcrumb_lines(agent_dir) == [manager.get_cwd(), str(path)]
    assert os.listdir(agent_dir / "terminal-sessions") == ["pytest-terminal"]


def test_continue_recent_prefers_the_breadcrumb(session_dir: Path) -> None:
    first = SessionManager.create(CWD, session_dir=str(session_dir))
    first.append_message(assistant("first"))
    second = SessionManager.create(CWD, session_dir=str(session_dir))
    second.append_message(assistant("second"))
    os.utime(first.get_session_file(), (1, 1))
    SessionManager.open(first.get_session_file())
    resumed = SessionManager.continue_recent(CWD, session_dir=str(session_dir))
    assert resumed.get_session_file() == first.get_session_file()


def test_continue_recent_falls_back_to_the_newest_file(session_dir: Path) -> None:
    old = SessionManager.create(CWD, session_dir=str(session_dir))
    old.append_message(assistant("old"))
    newer = SessionManager.create(CWD, session_dir=str(session_dir))
    newer.append_message(assistant("newer"))
    os.utime(old.get_session_file(), (1000, 1000))
    # A fresh session's breadcrumb points at a file that does not exist yet.
    SessionManager.create(CWD, session_dir=str(session_dir))
    resumed = SessionManager.continue_recent(CWD, session_dir=str(session_dir))
    assert resumed.get_session_file() == newer.get_session_file()
    assert resumed.get_cwd() == CWD


def test_continue_recent_without_sessions_starts_a_new_one(session_dir: Path) -> None:
    resumed = SessionManager.continue_recent(CWD, session_dir=str(session_dir))
    assert resumed.get_entries() == []
    assert not os.path.exists(resumed.get_session_file())


def test_continue_recent_uses_the_default_folder(agent_dir: Path) -> None:
    manager = SessionManager.continue_recent(CWD)
    assert manager.get_session_dir() == str(agent_dir / "sessions" / "--work-project--")


# --------------------------------------------------------------------------------------------
# Fork (compatibility: Forks copy the artifact folder; Forks and branches move the breadcrumb)


def test_fork_writes_a_copy_with_lineage(manager: SessionManager) -> None:
    manager.append_message(user("q"))
    manager.append_message(assistant())
    manager.set_session_name("named", "user")
    old_id, old_file = manager.get_session_id(), manager.get_session_file()
    old_bytes = Path(old_file).read_bytes()
    result = manager.fork()
    assert result == (old_file, manager.get_session_file())
    header = read_records(result[1])[0]
    assert list(header) == [
        "type",
        "version",
        "id",
        "title",
        "titleSource",
        "timestamp",
        "cwd",
        "parentSession",
    ]
    assert header["parentSession"] == old_id
    assert header["id"] == manager.get_session_id() != old_id
    assert read_records(result[1])[1:] == SessionManager.open(old_file).get_entries()
    assert Path(old_file).read_bytes() == old_bytes


def test_fork_without_a_title_has_no_title_keys(manager: SessionManager) -> None:
    manager.append_message(assistant())
    manager.fork()
    header = read_records(manager.get_session_file())[0]
    assert list(header) == ["type", "version", "id", "timestamp", "cwd", "parentSession"]


FORK_HEADER_ORDER = [
    "type", "version", "id", "title", "titleSource", "timestamp", "cwd", "parentSession"
]  # fmt: skip


def test_a_name_given_after_fork_keeps_the_place_fork_gives_the_title(
    manager: SessionManager,
) -> None:
    """The reference's fork header holds title/titleSource (undefined) right after id; the
    later assignment keeps that place (reference.md, the header and fork() sections)."""
    manager.append_message(assistant())
    manager.fork()
    manager.set_session_name("named after the fork", "user")
    header = read_records(manager.get_session_file())[0]
    assert list(header) == FORK_HEADER_ORDER
    assert (header["title"], header["titleSource"]) == ("named after the fork", "user")
    assert list(manager.get_header()) == FORK_HEADER_ORDER


def test_a_header_that_never_had_a_title_gets_it_at_the_end(manager: SessionManager) -> None:
    manager.append_message(assistant())
    manager.fork()
    reopened = SessionManager.open(manager.get_session_file())
    reopened.set_session_name("named after reopening", "user")
    header = read_records(reopened.get_session_file())[0]
    assert list(header) == [
        "type", "version", "id", "timestamp", "cwd", "parentSession", "title", "titleSource"
    ]  # fmt: skip


def test_fork_copies_the_artifact_folder(manager: SessionManager) -> None:
    manager.append_message(assistant())
    artifact_id = manager.save_artifact("full output", "bash")
    new_file = manager.fork()[1]
    copied = Path(new_file[:-6]) / f"{artifact_id}.bash.log"
    assert copied.read_text() == "full output"
    assert manager.get_artifact_path(artifact_id) == str(copied)
    assert manager.save_artifact("next", "bash") == str(int(artifact_id) + 1)


def test_fork_moves_the_breadcrumb_to_the_new_file(
    manager: SessionManager, agent_dir: Path
) -> None:
    manager.append_message(assistant())
    manager.fork()
    assert breadcrumb_lines(agent_dir) == [CWD, manager.get_session_file()]


def test_appends_after_fork_go_to_the_new_file(manager: SessionManager) -> None:
    manager.append_message(assistant())
    old_file, new_file = manager.fork()
    manager.append_message(user("in the fork"))
    assert len(read_records(old_file)) == 2
    assert read_records(new_file)[1:] == manager.get_entries()


def test_fork_from_copies_another_session_into_this_project(
    manager: SessionManager, tmp_path: Path
) -> None:
    manager.append_message(user("q"))
    manager.append_message(assistant())
    manager.set_session_name("source title", "user")
    target_dir = tmp_path / "elsewhere"
    fork = SessionManager.fork_from(manager.get_session_file(), "/other", str(target_dir))
    records = read_records(fork.get_session_file())
    assert records[0]["parentSession"] == manager.get_session_id()
    assert records[0]["title"] == "source title"
    assert records[0]["titleSource"] == "user"
    assert records[0]["cwd"] == "/other"
    assert records[1:] == manager.get_entries()
    assert os.path.dirname(fork.get_session_file()) == str(target_dir)


def test_fork_from_writes_at_once_even_without_an_answer(
    manager: SessionManager, tmp_path: Path
) -> None:
    manager.append_message(user("only a question"))
    manager.ensure_on_disk()
    fork = SessionManager.fork_from(manager.get_session_file(), CWD, str(tmp_path / "f"))
    assert [r["type"] for r in read_records(fork.get_session_file())] == ["session", "message"]


def test_fork_from_a_missing_source_gives_a_header_only_file(tmp_path: Path) -> None:
    fork = SessionManager.fork_from(str(tmp_path / "nope.jsonl"), CWD, str(tmp_path / "f"))
    records = read_records(fork.get_session_file())
    assert records == [fork.get_header()]
    assert "parentSession" not in records[0]


# --------------------------------------------------------------------------------------------
# Branched sessions (compatibility: Branched sessions are written like every other write; Labels
# skipped when branching)


def test_branched_session_holds_the_path_only(manager: SessionManager) -> None:
    root = manager.append_message(user("q"))
    kept = manager.append_message(assistant("kept"))
    manager.branch(root)
    manager.append_message(assistant("dropped"))
    old_file = manager.get_session_file()
    new_file = manager.create_branched_session(kept)
    records = read_records(new_file)
    assert list(records[0]) == ["type", "version", "id", "timestamp", "cwd", "parentSession"]
    assert records[0]["parentSession"] == old_file
    assert [r["id"] for r in records[1:]] == [root, kept]
    assert manager.get_session_file() == new_file
    assert manager.get_leaf_id() == kept


def test_branched_session_recreates_labels_at_the_end(manager: SessionManager) -> None:
    root = manager.append_message(user("q"))
    answer = manager.append_message(assistant())
    manager.append_label_change(root, "question")
    manager.append_label_change(answer, "answer")
    tail = manager.append_message(user("follow-up"))
    new_file = manager.create_branched_session(tail)
    records = read_records(new_file)[1:]
    assert [r["type"] for r in records] == ["message"] * 3 + ["label"] * 2
    first_label, second_label = records[3], records[4]
    assert (first_label["targetId"], first_label["label"]) == (root, "question")
    assert (second_label["targetId"], second_label["label"]) == (answer, "answer")
    assert first_label["parentId"] == tail
    assert second_label["parentId"] == first_label["id"]
    assert manager.get_label(root) == "question"


def test_branched_session_reparents_entries_that_followed_a_label(
    manager: SessionManager,
) -> None:
    """The entry after a dropped label keeps its whole history (compatibility: Labels skipped
    when branching)."""
    root = manager.append_message(user("q"))
    answer = manager.append_message(assistant())
    manager.append_label_change(answer, "mark")
    tail = manager.append_message(user("after the label"))
    new_file = manager.create_branched_session(tail)
    reopened = SessionManager.open(new_file)
    assert reopened.get_entry(tail)["parentId"] == answer
    contents = [m.get("content") for m in reopened.build_session_context().messages]
    assert contents[0] == "q"
    assert len(contents) == 3
    assert [e["id"] for e in reopened.get_branch(tail)] == [root, answer, tail]


def test_branched_session_goes_through_the_persistence_transform(
    manager: SessionManager,
) -> None:
    """The same truncation as every other write (compatibility: Branched sessions are written
    like every other write)."""
    message = assistant("x" * 600_000)
    entry_id = manager.append_message(message)
    new_file = manager.create_branched_session(entry_id)
    text = read_records(new_file)[1]["message"]["content"][0]["text"]
    assert len(text) == 500_000


def test_branched_session_of_an_unknown_entry_raises(manager: SessionManager) -> None:
    manager.append_message(assistant())
    with pytest.raises(EntryNotFoundError, match="Entry ghost not found"):
        manager.create_branched_session("ghost")


# --------------------------------------------------------------------------------------------
# Moving to another cwd (compatibility: Persistence as in the reference)


@pytest.fixture
def managed(agent_dir: Path) -> SessionManager:
    return SessionManager.create(CWD)


def test_move_to_renames_file_and_artifacts(managed: SessionManager, agent_dir: Path) -> None:
    managed.append_message(assistant())
    artifact_id = managed.save_artifact("log", "bash")
    old_file = managed.get_session_file()
    managed.move_to("/work/renamed/../moved")
    new_dir = agent_dir / "sessions" / "--work-moved--"
    assert managed.get_session_dir() == str(new_dir)
    assert managed.get_session_file() == str(new_dir / os.path.basename(old_file))
    assert not os.path.exists(old_file)
    assert not os.path.exists(old_file[:-6])
    assert read_records(managed.get_session_file())[0]["cwd"] == "/work/moved"
    assert managed.get_cwd() == "/work/moved"
    assert Path(managed.get_artifact_path(artifact_id)).read_text() == "log"
    assert breadcrumb_lines(agent_dir) == ["/work/moved", managed.get_session_file()]


def test_move_to_the_same_cwd_does_nothing(managed: SessionManager) -> None:
    managed.append_message(assistant())
    before = managed.get_session_file()
    managed.move_to(CWD + "/.")
    assert managed.get_session_file() == before


def test_move_to_keeps_an_unwritten_session_unwritten(managed: SessionManager) -> None:
    managed.append_message(user("no answer"))
    managed.move_to("/work/moved")
    assert not os.path.exists(managed.get_session_file())
    managed.append_message(assistant())
    assert read_records(managed.get_session_file())[0]["cwd"] == "/work/moved"


def test_move_to_from_an_unmanaged_folder_uses_the_default_folder(
    tmp_path: Path, agent_dir: Path
) -> None:
    manager = SessionManager.create(CWD, session_dir=str(tmp_path / "custom"))
    manager.append_message(assistant())
    manager.move_to("/work/moved")
    assert manager.get_session_dir() == str(agent_dir / "sessions" / "--work-moved--")
    assert os.path.exists(manager.get_session_file())


def test_move_to_from_a_managed_folder_stays_under_the_same_root(
    manager: SessionManager, session_dir: Path
) -> None:
    manager.append_message(assistant())
    manager.move_to("/work/moved")
    assert manager.get_session_dir() == str(session_dir.parent / "--work-moved--")


def test_move_to_rolls_back_when_the_artifacts_cannot_move(
    managed: SessionManager, agent_dir: Path
) -> None:
    managed.append_message(assistant())
    managed.save_artifact("log", "bash")
    old_file = managed.get_session_file()
    blocker = agent_dir / "sessions" / "--work-moved--" / os.path.basename(old_file)[:-6]
    blocker.mkdir(parents=True)
    (blocker / "occupied").write_text("x")
    with pytest.raises(OSError) as caught:
        managed.move_to("/work/moved")
    assert not isinstance(caught.value, PersistenceError)
    assert os.path.exists(old_file)
    assert managed.get_session_file() == old_file
    assert managed.get_cwd() == CWD
    assert not (blocker.parent / os.path.basename(old_file)).exists()


class RollbackFails(FlakyStorage):
    """Renames work once (the move) and fail afterwards (the rollback)."""

    renames = 0

    def rename(self, source: str, target: str) -> None:
        self.renames += 1
        if self.renames > 1:
            raise OSError(5, "Input/output error")
        super().rename(source, target)


def test_move_to_reports_a_failed_rollback(agent_dir: Path) -> None:
    storage = RollbackFails()
    manager = SessionManager.create(CWD, storage=storage)
    manager.append_message(assistant())
    manager.save_artifact("log", "bash")
    storage.renames = 0
    blocker = (
        agent_dir
        / "sessions"
        / "--work-moved--"
        / os.path.basename(manager.get_session_file())[:-6]
    )
    blocker.mkdir(parents=True)
    (blocker / "occupied").write_text("x")
    with pytest.raises(PersistenceError) as caught:
        manager.move_to("/work/moved")
    assert str(caught.value) == (
        "Failed to move session file and rollback: [Errno 5] Input/output error"
    )


# --------------------------------------------------------------------------------------------
# Persistence errors (compatibility: Synchronous writes with a latched error)


@pytest.fixture
def flaky() -> FlakyStorage:
    return FlakyStorage()


@pytest.fixture
def failing(flaky: FlakyStorage, session_dir: Path) -> SessionManager:
    manager = SessionManager.create(CWD, session_dir=str(session_dir), storage=flaky)
    manager.append_message(assistant())
    flaky.broken = True
    return manager


def test_the_failing_append_raises_a_persistence_error(failing: SessionManager) -> None:
    with pytest.raises(PersistenceError) as caught:
        failing.append_message(user("lost?"))
    assert failing.get_session_file() in str(caught.value)
    assert "No space left on device" in str(caught.value)
    assert isinstance(caught.value.__cause__, OSError)


def test_the_failed_entry_stays_in_memory(failing: SessionManager) -> None:
    with pytest.raises(PersistenceError):
        failing.append_message(user("kept in memory"))
    assert failing.get_entries()[-1]["message"]["content"] == "kept in memory"
    assert failing.get_leaf_id() == failing.get_entries()[-1]["id"]


def test_the_error_is_latched_until_the_session_switches(
    failing: SessionManager, flaky: FlakyStorage
) -> None:
    with pytest.raises(PersistenceError) as first:
        failing.append_message(user("a"))
    flaky.broken = False
    for action in (
        lambda: failing.append_message(user("b")),
        failing.flush,
        failing.rewrite_entries,
        failing.close,
    ):
        with pytest.raises(PersistenceError) as later:
            action()
        assert later.value is first.value
    failing.new_session()
    failing.append_message(assistant())
    failing.flush()


def test_the_error_is_logged_once(
    failing: SessionManager, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="xcsh_store"):
        for _ in range(3):
            with pytest.raises(PersistenceError):
                failing.append_message(user("x"))
    errors = [record for record in caplog.records if record.levelno == logging.ERROR]
    assert len(errors) == 1
    assert failing.get_session_file() in errors[0].getMessage()


def test_set_session_file_clears_the_error(
    failing: SessionManager, flaky: FlakyStorage, tmp_path: Path
) -> None:
    with pytest.raises(PersistenceError):
        failing.append_message(user("x"))
    flaky.broken = False
    failing.set_session_file(str(tmp_path / "fresh.jsonl"))
    failing.append_message(assistant())
    assert len(read_records(tmp_path / "fresh.jsonl")) == 2


def test_a_failing_first_write_is_raised_and_latched(
    flaky: FlakyStorage, session_dir: Path
) -> None:
    manager = SessionManager.create(CWD, session_dir=str(session_dir), storage=flaky)
    manager.append_message(user("q"))
    flaky.broken = True
    with pytest.raises(PersistenceError):
        manager.append_message(assistant())
    assert not os.path.exists(manager.get_session_file())
    assert temp_files(session_dir) == []
    flaky.broken = False
    with pytest.raises(PersistenceError):
        manager.ensure_on_disk()


def test_with_block_does_not_hide_the_original_error(failing: SessionManager) -> None:
    with pytest.raises(PersistenceError) as caught, failing:
        failing.append_message(user("x"))
    assert "No space left" in str(caught.value)


def test_a_failed_rewrite_keeps_the_old_file(failing: SessionManager) -> None:
    before = Path(failing.get_session_file()).read_bytes()
    with pytest.raises(PersistenceError):
        failing.set_session_name("new name", "user")
    assert Path(failing.get_session_file()).read_bytes() == before


# --------------------------------------------------------------------------------------------
# Every real fixture


def without_transient_fields(value: object) -> object:
    """What the persistence transform leaves of a loaded value (``partialJson`` and
    ``jsonlEvents`` are never written; the fixtures hold no oversized strings)."""
    if isinstance(value, dict):
        return {
            key: without_transient_fields(item)
            for key, item in value.items()
            if key not in ("partialJson", "jsonlEvents")
        }
    if isinstance(value, list):
        return [without_transient_fields(item) for item in value]
    return value


@pytest.mark.parametrize("fixture", PI_FIXTURES, ids=[path.name for path in PI_FIXTURES])
def test_every_fixture_opens_forks_and_rewrites_losslessly(fixture: Path, tmp_path: Path) -> None:
    path = copy_fixture(fixture, tmp_path / "sessions")
    manager = SessionManager.open(str(path))
    expected = without_transient_fields(manager.get_entries())
    assert manager.get_header()["type"] == "session"
    manager.build_session_context()
    manager.get_tree()

    old_file, new_file = manager.fork()
    assert SessionManager.open(new_file).get_entries() == expected
    manager.rewrite_entries()
    assert SessionManager.open(new_file).get_entries() == expected

    original = SessionManager.open(old_file)
    original.rewrite_entries()
    assert SessionManager.open(old_file).get_entries() == expected


@pytest.mark.parametrize(
    ("name", "line", "second_type"),
    [
        ("badlogic__pi-mono__session.jsonl", 440, "message"),
        ("badlogic__pi-mono__compact.jsonl", 1013, "compaction"),
    ],
)
def test_glued_lines_keep_both_objects_after_a_rewrite(
    name: str, line: int, second_type: str, tmp_path: Path
) -> None:
    """Two entries glued onto one line by an old append bug (compatibility: Several objects on
    one line)."""
    source = next(p for p in PI_FIXTURES if p.name == name)
    glued = source.read_bytes().split(b"\n")[line - 1]
    first_text, _, second_text = glued.partition(b"}{")
    second = orjson.loads(b"{" + second_text)
    assert second["type"] == second_type
    path = copy_fixture(source, tmp_path)
    manager = SessionManager.open(str(path))
    manager.rewrite_entries()
    timestamps = {(r["type"], r.get("timestamp")) for r in read_records(path)}
    assert (second_type, second["timestamp"]) in timestamps
    assert ("message", orjson.loads(first_text + b"}")["timestamp"]) in timestamps


def test_v1_fixture_keeps_its_line_count_after_migration(tmp_path: Path) -> None:
    source = next(p for p in PI_FIXTURES if p.name == "badlogic__pi-mono__large-session.jsonl")
    lines = [line for line in source.read_bytes().splitlines() if line.strip()]
    path = copy_fixture(source, tmp_path)
    manager = SessionManager.open(str(path))
    assert len(read_records(path)) == len(lines)
    assert len(manager.build_session_context().messages) > 0


def test_entries_without_ids_are_repaired_and_written_back(tmp_path: Path) -> None:
    """A v3 file whose entries lack id/parentId (compatibility: Entries without id or
    parentId)."""
    header = {"type": "session", "version": 3, "id": "s1", "timestamp": "t", "cwd": "/x"}
    first = {"type": "message", "timestamp": "t", "message": user("a")}
    second = {"type": "message", "timestamp": "t", "message": assistant()}
    path = write_lines(tmp_path / "s.jsonl", header, first, second)
    manager = SessionManager.open(str(path))
    records = read_records(path)
    assert records[1]["parentId"] is None
    assert records[2]["parentId"] == records[1]["id"]
    assert [e["id"] for e in manager.get_branch()] == [records[1]["id"], records[2]["id"]]
