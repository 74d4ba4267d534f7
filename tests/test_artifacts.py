"""ArtifactManager, AgentOutputManager, temp artifact folders and copying on fork."""

from __future__ import annotations

import logging
import os
import re
import stat
from pathlib import Path

import pytest

from xcsh_store import AgentOutputManager, ArtifactManager
from xcsh_store.artifacts.store import copy_artifacts_dir, create_temp_artifacts_dir, node_tmpdir


@pytest.fixture
def session_file(tmp_path: Path) -> str:
    return str(tmp_path / "sessions" / "2026-02-16T10-20-30-000Z_0123456789abcdef.jsonl")


def artifacts_dir(session_file: str) -> Path:
    return Path(session_file[: -len(".jsonl")])


def write(path: Path, text: str = "x") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


# ------------------------------------------------------------------------------------------------
# ArtifactManager


def test_dir_is_the_session_file_without_jsonl(session_file: str) -> None:
    assert ArtifactManager(session_file).dir == str(artifacts_dir(session_file))


def test_missing_folder_starts_at_zero_and_allocating_writes_nothing(session_file: str) -> None:
    manager = ArtifactManager(session_file)
    artifact_id, path = manager.allocate_path("bash")
    assert (artifact_id, path) == ("0", str(artifacts_dir(session_file) / "0.bash.log"))
    assert artifacts_dir(session_file).is_dir()
    assert not os.path.exists(path)


def test_folder_is_created_private(session_file: str) -> None:
    ArtifactManager(session_file).allocate_path("bash")
    assert stat.S_IMODE(artifacts_dir(session_file).stat().st_mode) == 0o700


def test_allocate_id_counts_up_without_creating_the_folder(session_file: str) -> None:
    manager = ArtifactManager(session_file)
    assert [manager.allocate_id() for _ in range(3)] == ["0", "1", "2"]
    assert not artifacts_dir(session_file).exists()


def test_save_writes_numbered_files(session_file: str) -> None:
    manager = ArtifactManager(session_file)
    assert manager.save("first output", "bash") == "0"
    assert manager.save("zweite Ausgabe ü", "python") == "1"
    folder = artifacts_dir(session_file)
    assert (folder / "0.bash.log").read_text(encoding="utf-8") == "first output"
    assert (folder / "1.python.log").read_text(encoding="utf-8") == "zweite Ausgabe ü"


def test_restart_continues_after_the_highest_existing_log(session_file: str) -> None:
    folder = artifacts_dir(session_file)
    for name in ("0.bash.log", "7.python.log", "12-Agent.md", "30.txt", "3.log", "notes.log"):
        write(folder / name)
    # Only <n>.<type>.log names count: 12-Agent.md, 30.txt, 3.log and notes.log do not.
    assert ArtifactManager(session_file).save("after restart", "bash") == "8"


def test_second_manager_continues_after_the_first_managers_files(session_file: str) -> None:
    first = ArtifactManager(session_file)
    assert [first.save("a", "bash"), first.save("b", "bash")] == ["0", "1"]
    assert ArtifactManager(session_file).save("c", "ssh") == "2"


def test_interleaved_managers_never_share_an_id(session_file: str) -> None:
    first = ArtifactManager(session_file)
    second = ArtifactManager(session_file)
    assert first.allocate_id() == "0"
    assert second.allocate_id() == "0"  # both scanned an empty folder
    ids = [first.save("one", "bash"), second.save("two", "python"), first.save("three", "bash")]
    assert len(set(ids)) == 3
    folder = artifacts_dir(session_file)
    contents = sorted(path.read_text(encoding="utf-8") for path in folder.iterdir())
    assert contents == ["one", "three", "two"]


