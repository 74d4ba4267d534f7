"""An agent dir copied or moved with its index reads its own files, never the old place's."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from session_builder import PROJECT, header, message, write_session

from xcsh_store import HistoryStorage
from xcsh_store.cli import cli
from xcsh_store.index import SessionIndex
from xcsh_store.paths import get_history_db_path

SESSION = "moved-one"


def run(agent: Path, *args: str) -> object:
    result = CliRunner().invoke(cli, ["--agent-dir", str(agent), *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.fixture
def original(tmp_path: Path) -> Path:
    agent = tmp_path / "agent"
    write_session(
        agent / "sessions" / PROJECT / "2026-01-01_moved-one.jsonl",
        [header(SESSION), message("u1", None, "user", "kept words alpha"),
         message("a1", "u1", "assistant", "the reply omega")],
    )  # fmt: skip
    history = HistoryStorage.open(get_history_db_path(str(agent)))
    history.add("kept words alpha", "/work/demo")
    history.close()
    with SessionIndex.open(str(agent)) as index:
        index.sync()
    return agent


def _rewrite_as_decoy(agent: Path) -> None:
    """Same sizes, other words: an index reading here shows "DECOY"."""
    for path in (agent / "sessions").rglob("*.jsonl"):
        path.write_bytes(path.read_bytes().replace(b"alpha", b"DECOY").replace(b"omega", b"DECOY"))


def _place(original: Path, tmp_path: Path, how: str) -> Path:
    """Copy or move the agent dir; the old place then holds other words, or nothing."""
    moved = tmp_path / "elsewhere" / "agent2"
    if how == "move":
        moved.parent.mkdir()
        os.rename(original, moved)
        shutil.copytree(moved, original, symlinks=True)
    else:
        shutil.copytree(original, moved, symlinks=True)
    if how == "copy, then the original is deleted":
        shutil.rmtree(original)
    else:
        _rewrite_as_decoy(original)
    return moved


HOW = ["copy, then the original is changed", "copy, then the original is deleted", "move"]


@pytest.mark.parametrize("how", HOW)
def test_show_search_and_context_read_the_copy_before_any_sync(original, tmp_path, how):
    moved = _place(original, tmp_path, how)
    own_file = str(moved / "sessions" / PROJECT / "2026-01-01_moved-one.jsonl")
    listed = run(moved, "ls")
    assert [item["path"] for item in listed] == [own_file]
    shown = run(moved, "show", SESSION)
    assert shown["session"]["path"] == own_file
    texts = [entry["message"]["content"][0]["text"] for entry in shown["entries"]]
    assert texts == ["kept words alpha", "the reply omega"]
    context = run(moved, "show", SESSION, "--context")["context"]
    assert [item["content"][0]["text"] for item in context["messages"]] == texts
    hits = run(moved, "search", "omega")
    assert [hit["path"] for hit in hits] == [own_file]
    assert run(moved, "show", own_file)["session"]["path"] == own_file
    assert run(moved, "search", "DECOY") == []
    with SessionIndex.open(str(moved), read_only=True) as index:
        assert [hit.session_path for hit in index.history_search("alpha")] == [own_file]


@pytest.mark.parametrize("how", HOW)
def test_the_next_sync_rewrites_the_stored_paths(original, tmp_path, how):
    moved = _place(original, tmp_path, how)
    run(moved, "sync")
    with SessionIndex.open(str(moved), read_only=True) as index:
        paths = index.connection.execute("SELECT path FROM files UNION SELECT path FROM sessions")
        assert [row[0] for row in paths] == [
            str(moved / "sessions" / PROJECT / "2026-01-01_moved-one.jsonl")
        ]
        assert index.relocation is None
        assert index.verify().clean
    assert run(moved, "search", "omega")[0]["path"].startswith(str(moved) + os.sep)


def test_verify_of_an_unsynced_copy_says_to_sync(original, tmp_path):
    moved = _place(original, tmp_path, "copy, then the original is changed")
    with SessionIndex.open(str(moved), read_only=True) as index:
        report = index.verify()
    assert not report.clean
    assert "run sync" in report.differences[str(moved)][0]
