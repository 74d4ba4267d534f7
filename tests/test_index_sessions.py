"""Listing and finding sessions: newest first, by cwd, by id, file name or path prefix."""

from __future__ import annotations

import pytest
from session_builder import copy_fixtures

from xcsh_store.errors import SessionNotFoundError


def test_list_and_find_sessions(agent_dir, index):
    copy_fixtures(agent_dir)
    index.sync()
    sessions = index.list_sessions()
    assert len(sessions) == 31
    assert [s.modified for s in sessions] == sorted((s.modified for s in sessions), reverse=True)
    assert len(index.list_sessions(limit=3)) == 3
    assert {s.cwd for s in index.list_sessions(cwd="/tmp/pi-v3")} == {"/tmp/pi-v3"}
    assert index.find_session("2638DAEE").session_id.startswith("2638daee")
    by_name = index.find_session("badlogic__pi-mono__compact")
    assert by_name.path.endswith("badlogic__pi-mono__compact.jsonl")
    assert index.find_session(by_name.path).file_id == by_name.file_id
    assert index.find_session("compac").file_id == by_name.file_id  # after the last "_"
    with pytest.raises(SessionNotFoundError):
        index.find_session("no-such-session")
