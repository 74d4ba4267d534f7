"""``xcsh-store watch`` as a real process over a real agent dir, while other real processes
append to, move and delete session files: the index follows, and each change is one JSON line."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from helpers.watch_process import DEADLINE, Watch
from session_builder import header, message, write_session

from xcsh_store.index import SessionIndex

pytest.importorskip("watchfiles")


@pytest.fixture
def watch(agent_dir: Path) -> Iterator[Callable[..., Watch]]:
    started: list[Watch] = []

    def start(*extra: str) -> Watch:
        (agent_dir / "sessions").mkdir(parents=True, exist_ok=True)
        started.append(Watch(agent_dir, *extra))
        return started[-1]

    yield start
    for running in started:
        if running.process.poll() is None:
            running.process.kill()
        running.process.wait()


def run_writer(code: str, *arguments: str) -> None:
    """Another process does something to the files (and is done when this returns)."""
    subprocess.run([sys.executable, "-c", code, *arguments], check=True, timeout=DEADLINE)


APPENDER = """
import json, sys, time
path, count = sys.argv[1], int(sys.argv[2])
for number in range(count):
    line = {"type": "message", "id": f"w{number}", "parentId": f"w{number - 1}" if number else "u1",
            "timestamp": "2026-01-01T00:00:05.000Z",
            "message": {"role": "user", "content": [{"type": "text", "text": f"appended{number}"}]}}
    with open(path, "a") as handle:
        handle.write(json.dumps(line) + "\\n")
    time.sleep(0.05)
"""


def indexed_paths(agent_dir: Path) -> set[str]:
    with SessionIndex.open(str(agent_dir), read_only=True) as index:
        return {session.path for session in index.list_sessions()}


def new_session(path: Path, session_id: str, word: str) -> Path:
    return write_session(path, [header(session_id), message("u1", None, "user", word)])


def test_appends_by_another_process_become_searchable(agent_dir, watch):
    running = watch()
    path = new_session(agent_dir / "sessions" / "--p--" / "a.jsonl", "aaa", "zebra")
    running.wait_for(lambda line: line["change"] == "indexed" and line["path"] == str(path))
    run_writer(APPENDER, str(path), "20")
    last = running.wait_for(lambda line: line.get("entries") == 21)  # u1 and 20 appended
    assert (last["change"], last["session"]) == ("indexed", "aaa")
    with SessionIndex.open(str(agent_dir), read_only=True) as index:
        assert [hit.entry_id for hit in index.search("appended19")] == ["w19"]


def test_a_file_moved_between_project_folders_keeps_its_session(agent_dir, watch):
    old = new_session(agent_dir / "sessions" / "--one--" / "a.jsonl", "aaa", "zebra")
    running = watch()
    (agent_dir / "sessions" / "--two--").mkdir()
    run_writer("import os, sys; os.rename(sys.argv[1], sys.argv[2])", str(old),
               str(agent_dir / "sessions" / "--two--" / "a.jsonl"))  # fmt: skip
    new = str(agent_dir / "sessions" / "--two--" / "a.jsonl")
    # The sync that sees the move says so by the new name ("added") when the rename's events
    # woke it, or by its count of files renamed ("moved") when the folder's creation woke it
    # after the rename: the machine's load decides how events are batched.
    running.wait_for(
        lambda line: (
            (line["change"] == "added" and line.get("path") == new) or line["change"] == "moved"
        )
    )
    with SessionIndex.open(str(agent_dir), read_only=True) as index:
        assert [(s.path, s.id) for s in index.list_sessions()] == [(new, "aaa")]


def test_a_moved_folder_and_a_deleted_root_are_followed(agent_dir, watch):
    new_session(agent_dir / "sessions" / "--one--" / "a.jsonl", "aaa", "zebra")
    running = watch()
    sessions = agent_dir / "sessions"
    run_writer("import os, sys; os.rename(sys.argv[1], sys.argv[2])",
               str(sessions / "--one--"), str(sessions / "--renamed--"))  # fmt: skip
    running.wait_for(lambda line: line["change"] == "moved")
    assert indexed_paths(agent_dir) == {str(sessions / "--renamed--" / "a.jsonl")}
    # A missing root keeps its sessions (a disk not mounted); back with a new file in it, the
    # files that are gone go and the new one is indexed.
    run_writer("import shutil, sys; shutil.rmtree(sys.argv[1])", str(sessions))
    back = new_session(sessions / "--again--" / "b.jsonl", "bbb", "giraffe")
    running.wait_for(lambda line: line.get("path") == str(back) and line["change"] == "indexed")
    running.wait_for(lambda line: line["change"] == "removed")
    assert indexed_paths(agent_dir) == {str(back)}


def test_a_deleted_index_db_is_rebuilt(agent_dir, watch):
    path = new_session(agent_dir / "sessions" / "--p--" / "a.jsonl", "aaa", "zebra")
    running = watch()
    os.unlink(agent_dir / "index.db")
    line = running.wait_for(lambda line: line["change"] == "synced" and line["reason"] != "start")
    assert line["reason"] == "index.db was deleted or replaced"
    assert indexed_paths(agent_dir) == {str(path)}


def test_an_extra_root_deleted_and_recreated_is_watched_again(agent_dir, tmp_path, watch):
    extra = tmp_path / "elsewhere"
    new_session(extra / "--x--" / "a.jsonl", "aaa", "zebra")
    subprocess.run(
        [sys.executable, "-m", "xcsh_store", "--agent-dir", str(agent_dir), "sync", "--init",
         "--add-root", str(extra)], check=True, capture_output=True, timeout=DEADLINE,
    )  # fmt: skip
    running = watch()
    run_writer("import shutil, sys; shutil.rmtree(sys.argv[1])", str(extra))
    running.wait_for(lambda line: line["change"] == "synced" and "root" in line["reason"])
    back = new_session(extra / "--x--" / "b.jsonl", "bbb", "giraffe")
    running.wait_for(lambda line: line.get("path") == str(back))
    assert str(back) in indexed_paths(agent_dir)


def test_a_burst_of_files_ends_in_an_index_equal_to_a_sync(agent_dir, watch):
    running = watch()
    run_writer(
        "import json, os, sys\n"
        "for n in range(400):\n"
        "    folder = os.path.join(sys.argv[1], f'--p{n % 7}--')\n"
        "    os.makedirs(folder, exist_ok=True)\n"
        "    with open(os.path.join(folder, f's{n}.jsonl'), 'w') as f:\n"
        "        f.write(json.dumps({'type': 'session', 'version': 3, 'id': f's{n}',"
        " 'timestamp': '2026-01-01T00:00:00.000Z', 'cwd': '/w'}) + '\\n')\n",
        str(agent_dir / "sessions"),
    )
    end = time.monotonic() + DEADLINE
    while len(indexed_paths(agent_dir)) < 400 and time.monotonic() < end:
        time.sleep(0.2)
    assert running.stop() == 0
    with SessionIndex.open(str(agent_dir), read_only=True) as index:
        report = index.verify()
    assert (report.files_checked, report.clean) == (400, True)


@pytest.mark.parametrize("number", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_stops_it_cleanly(watch, number):
    running = watch()
    assert running.stop(number) == 0
    assert running.process.stderr.read() == b""
