"""The names and dates a user sees of sessions on a real machine (issue 25, items 6-10): on the
real fixtures laid out where their agents keep them (real_home: copied with fresh mtimes, as
after restoring a backup), each stated on its own here and compared with the index and the CLI.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from real_home import RealHome
from session_builder import append, header, message, sessions_dir, write_session

from xcsh_store.cli.app import cli
from xcsh_store.format.jsonl import parse_line
from xcsh_store.index import SessionIndex
from xcsh_store.times import iso_millis, parse_iso


def run_json(*args: str) -> Any:
    result = CliRunner().invoke(cli, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def objects(path: Path) -> list[dict[str, Any]]:
    """Every JSON object of a file, in order (two glued on one line: both)."""
    return [value for line in path.read_bytes().splitlines(True) for value in parse_line(line)]


# --------------------------------------------------------------------------------------------
# 10. modified is the session's last activity


def newest_timestamp(path: Path) -> str | None:
    """The newest ``timestamp`` of the file's lines, in UTC with milliseconds; None: none has
    one."""
    moments = [
        moment
        for value in objects(path)
        if isinstance(value.get("timestamp"), str)
        and (moment := parse_iso(value["timestamp"])) is not None
    ]
    return iso_millis(max(moments)) if moments else None


def expected_modified(path: Path) -> str:
    return newest_timestamp(path) or iso_millis(path.stat().st_mtime)


def test_modified_is_the_newest_line_not_the_copy_time(real_home: RealHome, index: SessionIndex):
    index.sync()
    listed = index.list_sessions()
    assert len(listed) == len(real_home.files)
    expected = {str(path): expected_modified(path) for path in real_home.files.values()}
    assert {session.path: iso_millis(session.modified) for session in listed} == expected
    # Newest first, by that time (ties in file id order).
    assert [iso_millis(session.modified) for session in listed] == sorted(
        expected.values(), reverse=True
    )
    today = datetime.now(UTC).date()
    assert all(session.modified.date() != today for session in listed)
    shown = {item["path"]: item["modified"] for item in run_json("ls", "--limit", "0")}
    assert shown == expected


def test_touching_a_file_changes_neither_its_modified_time_nor_its_place(
    real_home: RealHome, index: SessionIndex
):
    index.sync()
    path = real_home.files["sheurich__episodic-memory__claude-tiny-conversation.jsonl"]
    before = [session.path for session in index.list_sessions()]
    long_ago = datetime(2020, 1, 1, tzinfo=UTC).timestamp()
    os.utime(path, (long_ago, long_ago))
    index.sync()
    (session,) = [item for item in index.list_sessions() if item.path == str(path)]
    assert iso_millis(session.modified) == newest_timestamp(path) > "2025"
    assert session.modified >= session.created
    assert [session.path for session in index.list_sessions()] == before
    assert index.verify().clean


def test_lines_appended_later_move_modified_forward(agent_dir: Path, index: SessionIndex):
    path = sessions_dir(agent_dir) / "grows.jsonl"
    first = message("u1", None, "user", "first") | {"timestamp": "2026-03-01T10:00:00.000Z"}
    write_session(path, [header("grows"), first])
    index.sync()
    assert iso_millis(index.find_session("grows").modified) == "2026-03-01T10:00:00.000Z"
    # Another offset, more digits: the same instant in UTC is what counts.
    later = message("a1", "u1", "assistant", "later") | {"timestamp": "2026-03-01T12:30:00+02:00"}
    unstamped = {k: v for k, v in message("u2", "a1", "user", "none").items() if k != "timestamp"}
    append(path, later, unstamped)
    report = index.sync()
    assert report.files_reindexed == 0  # read on from the old end
    assert iso_millis(index.find_session("grows").modified) == "2026-03-01T10:30:00.000Z"
    assert index.verify().clean


def test_a_file_whose_lines_have_no_time_is_modified_when_its_file_was(
    agent_dir: Path, index: SessionIndex
):
    path = sessions_dir(agent_dir) / "untimed.jsonl"
    untimed = {k: v for k, v in header("untimed").items() if k != "timestamp"}
    write_session(path, [untimed])
    os.utime(path, (1_700_000_000, 1_700_000_000))
    index.sync()
    assert index.find_session("untimed").modified.timestamp() == 1_700_000_000
    append(path, message("u1", None, "user", "now timed"))
    index.sync()
    assert iso_millis(index.find_session("untimed").modified) == "2026-01-01T00:02:00.000Z"
    assert index.verify().clean
