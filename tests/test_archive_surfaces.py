"""A gone session on every surface (issue 34 item 2) besides the CLI's listings (test_archive.py)
and the team index (test_archive_team.py): the picker, the web pages, the MCP tools and
``history --sessions`` answer as before the file was deleted, and mark the session archived.
On the real Claude Code, Codex and pi fixtures laid out as a home (real_home.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from mcp_client import call_tools
from real_home import RealHome

from xcsh_store.cli.app import cli
from xcsh_store.cli.picker.lines import row_line
from xcsh_store.cli.picker.source import SESSIONS, PickSource
from xcsh_store.index import SessionIndex


@pytest.fixture
def gone(agent_dir: Path, real_home: RealHome) -> dict[str, object]:
    """A Claude Code session synced, as the store listed it then (its file is deleted by the
    test, after it asked what it compares)."""
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync(workers=1)
        sessions = index.list_sessions(agents=["claude"])
    chosen = max(
        (session for session in sessions if _words(session.first_prompt or "")),
        key=lambda session: session.message_count,
    )
    return {"id": chosen.session_id, "path": chosen.path, "prompt": chosen.first_prompt}


def _delete_and_sync(agent_dir: Path, path: object) -> None:
    Path(str(path)).unlink()
    with SessionIndex.open(str(agent_dir)) as index:
        report = index.sync(workers=1)
    assert report.files_archived_gone == 1


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z]{6,}", text.lower())


def test_the_picker_lists_and_finds_a_gone_session_with_its_mark(
    agent_dir: Path, gone: dict[str, object]
):
    with SessionIndex.open(str(agent_dir)) as index:
        source = PickSource(index, ["claude"])
        word = _words(str(gone["prompt"]))[0]
        before = [row for row in source.rows(SESSIONS, word) if row.path == gone["path"]]
        assert before and not before[0].archived
        preview = source.preview(before[0])
    _delete_and_sync(agent_dir, gone["path"])
    with SessionIndex.open(str(agent_dir)) as index:
        source = PickSource(index, ["claude"])
        listed = [row for row in source.rows(SESSIONS, "") if row.path == gone["path"]]
        found = [row for row in source.rows(SESSIONS, word) if row.path == gone["path"]]
        assert listed[0].archived and found[0].archived
        assert found[0].value == before[0].value and found[0].text == before[0].text
        again = source.preview(found[0])
    assert again.entries == preview.entries
    assert "⌂ archived" in again.facts
    drawn = "".join(text for _style, text in row_line(found[0], SESSIONS, 100, False))
    assert "⌂" in drawn
    other = next(row for row in listed if row.path != gone["path"]) if len(listed) > 1 else None
    assert other is None or "⌂" not in "".join(t for _s, t in row_line(other, SESSIONS, 100, False))


def test_the_web_pages_show_a_gone_session_marked(agent_dir: Path, gone: dict[str, object], client):
    page = client.get(f"/session/{gone['id']}")
    assert page.status_code == 200 and "⌂ archived" not in page.text
    entries = re.findall(r'id="entry-([^"]+)"', page.text)
    _delete_and_sync(agent_dir, gone["path"])
    again = client.get(f"/session/{gone['id']}")
    assert again.status_code == 200 and "⌂ archived" in again.text
    assert re.findall(r'id="entry-([^"]+)"', again.text) == entries
    listing = client.get("/")
    assert listing.status_code == 200 and "⌂ archived" in listing.text


def test_the_mcp_tools_answer_for_a_gone_session_with_its_mark(
    agent_dir: Path, gone: dict[str, object]
):
    calls = [
        ("list_sessions", {"agent": "claude", "limit": 50}),
        ("get_session", {"session": str(gone["id"]), "limit": 50}),
    ]
    _tools, (listed, page) = call_tools(agent_dir, calls)
    _delete_and_sync(agent_dir, gone["path"])
    _tools, (listed_again, page_again) = call_tools(agent_dir, calls)
    marks = {s["session"]: (s["source"], s["source_gone_at"]) for s in listed_again["sessions"]}
    assert marks[gone["id"]][0] == "archived" and marks[gone["id"]][1]
    assert {mark for key, mark in marks.items() if key != gone["id"]} == {("file", None)}
    assert [s["session"] for s in listed_again["sessions"]] == [
        s["session"] for s in listed["sessions"]
    ]
    assert page_again["entries"] == page["entries"]


def test_history_sessions_answers_as_before(agent_dir: Path, gone: dict[str, object]):
    def prompts() -> list[dict[str, object]]:
        arguments = ["history", "recent", "--sessions", "--limit", "1000", "--json"]
        result = CliRunner().invoke(cli, arguments, catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    before = prompts()
    assert any(prompt.get("session_id") == gone["id"] for prompt in before)
    _delete_and_sync(agent_dir, gone["path"])
    assert prompts() == before
