"""Usage first, for real (issue 40, item 1): a sync asked for usage alone (``sync(entries=False)``,
the ``usage`` verb's first run) reads only the lines of the Claude Code, Codex, Gemini CLI, Qwen
Code and GitHub Copilot CLI files that hold usage (and only the messages of Gemini CLI's document
chats and opencode's sessions) and writes one row per request, no entry rows;
``usage`` then gives the same totals as a full sync, to the token and the cent; every read that
wants entries (ls, show, search, the web app, MCP) reads those files whole first, or says its
results are partial; a sync killed between the two passes leaves an index the next sync
completes."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from agent_homes import (
    DOCUMENT_PLACES,
    PRICED_DOCUMENT,
    lay_out_agents,
    lay_out_documents,
    lay_out_priced_gemini_document,
    opencode_database,
)
from click.testing import CliRunner
from helpers.agent_lines import FORMATS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from real_home import RealHome

from xcsh_store.cli.app import cli
from xcsh_store.index import SessionIndex
from xcsh_store.index.write import sync as sync_module
from xcsh_store.index.write.lean.codex import line_starts

CLAUDE_FILE = "apanloco__random__claude-session.jsonl"
WORD = "refactor"
# The agents whose files the lean pass reads (the others': the full read).
LEAN_AGENTS = {"claude", "codex", "gemini", "qwen", "copilot", "opencode"}
JSONL_AGENTS = ("gemini", "qwen", "copilot")
OPENCODE_FIXTURE = "opencode/jazzyalex__agent-sessions__storage_v2"


@pytest.fixture
def real_home(real_home: RealHome) -> RealHome:
    """conftest's real home, with the Gemini CLI, Qwen Code and GitHub Copilot CLI fixtures
    where those agents keep them, and the Gemini CLI documents and opencode storage tree
    (one of them priced: the JSONL chat as a document) and opencode's storage tree, where
    those agents keep them (agent_homes.py)."""
    lay_out_agents(real_home.home, JSONL_AGENTS)
    lay_out_documents(real_home.home)
    lay_out_priced_gemini_document(real_home.home)
    return real_home


@pytest.fixture
def lean_always(monkeypatch: pytest.MonkeyPatch) -> None:
    """The usage-first pass whatever a sync reads (the fixtures are far smaller than the bytes
    that make it worth it in use)."""
    monkeypatch.setattr(sync_module, "TEXT_LATER_MIN_BYTES", 0)


@pytest.fixture
def reference(tmp_path: Path, real_home: RealHome) -> Iterator[SessionIndex]:
    """An index of the same home built by a plain sync."""
    with SessionIndex.open(str(tmp_path / "reference")) as index:
        index.sync()
        yield index


def totals(index: SessionIndex, by: tuple[str, ...]) -> list[tuple[object, ...]]:
    return [
        (row.key, row.entries, row.input_tokens, row.output_tokens, row.cache_read_tokens,
         row.cache_write_tokens, None if row.cost is None else round(row.cost, 9), row.cost_kind)
        for row in index.usage(by=by)
    ]  # fmt: skip


def counts(index: SessionIndex) -> tuple[int, int, int]:
    connection = index.connection
    ((entries,),) = connection.execute("SELECT count(*) FROM entries")
    ((lines,),) = connection.execute("SELECT count(*) FROM usage_lines")
    ((pending,),) = connection.execute("SELECT count(*) FROM files WHERE entries_pending = 1")
    return entries, lines, pending


def claude_entries(index: SessionIndex) -> int:
    """The entries of the files whose entries are pending (none: only their usage rows)."""
    ((count,),) = index.connection.execute(
        "SELECT count(*) FROM entries JOIN files ON files.id = entries.session"
        " WHERE files.entries_pending = 1"
    )
    return count


def pending_agents(index: SessionIndex) -> set[str]:
    return {
        agent
        for (agent,) in index.connection.execute(
            "SELECT DISTINCT agent FROM files WHERE entries_pending = 1"
        )
    }


@pytest.mark.parametrize("by", [("day",), ("model",), ("agent", "project"), ("session",)])
def test_the_usage_first_pass_gives_the_totals_of_a_full_sync(
    agent_dir: Path, real_home: RealHome, lean_always: None, reference: SessionIndex, by
):
    with SessionIndex.open(str(agent_dir)) as index:
        report = index.sync(entries=False)
        assert report.entries_pending > 0
        assert pending_agents(index) == LEAN_AGENTS
        assert claude_entries(index) == 0
        assert totals(index, by) == totals(reference, by)


def test_the_documents_and_trees_of_sessions_go_the_lean_way(
    agent_dir: Path, real_home: RealHome, lean_always: None, reference: SessionIndex
):
    """Gemini CLI's document chats and opencode's storage tree sessions get their usage rows
    alone, as the JSONL files do, with the full read's figures (the priced document's too)."""
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync(entries=False)
        pending = pending_documents(index)
        lean = document_usage(index)
    assert pending == {
        "session-2024-01-01T10-00-sess-uui.json", "session-2024-01-01T10-00-sess-thi.json",
        os.path.basename(PRICED_DOCUMENT), "ses_s_stage0_large.json", "ses_s_stage0_small.json",
    }  # fmt: skip
    assert lean == document_usage(reference) != {}


def test_a_gemini_document_names_its_cwd_in_the_lean_rows(
    agent_dir: Path, real_home: RealHome, lean_always: None, reference: SessionIndex
):
    """The cwd the reader learns from the document's ``<session_context>`` message."""
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync(entries=False)
        ((cwd,),) = index.connection.execute(
            "SELECT cwd FROM usage_sessions WHERE session_id = 'gemini_stage0_jsonl-document'"
        )
    (full,) = [
        session.cwd
        for session in reference.list_sessions()
        if session.session_id == "gemini_stage0_jsonl-document"
    ]
    assert cwd == full == "/tmp/gemini-document"


