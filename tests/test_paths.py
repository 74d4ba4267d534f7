"""Paths, names, ids and terminal breadcrumbs."""

from __future__ import annotations

import os
import re
import stat

import pytest

from xcsh_store import paths


def test_agent_dir_comes_from_the_environment(agent_dir):
    assert paths.get_agent_dir() == str(agent_dir)


def test_agent_dir_defaults_to_home(monkeypatch, tmp_path):
    monkeypatch.delenv("XCSH_AGENT_DIR")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert paths.get_agent_dir() == str(tmp_path / ".xcsh" / "agent")


def test_relative_agent_dir_is_made_absolute(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XCSH_AGENT_DIR", "relative/agent")
    assert paths.get_agent_dir() == str(tmp_path / "relative" / "agent")


def test_locations_under_the_agent_dir(tmp_path):
    root = str(tmp_path)
    assert paths.get_sessions_dir(root) == os.path.join(root, "sessions")
    assert paths.get_blobs_dir(root) == os.path.join(root, "blobs")
    assert paths.get_terminal_sessions_dir(root) == os.path.join(root, "terminal-sessions")
    assert paths.get_history_db_path(root) == os.path.join(root, "history.db")
    assert paths.get_index_db_path(root) == os.path.join(root, "index.db")


@pytest.mark.parametrize(
    ("cwd", "encoded"),
    [
        ("/work/pi", "--work-pi--"),
        ("/", "----"),
        ("/a/b/../c/", "--a-c--"),
        ("/Users/me/My Project", "--Users-me-My Project--"),
        ("/tmp/x:y\\z", "--tmp-x-y-z--"),
    ],
)
def test_encode_cwd(cwd, encoded):
    assert paths.encode_cwd(cwd) == encoded


def test_encode_cwd_of_a_relative_path_uses_the_absolute_path(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    assert paths.encode_cwd("sub") == paths.encode_cwd(str(tmp_path / "sub"))


def test_encode_cwd_does_not_resolve_symlinks(tmp_path):
    target = tmp_path / "target"
    target.mkdir()
    link = tmp_path / "link"
    link.symlink_to(target)
    assert paths.encode_cwd(str(link)) != paths.encode_cwd(str(target))


def test_default_session_dir_is_created_private(agent_dir):
    session_dir = paths.get_default_session_dir("/work/pi")
    assert session_dir == str(agent_dir / "sessions" / "--work-pi--")
    assert os.path.isdir(session_dir)
    assert stat.S_IMODE(os.stat(session_dir).st_mode) == 0o700


def test_missing_parents_are_created_private_too(agent_dir):
    previous = os.umask(0o022)
    try:
        paths.get_default_session_dir("/work/pi")
    finally:
        os.umask(previous)
    for folder in (agent_dir, agent_dir / "sessions"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder


def test_existing_folders_keep_their_mode(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o755)
    shared.chmod(0o755)
    paths.ensure_private_dir(str(shared / "mine"))
    assert stat.S_IMODE(shared.stat().st_mode) == 0o755
    assert stat.S_IMODE((shared / "mine").stat().st_mode) == 0o700


def test_a_file_in_the_way_is_an_error(tmp_path):
    (tmp_path / "taken").write_text("")
    with pytest.raises(FileExistsError):
        paths.ensure_private_dir(str(tmp_path / "taken" / "below"))


def test_session_file_name():
    name = paths.session_file_name("2026-02-16T10:20:30.000Z", "0123456789abcdef")
    assert name == "2026-02-16T10-20-30-000Z_0123456789abcdef.jsonl"


def test_session_ids_are_16_hex_unique_and_ordered_by_time():
    ids = [paths.new_session_id() for _ in range(5000)]
    assert all(re.fullmatch(r"[0-9a-f]{16}", value) for value in ids)
    assert len(set(ids)) == len(ids)
    # The top bits are milliseconds since 2015: a later id never has an earlier timestamp.
    assert int(ids[-1], 16) >> 22 >= int(ids[0], 16) >> 22


def test_entry_ids_are_8_hex_and_avoid_existing_ones():
    existing: set[str] = set()
    for _ in range(2000):
        entry_id = paths.new_entry_id(existing)
        assert re.fullmatch(r"[0-9a-f]{8}", entry_id)
        assert entry_id not in existing
        existing.add(entry_id)


def test_entry_id_falls_back_to_a_snowflake_when_everything_collides():
    class Everything:
        def __contains__(self, item: object) -> bool:
            return True

    assert re.fullmatch(r"[0-9a-f]{16}", paths.new_entry_id(Everything()))


def test_terminal_id_is_pinned_by_the_environment(monkeypatch):
    monkeypatch.setenv("XCSH_TERMINAL_ID", "pts/7")
    assert paths.get_terminal_id() == "pts-7"


@pytest.mark.parametrize("value", ["..", ".", "/", "../../etc"])
def test_terminal_id_never_escapes_the_breadcrumb_folder(monkeypatch, value):
    monkeypatch.setenv("XCSH_TERMINAL_ID", value)
    terminal_id = paths.get_terminal_id()
    assert terminal_id is None or ("/" not in terminal_id and terminal_id not in (".", ".."))


def test_terminal_id_from_multiplexer_variables(monkeypatch):
    monkeypatch.delenv("XCSH_TERMINAL_ID")
    monkeypatch.setattr(os, "isatty", lambda fd: False)
    monkeypatch.setenv("TMUX_PANE", "%3")
    assert paths.get_terminal_id() == "tmux-%3"
    monkeypatch.setenv("KITTY_WINDOW_ID", "4")
    assert paths.get_terminal_id() == "kitty-4"


def test_no_terminal_means_no_breadcrumb(monkeypatch, tmp_path):
    monkeypatch.delenv("XCSH_TERMINAL_ID")
    monkeypatch.setattr(os, "isatty", lambda fd: False)
    assert paths.get_terminal_id() is None
    session_file = tmp_path / "s.jsonl"
    session_file.write_text("{}\n")
    paths.write_terminal_breadcrumb("/work", str(session_file))
    assert paths.read_terminal_breadcrumb("/work") is None


def test_breadcrumb_round_trip(agent_dir, tmp_path):
    session_file = tmp_path / "s.jsonl"
    session_file.write_text("{}\n")
    paths.write_terminal_breadcrumb("/work/pi", str(session_file))
    crumb = agent_dir / "terminal-sessions" / "pytest-terminal"
    assert crumb.read_text() == f"/work/pi\n{session_file}\n"
    assert paths.read_terminal_breadcrumb("/work/pi/") == str(session_file)


def test_breadcrumb_for_another_cwd_is_ignored(tmp_path):
    session_file = tmp_path / "s.jsonl"
    session_file.write_text("{}\n")
    paths.write_terminal_breadcrumb("/work/pi", str(session_file))
    assert paths.read_terminal_breadcrumb("/work/other") is None


def test_breadcrumb_to_a_missing_file_is_ignored(tmp_path):
    paths.write_terminal_breadcrumb("/work/pi", str(tmp_path / "gone.jsonl"))
    assert paths.read_terminal_breadcrumb("/work/pi") is None


def test_short_breadcrumb_is_ignored(agent_dir):
    folder = agent_dir / "terminal-sessions"
    folder.mkdir(parents=True)
    (folder / "pytest-terminal").write_text("/work/pi\n")
    assert paths.read_terminal_breadcrumb("/work/pi") is None


def test_artifacts_dir_is_the_session_file_without_extension():
    assert paths.artifacts_dir_for("/s/2026_abc.jsonl") == "/s/2026_abc"


def test_agent_dir_of_a_session_folder(agent_dir):
    assert paths.agent_dir_of("/x/agent/sessions/--p--") == "/x/agent"
    assert paths.agent_dir_of("/x/agent/sessions/--p--/2026_abc/sub") == "/x/agent"
    assert paths.agent_dir_of("/somewhere/else") == str(agent_dir)
    assert paths.agent_dir_of(None) == str(agent_dir)
