"""Everything the store creates under the agent dir is private: folders 0700, files 0600."""

from __future__ import annotations

import base64
import os
import stat
from pathlib import Path

import pytest
from manager_helpers import assistant, user

from xcsh_store import HistoryStorage, OutputSink, SessionManager
from xcsh_store.index import SessionIndex

# Under the common umask 022, SQLite's and Python's defaults would be world-readable.
pytestmark = pytest.mark.usefixtures("usual_umask")


def _modes(root: Path) -> dict[str, str]:
    """Every folder and file below (and including) ``root`` with its permission bits."""
    found = {str(root): oct(stat.S_IMODE(root.stat().st_mode))}
    for folder, folders, files in os.walk(root):
        for name in folders + files:
            path = os.path.join(folder, name)
            found[path] = oct(stat.S_IMODE(os.lstat(path).st_mode))
    return found


def _not_private(root: Path) -> dict[str, str]:
    return {
        path: mode
        for path, mode in _modes(root).items()
        if mode != ("0o700" if os.path.isdir(path) else "0o600")
    }


def _use_everything(agent_dir: Path) -> None:
    """Sessions, blobs, artifacts, a fork, a move, history, the index, GC and verify."""
    image = base64.b64encode(os.urandom(2048)).decode()
    with SessionManager.create("/work/first") as manager:
        manager.append_message(
            {"role": "user", "content": [{"type": "image", "data": image, "mimeType": "image/png"}]}
        )
        manager.append_message(assistant())
        manager.save_artifact("tool output", "bash")
        allocated = manager.allocate_artifact_path("read")
        assert allocated is not None
        sink = OutputSink(artifact_path=allocated[1], artifact_id=allocated[0], spill_threshold=10)
        sink.push("x" * 100)
        sink.dump()
        manager.set_session_name("named")
        manager.fork()
        manager.append_message(user("after the fork"))
        manager.move_to("/work/second")
    with HistoryStorage.open() as history:
        history.add("a prompt")
        history.flush()
    with SessionIndex.open() as index:
        index.sync()
        index.blob_gc()
        index.verify()


def test_every_folder_and_file_the_store_creates_is_private(agent_dir):
    _use_everything(agent_dir)
    assert _not_private(agent_dir) == {}


def test_a_new_agent_dir_and_its_missing_parents_are_private(tmp_path, monkeypatch):
    agent = tmp_path / "new" / "parent" / "agent"
    monkeypatch.setenv("XCSH_AGENT_DIR", str(agent))
    with SessionManager.create("/work/first") as manager:
        manager.append_message(user("hello"))
        manager.append_message(assistant())
    assert _not_private(tmp_path / "new") == {}


def test_sqlite_side_files_are_private_while_the_databases_are_open(agent_dir):
    with HistoryStorage.open() as history, SessionIndex.open() as index:
        history.add("a prompt")
        history.flush()
        index.sync()
        side_files = [path for path in _modes(agent_dir) if path.endswith(("-wal", "-shm"))]
        assert len(side_files) == 4, side_files
        assert _not_private(agent_dir) == {}