def test_the_sessions_of_opencodes_database_go_the_lean_way(
    agent_dir: Path, real_home: RealHome, lean_always: None, tmp_path: Path
):
    """opencode 1.x's sessions (the storage tree moved into opencode.db, as opencode's own
    migration does) get their usage rows alone, with the full read's figures; the deferred
    pass reads them from the database."""
    storage = real_home.home / DOCUMENT_PLACES["opencode"][OPENCODE_FIXTURE]
    opencode_database(storage, storage.parent / "opencode.db")
    shutil.rmtree(storage)
    with SessionIndex.open(str(tmp_path / "reference")) as reference:
        reference.sync()
        full = document_usage(reference), counts(reference)[0]
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync(entries=False)
        pending = pending_documents(index)
        lean = document_usage(index)
        index.sync()
        assert (lean, counts(index)[0]) == full
    assert lean != {}
    assert {name for name in pending if "#" in name} == {
        "opencode.db#s_stage0_large", "opencode.db#s_stage0_small"
    }  # fmt: skip


def test_an_opencode_message_counts_under_the_provider_and_cost_it_records(
    agent_dir: Path, real_home: RealHome, lean_always: None, tmp_path: Path
):
    """The lean row's provider is the one the message names (not the price table's for its
    model) and its cost the one opencode recorded, as in the full read."""
    storage = real_home.home / DOCUMENT_PLACES["opencode"][OPENCODE_FIXTURE]
    answer = storage / "message" / "s_stage0_large" / "msg_0002.json"
    message = orjson.loads(answer.read_bytes())
    answer.write_bytes(orjson.dumps({**message, "providerID": "a-gateway", "cost": 0.125}))
    with SessionIndex.open(str(tmp_path / "reference")) as reference:
        reference.sync()
        full = totals(reference, ("provider", "model"))
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync(entries=False)
        assert "ses_s_stage0_large.json" in pending_documents(index)
        lean = totals(index, ("provider", "model"))
    assert lean == full
    assert "a-gateway · a-gateway/gpt-4o-mini" in {row[0] for row in lean}


def pending_documents(index: SessionIndex) -> set[str]:
    """The names of the documents and trees of sessions whose entries are pending."""
    return {
        os.path.basename(path)
        for (path,) in index.connection.execute(
            "SELECT path FROM files WHERE entries_pending = 1"
            " AND (path LIKE '%.json' OR agent = 'opencode')"
        )
    }


def document_usage(index: SessionIndex) -> dict[str, tuple[object, ...]]:
    """The usage of each session of a document or tree, by its session id."""
    return {
        row.key: (row.entries, row.input_tokens, row.output_tokens, row.cache_read_tokens,
                  row.cache_write_tokens, row.cost, row.cost_kind)
        for row in index.usage(by=("session",))
        if row.key in ("gemini_stage0_jsonl-document", "s_stage0_large", "s_stage0_small")
    }  # fmt: skip


