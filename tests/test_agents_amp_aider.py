"""Amp threads (whole JSON documents) and Aider's chat history (appended Markdown) in the index,
through the agent plugin interface (issue 29): every fixture of tests/fixtures/amp and
tests/fixtures/aider indexes with the values worked out from the file, each with the command
that gives it (``$F`` the fixture):

* Amp: id, title, entries (the thread and each message), tool calls: ``jq -c '[.id, .title,
  (.messages | length + 1), ([.messages[].content[]? | select(.type == "tool_use")] |
  length)]' $F``;
* Aider: runs (one session each): ``grep -c '^# aider chat started at' $F``; prompts (runs of
  consecutive ``#### `` lines): ``python3 -c "import sys; l = open(sys.argv[1]).read().split(
  '\\n'); print(sum(1 for i, x in enumerate(l) if x.startswith('####') and not (i and
  l[i-1].startswith('####'))))" $F``; usage, the rounded ``Tokens:`` lines summed (``k`` times
  1,000) and their ``Cost: $… message``: ``grep -oP '^> Tokens: \\S+ sent, \\S+ received\\.(
  Cost: \\$[\\d.]+ message)?' $F`` added up with the same scaling.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from session_builder import FIXTURES

from xcsh_store.cli.app import cli
from xcsh_store.index import SessionIndex
from xcsh_store.index.model.paths import entry_rows, read_entries

AMP = FIXTURES / "amp"
AIDER = FIXTURES / "aider"

# file: (session id, title, entries, tool calls, cwd)
AMP_FILES = {
    "clbarrell__resume__thread.json": (
        "amp-thread-1", "Amp router refactor", 3, 0, "/Users/example/Code/amp demo",
    ),
    "juspay__shooter__thread.json": ("T-amptest", "Read the file task", 4, 1, None),
    "samzong__Recall__thread.json": (
        "T-0199aaaa-bbbb-7ccc-8ddd-eeeeffff0001", "Amp thread title", 3, 1, "/tmp/amp-project",
    ),
}  # fmt: skip
# file: (runs, prompts, input tokens, output tokens, recorded cost, Tokens lines)
AIDER_FILES = {
    "Aquaticat__Monochromatic__.aider.chat.history.md": (19, 26, 613_500, 24_145, 1.0084, 39),
    "BeehiveInnovations__zen-mcp-server__.aider.chat.history.md": (4, 8, 0, 0, 0, 0),
}


@pytest.fixture
def index(agent_dir: Path, tmp_path: Path):
    """Every Amp fixture in Amp's own folder ($AMP_DATA_DIR, the test's temp home), each Aider
    fixture as the history of a repository below a root added as ``aider:``; synced."""
    threads = Path(os.environ["AMP_DATA_DIR"]) / "threads"
    threads.mkdir(parents=True)
    for name in AMP_FILES:
        shutil.copyfile(AMP / name, threads / name)
    for name in AIDER_FILES:
        repository = tmp_path / "repos" / name.split("__")[1]
        repository.mkdir(parents=True)
        shutil.copyfile(AIDER / name, repository / ".aider.chat.history.md")
    (agent_dir / "sessions").mkdir(parents=True)
    with SessionIndex.open(str(agent_dir)) as opened:
        opened.add_root(str(tmp_path / "repos"), "aider")
        opened.sync(workers=1)
        yield opened


def _session(index: SessionIndex, session_id: str) -> tuple:
    return index.connection.execute(
        "SELECT title, entry_count, cwd, file_id FROM sessions WHERE session_id = ?",
        (session_id,),
    ).fetchall()[0]


@pytest.mark.parametrize("name", sorted(AMP_FILES))
def test_an_amp_thread_is_one_session(index: SessionIndex, name: str):
    session_id, title, entries, tools, cwd = AMP_FILES[name]
    found_title, found_entries, found_cwd, file_id = _session(index, session_id)
    assert (found_title, found_entries, found_cwd) == (title, entries, cwd)
    path = index.connection.execute("SELECT path FROM files WHERE id = ?", (file_id,))
    entries = read_entries(
        path.fetchall()[0][0], entry_rows(index.connection, file_id), None, "amp"
    )
    calls = [
        block
        for entry in entries
        for block in (entry.get("message") or {}).get("content") or ()
        if block.get("type") == "toolCall"
    ]
    assert len(calls) == tools


def test_an_amp_tool_result_is_a_tool_result(index: SessionIndex):
    file_id = _session(index, "T-amptest")[3]
    roles = index.connection.execute(
        "SELECT role FROM entries WHERE session = ? ORDER BY seq", (file_id,)
    ).fetchall()
    assert [role for (role,) in roles] == [None, "user", "assistant", "toolResult"]


def test_amp_epoch_milliseconds_are_times(index: SessionIndex):
    # "created": 1700000000000 (samzong): 2023-11-14T22:13:20Z.
    created = index.connection.execute(
        "SELECT created_at FROM sessions WHERE session_id LIKE 'T-0199%'"
    ).fetchall()[0][0]
    assert created == "2023-11-14T22:13:20.000Z"


@pytest.mark.parametrize("name", sorted(AIDER_FILES))
def test_each_aider_run_is_a_session(index: SessionIndex, name: str):
    runs, prompts, *_ = AIDER_FILES[name]
    found = index.connection.execute(
        "SELECT count(DISTINCT s.file_id), sum(e.role = 'user') FROM sessions AS s"
        " JOIN entries AS e ON e.session = s.file_id WHERE s.agent = 'aider' AND s.cwd LIKE ?",
        (f"%/{name.split('__')[1]}",),
    ).fetchall()[0]
    assert found == (runs, prompts)


@pytest.mark.parametrize("name", sorted(AIDER_FILES))
def test_aider_usage_is_its_tokens_and_cost_lines(index: SessionIndex, name: str):
    *_, tokens_in, tokens_out, cost, lines = AIDER_FILES[name]
    found = index.connection.execute(
        "SELECT count(e.input_tokens), coalesce(sum(e.input_tokens), 0),"
        " coalesce(sum(e.output_tokens), 0), round(coalesce(sum(e.cost), 0), 4)"
        " FROM sessions AS s JOIN entries AS e ON e.session = s.file_id"
        " WHERE s.agent = 'aider' AND s.cwd LIKE ?",
        (f"%/{name.split('__')[1]}",),
    ).fetchall()[0]
    assert found == (lines, tokens_in, tokens_out, cost)


def test_aider_costs_are_recorded_not_estimated(index: SessionIndex):
    rows = {row.key: row for row in index.usage(by="agent")}
    assert rows["aider"].estimated == 0
    assert round(rows["aider"].cost, 4) == 1.0084


def test_an_aider_model_is_split_into_provider_and_model(index: SessionIndex):
    # grep -h 'Tokens:' -B30 $F | grep 'Main model' : every priced reply was gemini's.
    models = index.connection.execute(
        "SELECT DISTINCT provider, model FROM entries WHERE input_tokens IS NOT NULL"
    ).fetchall()
    assert models == [("gemini", "gemini-2.5-pro-preview-05-06")]


def _cli(agent_dir: Path, *args: str) -> str:
    result = CliRunner().invoke(cli, ["--agent-dir", str(agent_dir), *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_search_and_show_read_amp_and_aider_entries_again(index: SessionIndex, agent_dir: Path):
    # "CONVENTIONS": Aquaticat's prompts (grep -c '^####.*CONVENTIONS' $F); "router": the
    # clbarrell thread's messages.
    hits = json.loads(_cli(agent_dir, "search", "CONVENTIONS", "--json", "--limit", "100"))
    assert hits and {hit["agent"] for hit in hits} == {"aider"}
    assert {hit["agent"] for hit in json.loads(_cli(agent_dir, "search", "router", "--json"))} == {
        "amp"
    }
    assert "hi back" in _cli(agent_dir, "show", "T-0199aaaa")


def test_verify_is_clean(index: SessionIndex):
    assert index.verify().clean


def test_an_appended_aider_run_is_the_only_session_read(index: SessionIndex, tmp_path: Path):
    history = tmp_path / "repos" / "zen-mcp-server" / ".aider.chat.history.md"
    with history.open("a") as handle:
        handle.write("\n# aider chat started at 2025-10-24 08:00:00\n\n#### find the yak  \n")
    report = index.sync(workers=1)
    assert report.files_changed == 1
    assert (
        index.connection.execute("SELECT count(*) FROM sessions WHERE agent = 'aider'").fetchall()[
            0
        ][0]
        == sum(runs for runs, *_ in AIDER_FILES.values()) + 1
    )


def test_sync_writes_nothing_beside_amp_and_aider_files(agent_dir: Path, tmp_path: Path):
    folders = _one_of_each(agent_dir, tmp_path, "juspay__shooter__thread.json")
    before = [_snapshot(folder) for folder in folders]
    with SessionIndex.open(str(agent_dir)) as opened:
        opened.add_root(str(tmp_path / "repos"), "aider")
        opened.sync(workers=1)
        opened.verify(repair=True)
    assert [_snapshot(folder) for folder in folders] == before


def _one_of_each(agent_dir: Path, tmp_path: Path, thread: str) -> list[Path]:
    """An Amp thread in Amp's folder, Aquaticat's Aider history in a repository below
    ``tmp_path/repos`` (to add as an aider root), an empty sessions folder: the two folders."""
    threads = Path(os.environ["AMP_DATA_DIR"]) / "threads"
    threads.mkdir(parents=True)
    shutil.copyfile(AMP / thread, threads / "T-1.json")
    repository = tmp_path / "repos" / "r"
    repository.mkdir(parents=True)
    shutil.copyfile(AIDER / sorted(AIDER_FILES)[0], repository / ".aider.chat.history.md")
    (agent_dir / "sessions").mkdir(parents=True)
    return [threads, tmp_path / "repos"]


def _snapshot(root: Path) -> dict[str, tuple[bytes, int, int]]:
    return {
        str(path): (path.read_bytes(), path.stat().st_mtime_ns, path.stat().st_mode)
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def test_a_usage_first_sync_reads_amp_and_aider_with_their_search_text(
    agent_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    # Search text put off is added from the files read again as JSON lines (text_later.py):
    # a plugin's sessions get theirs at once.
    from xcsh_store.index.write import sync as sync_module

    monkeypatch.setattr(sync_module, "TEXT_LATER_MIN_BYTES", 0)
    _one_of_each(agent_dir, tmp_path, "clbarrell__resume__thread.json")
    with SessionIndex.open(str(agent_dir)) as opened:
        opened.add_root(str(tmp_path / "repos"), "aider")
        report = opened.sync(workers=1, text=False)
        assert report.text_pending == 0
        assert [hit.agent for hit in opened.search("router", limit=5)] == ["amp", "amp"]
        assert {hit.agent for hit in opened.search("CONVENTIONS", limit=5)} == {"aider"}
