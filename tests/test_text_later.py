"""Usage first, search text after (issue 28, item 4): a usage-first sync writes every row of the
files it reads whole but their search rows, marks them text_pending, and answers usage and
listings as a full sync would; a later sync (or search) adds the search text; a search that
runs while some is missing says its results are partial; a sync killed in its text pass leaves
an index that verifies clean and that the next sync completes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner
from real_home import RealHome

from xcsh_store.cli.app import cli
from xcsh_store.index import SessionIndex
from xcsh_store.index.write import sync as sync_module

# A word of the text of several fixtures.
WORD = "refactor"
CLAUDE_FILE = "apanloco__random__claude-session.jsonl"


@pytest.fixture
def text_later_always(monkeypatch: pytest.MonkeyPatch) -> None:
    """A usage-first sync puts the text off whatever it reads (the fixtures are far smaller
    than the bytes that make it worth it in use)."""
    monkeypatch.setattr(sync_module, "TEXT_LATER_MIN_BYTES", 0)


def append_prompt(path: Path, text: str) -> None:
    """A user line after the file's last, as Claude Code writes one."""
    last = orjson.loads(path.read_bytes().splitlines()[-1])
    line = {
        **last,
        "parentUuid": last["uuid"],
        "uuid": "00000000-0000-4000-8000-000000000001",
        "message": {"role": "user", "content": text},
    }
    with path.open("ab") as stream:
        stream.write(orjson.dumps(line) + b"\n")


def usage_totals(index: SessionIndex) -> list[tuple[object, ...]]:
    return [
        (row.key, row.input_tokens, row.output_tokens, row.cache_read_tokens, row.cost)
        for row in index.usage(by=("session", "model"))
    ]


def hits(index: SessionIndex, query: str) -> list[tuple[str, str | None]]:
    return sorted((hit.session_id, hit.entry_id) for hit in index.search(query, limit=1000))


@pytest.fixture
def reference(tmp_path: Path, real_home: RealHome) -> Iterator[SessionIndex]:
    """An index of the same home built by a plain sync."""
    with SessionIndex.open(str(tmp_path / "reference")) as index:
        index.sync()
        yield index


def test_a_usage_first_sync_answers_usage_as_a_full_sync_does(
    agent_dir: Path, real_home: RealHome, text_later_always: None, reference: SessionIndex
):
    with SessionIndex.open(str(agent_dir)) as index:
        report = index.sync(text=False)
        assert report.text_pending == len(real_home.files)
        assert usage_totals(index) == usage_totals(reference)
        assert [s.session_id for s in index.list_sessions()] == [
            s.session_id for s in reference.list_sessions()
        ]


def test_a_usage_first_sync_leaves_search_text_for_later(
    agent_dir: Path, real_home: RealHome, text_later_always: None
):
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync(text=False)
        assert index.text_pending() > 0
        assert hits(index, WORD) == []


def test_the_next_sync_adds_the_search_text(
    agent_dir: Path, real_home: RealHome, text_later_always: None, reference: SessionIndex
):
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync(text=False)
        report = index.sync()
        assert (report.text_files_indexed, report.text_pending) == (report.files_seen, 0)
        assert hits(index, WORD) == hits(reference, WORD) != []
        assert index.verify().clean


def test_an_index_with_text_pending_verifies_clean(
    agent_dir: Path, real_home: RealHome, text_later_always: None
):
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync(text=False)
        assert index.verify().clean


def test_an_append_to_a_file_with_text_pending_is_searchable_at_once(
    agent_dir: Path, real_home: RealHome, text_later_always: None
):
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync(text=False)
        append_prompt(real_home.files[CLAUDE_FILE], "zebrafinch migration")
        index.sync(text=False)  # an append is read with its search text
        assert len(hits(index, "zebrafinch")) == 1
        index.sync()
        assert index.text_pending() == 0
        assert len(hits(index, "zebrafinch")) == 1
        assert index.verify().clean


def test_search_indexes_the_text_that_was_put_off(
    agent_dir: Path, real_home: RealHome, text_later_always: None, reference: SessionIndex
):
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync(text=False)
    result = CliRunner().invoke(cli, ["search", WORD, "--limit", "1000", "--json"])
    assert result.exit_code == 0, result.output
    assert "Partial results" not in result.stderr
    with SessionIndex.open(str(agent_dir)) as index:
        assert index.text_pending() == 0
        assert hits(index, WORD) == hits(reference, WORD)


