"""The agent dir given to the SessionManager factories: blobs, breadcrumbs, recorded roots and
default session folders go there whatever $XCSH_AGENT_DIR says; the demo passes its folder in
and leaves the environment alone."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from xcsh_store.demo.build import build_demo
from xcsh_store.format.session_roots import read_session_roots
from xcsh_store.paths import encode_cwd
from xcsh_store.session.manager import SessionManager

CWD = "/work/project"
ASSISTANT = {"role": "assistant", "content": [{"type": "text", "text": "hi"}], "timestamp": 2}
# The pinned terminal of conftest: the manager leaves a breadcrumb under this name.
TERMINAL = "pytest-terminal"


@pytest.fixture
def given(tmp_path: Path) -> Path:
    """The agent dir passed in; $XCSH_AGENT_DIR (conftest's) stays elsewhere."""
    return tmp_path / "given"


@pytest.fixture
def elsewhere(agent_dir: Path) -> Iterator[Path]:
    """$XCSH_AGENT_DIR, which must stay untouched."""
    yield agent_dir
    assert not agent_dir.exists()


def test_create_writes_its_session_blobs_and_breadcrumb_in_the_agent_dir_given(given, elsewhere):
    with SessionManager.create(CWD, agent_dir=str(given)) as manager:
        stored = manager.put_blob(b"image bytes")
        manager.append_message(ASSISTANT)
        session_file = manager.get_session_file()
    assert session_file is not None
    assert Path(session_file).parent == given / "sessions" / encode_cwd(CWD)
    assert Path(stored.path).parent == given / "blobs"
    assert (given / "terminal-sessions" / TERMINAL).read_text().splitlines()[1] == session_file


def test_a_custom_folder_is_recorded_as_a_root_of_the_agent_dir_given(tmp_path, given, elsewhere):
    custom = tmp_path / "custom"
    with SessionManager.create(CWD, str(custom), agent_dir=str(given)) as manager:
        manager.put_blob(b"image bytes")
    assert read_session_roots(str(given)) == [str(custom)]


def test_a_session_of_another_agent_dir_keeps_its_blobs_in_the_one_given(given, tmp_path):
    other = tmp_path / "other" / "sessions" / "--p--"
    with SessionManager.create(CWD, str(other), agent_dir=str(given)) as manager:
        stored = manager.put_blob(b"image bytes")
    assert Path(stored.path).is_relative_to(given / "blobs")
    assert not (tmp_path / "other" / "blobs").exists()


def test_open_and_fork_from_use_the_agent_dir_given(given, elsewhere, tmp_path):
    with SessionManager.create(CWD, agent_dir=str(given)) as first:
        first.append_message(ASSISTANT)
        source = first.get_session_file()
    assert source is not None
    with SessionManager.open(source, agent_dir=str(given)) as reopened:
        assert Path(reopened.put_blob(b"one").path).is_relative_to(given / "blobs")
    with SessionManager.fork_from(source, "/work/fork", agent_dir=str(given)) as fork:
        fork_file = fork.get_session_file()
        assert Path(fork.put_blob(b"two").path).is_relative_to(given / "blobs")
    assert fork_file is not None
    assert Path(fork_file).parent == given / "sessions" / encode_cwd("/work/fork")


def test_continue_recent_and_list_look_in_the_agent_dir_given(given, elsewhere):
    with SessionManager.create(CWD, agent_dir=str(given)) as first:
        first.append_message(ASSISTANT)
        path = first.get_session_file()
    # Without the breadcrumb, continue_recent finds the newest session of the folder.
    (given / "terminal-sessions" / TERMINAL).unlink()
    with SessionManager.continue_recent(CWD, agent_dir=str(given)) as resumed:
        assert resumed.get_session_file() == path
    assert [info.path for info in SessionManager.list(CWD, agent_dir=str(given))] == [path]


def test_an_in_memory_session_puts_its_blobs_in_the_agent_dir_given(given, elsewhere):
    with SessionManager.in_memory(CWD, agent_dir=str(given)) as manager:
        stored = manager.put_blob(b"pasted image")
    assert Path(stored.path).is_relative_to(given / "blobs")


def test_move_to_goes_to_the_default_folder_of_the_agent_dir_given(tmp_path, given, elsewhere):
    custom = tmp_path / "custom"
    with SessionManager.create(CWD, str(custom), agent_dir=str(given)) as manager:
        manager.append_message(ASSISTANT)
        manager.move_to("/work/elsewhere")
        moved = manager.get_session_file()
    assert moved is not None
    assert Path(moved).parent == given / "sessions" / encode_cwd("/work/elsewhere")


class _WatchedEnviron(dict[str, str]):
    """os.environ that remembers every variable set or removed."""

    def __init__(self, values: dict[str, str]) -> None:
        super().__init__(values)
        self.changed: list[str] = []

    def __setitem__(self, key: str, value: str) -> None:
        self.changed.append(key)
        super().__setitem__(key, value)

    def __delitem__(self, key: str) -> None:
        self.changed.append(key)
        super().__delitem__(key)


def test_the_demo_leaves_the_environment_alone(tmp_path, monkeypatch, elsewhere):
    watched = _WatchedEnviron(dict(os.environ))
    monkeypatch.setattr(os, "environ", watched)
    demo = tmp_path / "demo"
    report = build_demo(str(demo))
    assert watched.changed == []
    assert all(Path(path).is_relative_to(demo) for path in report.sessions.values())
    assert any((demo / "blobs").rglob("*"))