def test_every_lean_agent_has_its_usage_in_usage_rows(
    agent_dir: Path, real_home: RealHome, lean_always: None, reference: SessionIndex
):
    """Each agent's lean rows are its usage, not a full read's entries: the totals above are
    the lean read's own (the rows per agent equal the full read's counted entries)."""
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync(entries=False)
        lean = dict(
            index.connection.execute(
                "SELECT files.agent, count(*) FROM usage_lines"
                " JOIN files ON files.id = usage_lines.session GROUP BY files.agent"
            )
        )
    full = {row.key: row.entries for row in reference.usage(by=("agent",))}
    assert lean == {agent: full[agent] for agent in LEAN_AGENTS} != {}


def test_an_envelope_less_codex_rollout_is_read_lean_with_its_session(
    agent_dir: Path, real_home: RealHome, lean_always: None, reference: SessionIndex
):
    """An older Codex rollout (no envelopes: its first line the session id and instructions)
    holds no usage; the lean pass takes it all the same, its session named as the full read
    names it, and leaves its entries for later."""
    path = str(real_home.files["jkindrix__claude-snatch__legacy_session.jsonl"])
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync(entries=False)
        lean = index.connection.execute(
            "SELECT u.session_id, u.created_at, f.agent, f.entries_pending FROM usage_sessions"
            " AS u JOIN files AS f ON f.id = u.file_id WHERE f.path = ?",
            (path,),
        ).fetchall()
    full = reference.connection.execute(
        "SELECT s.session_id, s.created_at, f.agent FROM sessions AS s"
        " JOIN files AS f ON f.id = s.file_id WHERE f.path = ?",
        (path,),
    ).fetchall()
    assert [tuple(row) for row in lean] == [(*full[0], 1)]
    assert full[0][0] == "574149a7-0712-4169-b789-67fb4742b8fc"


def test_the_deferred_pass_replaces_the_usage_rows_with_entries(
    agent_dir: Path, real_home: RealHome, lean_always: None, reference: SessionIndex
):
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync(entries=False)
        index.sync()
        assert counts(index)[1:] == (0, 0)
        assert counts(index)[0] == counts(reference)[0]
        assert totals(index, ("day", "model")) == totals(reference, ("day", "model"))
        assert index.verify().clean


def test_the_next_usage_only_sync_reads_the_put_off_files_whole_and_archives_them(
    agent_dir: Path, real_home: RealHome, lean_always: None, reference: SessionIndex
):
    """A user who only ever asks for usage still gets every session kept: the run after the
    lean one reads the files it left pending whole, archive included, so the agent deleting
    them afterwards changes no total and loses no session."""
    with SessionIndex.open(str(agent_dir)) as index:
        assert index.sync(entries=False).entries_pending > 0
        index.sync(entries=False)
        assert counts(index)[1:] == (0, 0)
        sessions = len(index.list_sessions())
    shutil.rmtree(real_home.claude_dir)
    shutil.rmtree(real_home.codex_dir)
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync(entries=False)
        assert len(index.list_sessions()) == sessions
        assert totals(index, ("day", "model")) == totals(reference, ("day", "model"))


def test_index_pending_text_completes_the_entries_first(
    agent_dir: Path, real_home: RealHome, lean_always: None, reference: SessionIndex
):
    with SessionIndex.open(str(agent_dir)) as index:
        pending = index.sync(entries=False).entries_pending
        assert index.index_pending_text(workers=1) >= pending
        assert (index.text_pending(), counts(index)[2]) == (0, 0)
        hits = sorted((hit.session_id, hit.entry_id) for hit in index.search(WORD, limit=1000))
        expected = sorted((h.session_id, h.entry_id) for h in reference.search(WORD, limit=1000))
        assert hits == expected != []


def test_a_usage_first_index_says_searches_are_partial(
    agent_dir: Path, real_home: RealHome, lean_always: None
):
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync(entries=False)
        assert index.text_pending() >= counts(index)[2] > 0
    result = CliRunner().invoke(cli, ["--no-sync", "search", WORD])
    assert result.exit_code == 0, result.output
    assert result.stderr.startswith("Partial results: the search text of ")