def test_a_search_says_when_its_results_are_partial(
    agent_dir: Path, real_home: RealHome, text_later_always: None
):
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync(text=False)
    append_prompt(real_home.files[CLAUDE_FILE], "zebrafinch migration")
    # --no-sync: the index as it is, its text not added either.
    result = CliRunner().invoke(cli, ["--no-sync", "search", WORD])
    assert result.exit_code == 0, result.output
    assert result.stderr.startswith("Partial results: the search text of ")
    assert "still being indexed" in result.stderr
    # A search brings the index up to date (the changed file read), then adds the text.
    result = CliRunner().invoke(cli, ["search", WORD])
    assert result.exit_code == 0, result.output
    assert "Partial results" not in result.stderr


_KILLED_IN_TEXT_PASS = """
import sys, time
from xcsh_store.index import SessionIndex
from xcsh_store.index.write import sync, text_later

sync.TEXT_LATER_MIN_BYTES = 0
text_later.COMMIT_EVERY_VALUES = 1  # each file's text committed on its own

def progress(done, total, path):
    if done and path:
        print("in the text pass", flush=True)
        time.sleep(60)

with SessionIndex.open(sys.argv[1]) as index:
    index.sync(text=False, workers=1)
    index.index_pending_text(progress, workers=1)
"""


def test_a_sync_killed_in_its_text_pass_leaves_an_index_the_next_sync_completes(
    agent_dir: Path, real_home: RealHome, reference: SessionIndex
):
    package = Path(__file__).resolve().parents[1]
    child = subprocess.Popen(
        [sys.executable, "-c", _KILLED_IN_TEXT_PASS, str(agent_dir)],
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(package)},
        text=True,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline() == "in the text pass\n"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    with SessionIndex.open(str(agent_dir)) as index:
        pending = index.text_pending()
        assert 0 < pending < len(real_home.files)
        assert index.verify().clean
        index.sync()
        assert index.text_pending() == 0
        assert index.verify().clean
        assert hits(index, WORD) == hits(reference, WORD) != []


def test_sync_says_it_added_the_text_that_was_put_off(
    agent_dir: Path, real_home: RealHome, text_later_always: None
):
    with SessionIndex.open(str(agent_dir)) as index:
        pending = index.sync(text=False).text_pending
    result = CliRunner().invoke(cli, ["sync", "--json"])
    assert result.exit_code == 0, result.output
    report = orjson.loads(result.stdout)
    assert (report["text_files_indexed"], report["text_pending"]) == (pending, 0)


def test_the_web_and_mcp_searches_say_when_their_results_are_partial(
    agent_dir: Path, real_home: RealHome, text_later_always: None
):
    from starlette.testclient import TestClient
    from web_server import LOCAL

    from xcsh_store.agent_tools.tools import search_sessions
    from xcsh_store.web import create_app

    with SessionIndex.open(str(agent_dir)) as index:
        index.sync(text=False)
        pending = index.text_pending()
    assert pending
    client = TestClient(create_app(str(agent_dir), sync_every=None), base_url=LOCAL)
    page = client.get("/search", params={"q": WORD}).text
    assert f"the search text of {pending} session files is still being indexed" in page
    with SessionIndex.open(str(agent_dir), read_only=True) as index:
        assert "still being indexed" in search_sessions(index, WORD)["partial"]
    with SessionIndex.open(str(agent_dir)) as index:
        index.index_pending_text()
    assert "still being indexed" not in client.get("/search", params={"q": WORD}).text
    with SessionIndex.open(str(agent_dir), read_only=True) as index:
        assert "partial" not in search_sessions(index, WORD)


def test_serve_and_mcp_index_the_text_that_was_put_off_in_the_background(
    agent_dir: Path, real_home: RealHome, text_later_always: None, reference: SessionIndex
):
    from xcsh_store.index import Refresher

    with SessionIndex.open(str(agent_dir)) as index:
        index.sync(text=False)
    refresher = Refresher(str(agent_dir), every=0)
    try:
        refresher.refresh()
        refresher.wait_for_text()
    finally:
        refresher.close()
    with SessionIndex.open(str(agent_dir), read_only=True) as index:
        assert index.text_pending() == 0
        assert hits(index, WORD) == hits(reference, WORD)