def test_save_never_clobbers_a_file_created_behind_its_back(
    session_file: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = artifacts_dir(session_file)
    write(folder / "0.bash.log", "precious")
    manager = ArtifactManager(session_file)
    # A racing writer: the listing this manager sees is stale, only the exclusive create knows.
    monkeypatch.setattr(manager, "list_files", lambda: [])
    assert manager.save("new", "bash") == "1"
    assert (folder / "0.bash.log").read_text(encoding="utf-8") == "precious"
    assert (folder / "1.bash.log").read_text(encoding="utf-8") == "new"


def test_save_skips_an_id_another_writer_used_with_another_tool_type(session_file: str) -> None:
    manager = ArtifactManager(session_file)
    assert manager.allocate_id() == "0"
    write(artifacts_dir(session_file) / "1.python.log", "someone else")
    assert manager.save("mine", "bash") == "2"


def test_exists_and_get_path_match_the_id_prefix_exactly(session_file: str) -> None:
    manager = ArtifactManager(session_file)
    folder = artifacts_dir(session_file)
    write(folder / "10.bash.log")
    assert not manager.exists("1")
    assert manager.get_path("1") is None
    assert manager.exists("10")
    assert manager.get_path("10") == str(folder / "10.bash.log")


def test_list_files_of_a_missing_folder_is_empty(session_file: str) -> None:
    assert ArtifactManager(session_file).list_files() == []


@pytest.mark.parametrize("tool_type", ["../escape", "a/b", "a\\b", "", ".."])
def test_tool_type_cannot_name_another_folder(session_file: str, tool_type: str) -> None:
    with pytest.raises(ValueError, match="tool type"):
        ArtifactManager(session_file).allocate_path(tool_type)


# ------------------------------------------------------------------------------------------------
# Fork: copying the artifact folder


def test_fork_copy_then_numbering_continues_after_the_copied_max(
    tmp_path: Path, session_file: str
) -> None:
    old = ArtifactManager(session_file)
    for text in ("a", "b", "c"):
        old.save(text, "bash")
    write(artifacts_dir(session_file) / "0-Sub" / "0-Sub.0-Deep.md", "nested")
    new_session = str(tmp_path / "sessions" / "2026-02-17T00-00-00-000Z_fedcba9876543210.jsonl")
    assert copy_artifacts_dir(session_file, new_session) is True
    new_folder = artifacts_dir(new_session)
    assert (new_folder / "2.bash.log").read_text(encoding="utf-8") == "c"
    assert (new_folder / "0-Sub" / "0-Sub.0-Deep.md").read_text(encoding="utf-8") == "nested"
    assert ArtifactManager(new_session).save("d", "bash") == "3"


def test_fork_copy_keeps_symlinks_as_symlinks(tmp_path: Path, session_file: str) -> None:
    outside = tmp_path / "outside.txt"
    write(outside, "secret")
    folder = artifacts_dir(session_file)
    folder.mkdir(parents=True)
    (folder / "link.log").symlink_to(outside)
    new_session = str(tmp_path / "new.jsonl")
    assert copy_artifacts_dir(session_file, new_session)
    assert (artifacts_dir(new_session) / "link.log").is_symlink()


def test_fork_without_an_artifact_folder_copies_nothing(tmp_path: Path, session_file: str) -> None:
    new_session = str(tmp_path / "new.jsonl")
    assert copy_artifacts_dir(session_file, new_session) is True
    assert not artifacts_dir(new_session).exists()
    assert ArtifactManager(new_session).allocate_id() == "0"


def test_fork_copy_failure_is_a_warning_not_an_error(
    tmp_path: Path, session_file: str, caplog: pytest.LogCaptureFixture
) -> None:
    ArtifactManager(session_file).save("a", "bash")
    blocker = tmp_path / "blocker"
    write(blocker, "a file where the new folder's parent should be")
    new_session = str(blocker / "new.jsonl")
    with caplog.at_level(logging.WARNING, logger="xcsh_store"):
        assert copy_artifacts_dir(session_file, new_session) is False
    assert "Failed to copy artifacts during fork" in caplog.text


# ------------------------------------------------------------------------------------------------
# AgentOutputManager


def test_agent_outputs_without_a_folder_start_at_zero() -> None:
    manager = AgentOutputManager(lambda: None)
    assert manager.allocate("AuthProvider") == "0-AuthProvider"
    assert manager.allocate_batch(["Reviewer", "Tester"]) == ["1-Reviewer", "2-Tester"]
    assert manager.peek_next_index() == 3


def test_agent_outputs_with_a_missing_folder_start_at_zero(tmp_path: Path) -> None:
    manager = AgentOutputManager(lambda: str(tmp_path / "missing"))
    assert manager.allocate("A") == "0-A"


def test_agent_outputs_with_an_unreadable_folder_start_at_zero(tmp_path: Path) -> None:
    not_a_folder = tmp_path / "file"
    write(not_a_folder)
    assert AgentOutputManager(lambda: str(not_a_folder)).allocate("A") == "0-A"


def test_agent_outputs_continue_after_existing_md_files(tmp_path: Path) -> None:
    for name in ("0-A.md", "4-B.md", "9-C.jsonl", "context.md", "handoff-2026.md", "12.bash.log"):
        write(tmp_path / name)
    manager = AgentOutputManager(lambda: str(tmp_path))
    assert manager.peek_next_index() == 5
    assert manager.allocate("Next") == "5-Next"


def test_nested_agent_outputs_use_the_parent_prefix(tmp_path: Path) -> None:
    for name in ("0-Auth.0-X.md", "0-Auth.3-Y.md", "1-Other.9-Z.md", "5-Top.md"):
        write(tmp_path / name)
    manager = AgentOutputManager(lambda: str(tmp_path), parent_prefix="0-Auth")
    assert manager.allocate("Subtask") == "0-Auth.4-Subtask"


def test_nested_agent_outputs_without_own_files_start_at_zero() -> None:
    assert AgentOutputManager(lambda: None, "0-Auth").allocate("Subtask") == "0-Auth.0-Subtask"


def test_parent_prefix_is_matched_literally(tmp_path: Path) -> None:
    write(tmp_path / "0xA.7-X.md")  # '.' in the prefix "0.A" must not match 'x'
    assert AgentOutputManager(lambda: str(tmp_path), "0.A").allocate("B") == "0.A.0-B"


def test_agent_output_folder_is_scanned_once_until_reset(tmp_path: Path) -> None:
    manager = AgentOutputManager(lambda: str(tmp_path))
    assert manager.allocate("A") == "0-A"
    write(tmp_path / "9-Late.md")
    assert manager.allocate("B") == "1-B"
    manager.reset()
    assert manager.allocate("C") == "10-C"


@pytest.mark.parametrize("requested", ["../x", "a/b", "a\\b", ""])
def test_agent_output_ids_cannot_name_another_folder(requested: str) -> None:
    with pytest.raises(ValueError):
        AgentOutputManager(lambda: None).allocate(requested)


# ------------------------------------------------------------------------------------------------
# Temporary artifact folder for sessions without a file


def test_node_tmpdir_strips_one_trailing_slash(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TMPDIR", "/var/tmp/x//")
    assert node_tmpdir() == "/var/tmp/x/"


def test_node_tmpdir_falls_back_through_tmp_temp_and_slash_tmp(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TMPDIR", "")
    monkeypatch.setenv("TMP", "/from/tmp")
    monkeypatch.setenv("TEMP", "/from/temp")
    assert node_tmpdir() == "/from/tmp"
    monkeypatch.delenv("TMP")
    assert node_tmpdir() == "/from/temp"
    monkeypatch.delenv("TEMP")
    assert node_tmpdir() == "/tmp"


def test_node_tmpdir_keeps_a_lone_slash(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TMPDIR", "/")
    assert node_tmpdir() == "/"


def test_temp_artifacts_dir_is_a_new_private_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path) + "/")
    first = create_temp_artifacts_dir()
    second = create_temp_artifacts_dir()
    assert first != second
    assert re.fullmatch(re.escape(str(tmp_path)) + r"/xcsh-task-[0-9a-f]{16}", first)
    assert stat.S_IMODE(os.stat(first).st_mode) == 0o700
    assert ArtifactManager(first + ".jsonl").save("output", "bash") == "0"