def test_ls_and_show_read_the_files_whose_entries_were_put_off(
    agent_dir: Path, real_home: RealHome, lean_always: None, reference: SessionIndex
):
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync(entries=False)
    result = CliRunner().invoke(cli, ["ls", "--json", "-n", "1000"])
    assert result.exit_code == 0, result.output
    listed = sorted(session["id"] for session in orjson.loads(result.stdout))
    assert listed == sorted(s.session_id for s in reference.list_sessions())
    with SessionIndex.open(str(agent_dir), read_only=True) as index:
        assert counts(index)[2] == 0


def test_the_usage_verb_reads_only_usage_on_a_first_run(
    agent_dir: Path, real_home: RealHome, lean_always: None, reference: SessionIndex
):
    SessionIndex.open(str(agent_dir)).close()  # an index, never synced
    result = CliRunner().invoke(cli, ["usage", "--by", "day", "--json"])
    assert result.exit_code == 0, result.output
    with SessionIndex.open(str(agent_dir), read_only=True) as index:
        assert claude_entries(index) == 0
        assert counts(index)[2] > 0
        assert totals(index, ("day",)) == totals(reference, ("day",))


def test_a_file_appended_to_while_its_entries_wait_is_counted_once(
    agent_dir: Path, real_home: RealHome, lean_always: None, tmp_path: Path
):
    path = real_home.files[CLAUDE_FILE]
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync(entries=False)
        lines = path.read_bytes().splitlines()
        last = next(orjson.loads(line) for line in reversed(lines) if b'"usage"' in line)
        last["uuid"] = "00000000-0000-4000-8000-000000000099"
        last["message"]["id"] = "msg_appended"
        with path.open("ab") as stream:
            stream.write(orjson.dumps(last) + b"\n")
        index.sync(entries=False)
        lean = totals(index, ("day", "model"))
        index.sync()
        assert totals(index, ("day", "model")) == lean
    with SessionIndex.open(str(tmp_path / "fresh")) as fresh:
        fresh.sync()
        assert totals(fresh, ("day", "model")) == lean


_KILLED_BETWEEN_PASSES = """
import sys, time
from xcsh_store.index import SessionIndex
from xcsh_store.index.write import indexer, sync

sync.TEXT_LATER_MIN_BYTES = 0
indexer.COMMIT_EVERY_VALUES = 1  # each file (each chunk) committed on its own

def progress(done, total, path):
    if done and path:
        print("in the entries pass", flush=True)
        time.sleep(60)

with SessionIndex.open(sys.argv[1]) as index:
    index.sync(entries=False, workers=1)
    print("usage first done", flush=True)
    index.index_pending_text(progress, workers=1)
"""


@pytest.mark.parametrize("where", ["after the first pass", "in the entries pass"])
def test_a_sync_killed_between_the_passes_leaves_an_index_the_next_sync_completes(
    agent_dir: Path, real_home: RealHome, reference: SessionIndex, where: str
):
    package = Path(__file__).resolve().parents[1]
    child = subprocess.Popen(
        [sys.executable, "-c", _KILLED_BETWEEN_PASSES, str(agent_dir)],
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(package)},
        text=True,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline() == "usage first done\n"
        if where == "in the entries pass":
            assert child.stdout.readline() == "in the entries pass\n"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    with SessionIndex.open(str(agent_dir)) as index:
        assert counts(index)[2] > 0
        # Whatever was committed, each file's usage counts once.
        assert totals(index, ("day", "model")) == totals(reference, ("day", "model"))
        index.sync()
        assert counts(index)[1:] == (0, 0)
        assert index.text_pending() == 0
        assert index.verify().clean
        assert totals(index, ("day", "model")) == totals(reference, ("day", "model"))
        assert counts(index)[0] == counts(reference)[0]


def test_the_status_line_and_budget_sums_count_the_usage_rows(
    agent_dir: Path, real_home: RealHome, lean_always: None, reference: SessionIndex
):
    from xcsh_store.glance.usage import of_session, since

    claude = sorted(
        session.session_id for session in reference.list_sessions() if session.agent == "claude"
    )
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync(entries=False)
        assert since(index.connection, "0001") == since(reference.connection, "0001")
        assert [of_session(index.connection, session) for session in claude] == [
            of_session(reference.connection, session) for session in claude
        ]


def test_an_index_with_entries_pending_verifies_clean(
    agent_dir: Path, real_home: RealHome, lean_always: None
):
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync(entries=False)
        assert index.verify().clean
        with index.connection:
            index.connection.execute(
                "UPDATE usage_lines SET output_tokens = output_tokens + 1"
                " WHERE pk = (SELECT max(pk) FROM usage_lines)"
            )
        assert not index.verify().clean


def _assistant(uuid: str, message_id: str, tokens: object, stamp: str) -> dict[str, object]:
    return {
        "type": "assistant", "uuid": uuid, "parentUuid": None, "sessionId": "edge",
        "cwd": "/work/edge", "timestamp": stamp, "requestId": f"req_{message_id}",
        "message": {
            "id": message_id, "role": "assistant", "model": "claude-sonnet-4-5-20250929",
            "content": [{"type": "text", "text": 'a "usage" word'}],
            "usage": {"input_tokens": tokens, "output_tokens": 7, "cache_read_input_tokens": 100,
                      "cache_creation_input_tokens": 20,
                      "cache_creation": {"ephemeral_1h_input_tokens": 5}},
        },
    }  # fmt: skip


def test_odd_lines_count_as_the_full_read_counts_them(
    agent_dir: Path, real_home: RealHome, lean_always: None, tmp_path: Path
):
    """A response written on several lines, an id written again, tokens as floats, two
    objects on one line, a user line with a nested usage, a last line still being written."""
    lines = [
        orjson.dumps(
            {
                "type": "user",
                "uuid": "u1",
                "sessionId": "edge",
                "cwd": "/work/edge",
                "timestamp": "2025-10-01T10:00:00.000Z",
                "message": {"role": "user", "content": "hi"},
                "toolUseResult": {"usage": {"input_tokens": 999}},
            }
        ),
        orjson.dumps(_assistant("a1", "m1", 10, "2025-10-01T10:00:01.000Z")),
        orjson.dumps(_assistant("a2", "m1", 11, "2025-10-01T10:00:02.000Z")),  # same response
        orjson.dumps(_assistant("a3", "m2", 12.0, "2025-10-01T10:00:03.000Z")),  # a float
        orjson.dumps(_assistant("a4", "m3", 13, "2025-10-02T10:00:04.000Z"))
        + orjson.dumps(_assistant("a5", "m4", 14, "2025-10-02T10:00:05.000Z")),  # glued
        orjson.dumps(_assistant("a4", "m5", 15, "2025-10-02T10:00:06.000Z")),  # id a4 again
    ]
    data = b"\n".join(lines) + b"\n" + orjson.dumps(_assistant("a9", "m9", 1, "2025-10-03"))[:-9]
    project = real_home.home / ".claude" / "projects" / "-work-edge"
    project.mkdir(parents=True)
    (project / "edge.jsonl").write_bytes(data)
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync(entries=False)
        lean = totals(index, ("day", "session"))
    with SessionIndex.open(str(tmp_path / "full")) as full:
        full.sync()
        assert lean == totals(full, ("day", "session"))
        assert any(row[0] is not None and "edge" in row[0] for row in lean)


def test_reads_without_a_sync_say_their_lists_are_partial(
    agent_dir: Path, real_home: RealHome, lean_always: None
):
    from starlette.testclient import TestClient
    from web_server import LOCAL

    from xcsh_store.agent_tools.tools import list_sessions
    from xcsh_store.web import create_app

    with SessionIndex.open(str(agent_dir)) as index:
        index.sync(entries=False)
        pending = index.entries_pending()
    assert pending
    result = CliRunner().invoke(cli, ["--no-sync", "ls"])
    assert result.exit_code == 0, result.output
    assert result.stderr.startswith(f"Partial list: {pending} session files have only their")
    client = TestClient(create_app(str(agent_dir), sync_every=None), base_url=LOCAL)
    assert f"Partial list: {pending} session files" in client.get("/").text
    with SessionIndex.open(str(agent_dir), read_only=True) as index:
        assert "not listed" in list_sessions(index)["partial"]
    result = CliRunner().invoke(cli, ["ls"])  # a sync first: every session, nothing partial
    assert result.exit_code == 0, result.output
    assert "Partial" not in result.stderr
    assert "Partial list" not in client.get("/").text
    with SessionIndex.open(str(agent_dir), read_only=True) as index:
        assert "partial" not in list_sessions(index)


def test_serve_and_mcp_read_the_entries_put_off_when_they_refresh(
    agent_dir: Path, real_home: RealHome, lean_always: None, reference: SessionIndex
):
    from xcsh_store.index import Refresher

    with SessionIndex.open(str(agent_dir)) as index:
        index.sync(entries=False)
    refresher = Refresher(str(agent_dir), every=0)
    try:
        refresher.refresh()
        with SessionIndex.open(str(agent_dir), read_only=True) as index:
            assert index.entries_pending() == 0
            assert sorted(s.session_id for s in index.list_sessions()) == sorted(
                s.session_id for s in reference.list_sessions()
            )
        refresher.wait_for_text()
    finally:
        refresher.close()


def _lines(*values: object) -> bytes:
    return b"".join(orjson.dumps(value) + b"\n" for value in values)


def _gemini(entry_id: str, stamp: str, sent: int) -> dict[str, object]:
    tokens = {"input": sent, "output": 5, "cached": 10, "thoughts": 2, "tool": 1, "total": 0}
    return {"id": entry_id, "timestamp": stamp, "type": "gemini", "content": 'a "tokens" word',
            "model": "gemini-2.5-pro", "tokens": tokens}  # fmt: skip


def _qwen(uuid: str, stamp: str, sent: int, **more: object) -> dict[str, object]:
    usage = {"promptTokenCount": sent, "candidatesTokenCount": 3, "thoughtsTokenCount": 1,
             "cachedContentTokenCount": 4}  # fmt: skip
    return {"uuid": uuid, "parentUuid": None, "sessionId": "q-edge", "timestamp": stamp,
            "type": "assistant", "model": "qwen/qwen3-coder",
            "message": {"role": "model", "parts": [{"text": "usageMetadata"}]},
            "usageMetadata": usage, **more}  # fmt: skip


def _shutdown(stamp: str, **data: object) -> dict[str, object]:
    return {"type": "session.shutdown", "timestamp": stamp, "data": data}


# agent: (its file below the home, its bytes): a record written again, a rewind, a checkpoint,
# the model changed between usage events, events without ids, a head line without a cwd, a
# last line still being written.
ODD_FILES = {
    "gemini": (
        ".gemini/tmp/edge/chats/session-2026-01-01T00-00-g-edge.jsonl",
        _lines(
            {"sessionId": "g-edge", "projectHash": "edge", "startTime": "2026-01-01T00:00:00Z"},
            {"id": "m0", "timestamp": "2026-01-01T00:00:01Z", "type": "user", "content": [
                {"text": "<session_context>\n**Workspace Directories:**\n  - /work/g\n"}]},
            _gemini("m1", "2026-01-01T00:00:02Z", 100),
            _gemini("m1", "2026-01-01T00:00:03Z", 200),  # the same message, written again
            {"$rewindTo": "m1"},
            _gemini("m2", "2026-01-02T00:00:04Z", 300),
            {"$set": {"messages": [_gemini("m9", "2026-01-02T00:00:05Z", 900)]}},
        ).replace(b"<session_context>", b"\\u003csession_context\\u003e")  # as Go writes it
        + orjson.dumps(_gemini("m3", "2026-01-03T00:00:06Z", 1))[:-9],
    ),
    "copilot": (
        ".copilot/session-state/c-edge/events.jsonl",
        _lines(
            {"type": "session.start", "timestamp": "2026-01-01T00:00:00Z", "data": {
                "sessionId": "c-edge", "version": 1, "selectedModel": "gpt-5",
                "context": {"cwd": "/work/c"}}},
            {"type": "session.model_change", "timestamp": "2026-01-01T00:00:01Z",
             "data": {"newModel": "claude-sonnet-4.5"}},
            _shutdown("2026-01-01T00:00:02Z", totalPremiumRequests=2, modelMetrics={
                "claude-sonnet-4.5": {"usage": {"inputTokens": 50, "outputTokens": 6,
                                                "cacheReadTokens": 20, "cacheWriteTokens": 3}}}),
            {"type": "session.resume", "timestamp": "2026-01-02T00:00:00Z",
             "data": {"selectedModel": "gpt-5-mini"}},
            _shutdown("2026-01-02T00:00:01Z", totalPremiumRequests=1, tokenDetails={
                "input": {"tokenCount": 40}, "output": {"tokenCount": 4},
                "cache_read": {"tokenCount": 10}}),
        ),
    ),
    "qwen": (
        ".qwen/projects/-work-q/chats/q-edge.jsonl",
        _lines(
            {"uuid": "s0", "parentUuid": None, "sessionId": "q-edge", "type": "system",
             "timestamp": "2026-01-01T00:00:00Z", "subtype": "ui_telemetry",
             "systemPayload": {"uiEvent": {"usageMetadata": 1}}},
            {"uuid": "u1", "parentUuid": "s0", "sessionId": "q-edge", "cwd": "/work/q",
             "timestamp": "2026-01-01T00:00:01Z", "type": "user",
             "message": {"role": "user", "parts": [{"text": "hi"}]}},
            _qwen("a1", "2026-01-01T00:00:02Z", 40, cwd="/work/q"),
            _qwen("a1", "2026-01-01T00:00:03Z", 50, cwd="/work/q"),  # written again
            _qwen("a2", "2026-01-02T00:00:04Z", 60, cwd="/work/q"),
        ),
    ),
}  # fmt: skip


@pytest.mark.parametrize("agent", sorted(ODD_FILES))
def test_odd_agent_files_count_as_the_full_read_counts_them(
    agent_dir: Path, lean_always: None, tmp_path: Path, agent: str
):
    place, data = ODD_FILES[agent]
    path = Path(os.environ["HOME"]) / place
    path.parent.mkdir(parents=True)
    path.write_bytes(data)
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync(entries=False)
        assert pending_agents(index) == {agent}
        lean = [totals(index, by) for by in (("day", "session", "model"), ("project",))]
    with SessionIndex.open(str(tmp_path / "full")) as full:
        full.sync()
        assert lean == [totals(full, by) for by in (("day", "session", "model"), ("project",))]
        assert len(lean[0]) > 1


# Where a generated file of each agent goes below an agent dir's sessions/ (its first line
# names its agent).
_GENERATED = {"gemini": "chats/session-g.jsonl", "copilot": "c/events.jsonl", "qwen": "q.jsonl"}


@settings(
    max_examples=int(os.environ.get("AGENTS_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(agent=st.sampled_from(sorted(_GENERATED)), data=st.data())
def test_generated_agent_files_count_as_the_full_read_counts_them(
    lean_always: None, tmp_path_factory: pytest.TempPathFactory, agent: str, data: st.DataObject
):
    """Records written again, rewinds, checkpoints, events without ids, model changes, a file
    cut anywhere (its last line still being written)."""
    content = data.draw(FORMATS[agent]())
    if data.draw(st.booleans()):
        content = content[: data.draw(st.integers(1, len(content)))]
    work = tmp_path_factory.mktemp(agent)
    path = work / "agent" / "sessions" / _GENERATED[agent]
    path.parent.mkdir(parents=True)
    path.write_bytes(content)
    found = []
    for name, entries in (("lean", False), ("full", True)):
        with SessionIndex.open(str(work / "agent"), db_path=str(work / f"{name}.db")) as index:
            index.sync(entries=entries, workers=1)
            found.append(totals(index, ("day", "session", "model")))
    assert found[0] == found[1]


@pytest.mark.parametrize(
    "needles",
    [
        (b'"session_meta"', b'"turn_context"', b'"token_count"'),  # one regular expression
        (b'"tokens"', b"session_context"),  # a find per needle
        (b'"token_count"',),
    ],
)
def test_the_line_search_finds_each_line_that_holds_a_needle_once(needles):
    lines = [
        b'{"type":"session_meta","x":"token_count"}',
        b'{"a":1}',
        b'{"t":"turn_context","u":"token_count","v":"tokens","w":"<session_context>"}',
        b"",
        b'"token_count"',
        b'{"type":"token_count"}{"type":"turn_context"}',
        b'{"last":"session_meta","also":"tokens"}',
    ]
    data = b"\n".join(lines)
    starts, expected, offset = line_starts(data, needles), [], 0
    for line in lines:
        if any(needle in line for needle in needles):
            expected.append(offset)
        offset += len(line) + 1
    assert starts == expected
