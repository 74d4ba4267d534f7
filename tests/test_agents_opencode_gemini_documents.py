"""opencode's storage tree and Gemini CLI's older whole-document chats in the index (issue 29),
each fixture laid out where its agent keeps it (tests/agent_homes.py DOCUMENT_PLACES), with the
values worked out from the files and the command that gives each (``$F`` the fixture folder
``tests/fixtures/opencode/jazzyalex__agent-sessions__storage_v2``, ``$G`` a Gemini fixture):

* opencode sessions, titles, cwds, parents, creation: ``for s in $F/session/*/*.json; do jq -c
  '[.id, .title, .directory, .parentID, .time.created]' $s; done``;
* entries (the session, each message, each tool part's result): ``cd $F && python3 -c "import
  json, glob; [print(s, 1 + len(m := sorted(glob.glob(f'message/{s}/*.json'))) + sum(json.load(
  open(p))['type'] == 'tool' for x in m for p in glob.glob('part/' + json.load(open(x))['id'] +
  '/*.json'))) for s in ('s_stage0_large', 's_stage0_small')]"``;
* models and usage: ``jq -c 'select(.role == "assistant") | [.sessionID, (.modelID //
  .model.modelID), (.providerID // .model.providerID), .tokens, .cost]' $F/message/*/*.json``
  (one message has tokens, 120 in and 16 out; its ``cost`` is an object, not dollars);
* Gemini documents: ``jq -c '[.sessionId, (.messages | length + 1), ([.messages[].toolCalls[]?]
  | length), ([.messages[] | select(.tokens)] | length), ([.messages[].model // empty] |
  unique), .messages[0].content]' $G`` (no ``tokens``: usage 0).

opencode 1.x's database is not in the fixtures: the storage fixture is put into its tables
(opencode's ``session.sql.ts``) as opencode's own migration does, and reads as the tree does.
"""

from __future__ import annotations

import json
import os
import sqlite3
import stat
from contextlib import closing
from pathlib import Path

import pytest
from agent_homes import DOCUMENT_PLACES, lay_out_documents, opencode_database
from click.testing import CliRunner
from session_builder import FIXTURES

from xcsh_store.cli.app import cli
from xcsh_store.index import SessionIndex

STORAGE = ".local/share/opencode/storage"
# session id: (title, cwd, entries, created)
OPENCODE = {
    "s_stage0_large": ("OpenCode Large", "/tmp/large", 6, "2024-10-27T03:35:00.000Z"),
    "s_stage0_small": ("OpenCode Small", "/tmp/repo", 4, "2024-10-27T03:33:20.000Z"),
}
# session id: (entries: metadata and messages, tool calls, first prompt)
GEMINI = {
    "sess-uuid-2": (3, 1, "Read this file"),
    "sess-uuid-thinking": (3, 0, "Explain how this works"),
}


def _home() -> Path:
    return Path(os.environ["HOME"])


@pytest.fixture
def index(agent_dir: Path, index: SessionIndex) -> SessionIndex:
    lay_out_documents(_home())
    report = index.sync(workers=1)
    assert report.unreadable == {}
    return index


def _sessions(index: SessionIndex, agent: str) -> dict[str, tuple]:
    rows = index.connection.execute(
        "SELECT session_id, title, cwd, entry_count, created_at, parent_session_id, first_message"
        " FROM sessions WHERE agent = ?",
        (agent,),
    ).fetchall()
    return {row[0]: row[1:] for row in rows}


def _roles(index: SessionIndex, session_id: str) -> list[str | None]:
    rows = index.connection.execute(
        "SELECT e.role FROM entries AS e JOIN sessions AS s ON e.session = s.file_id"
        " WHERE s.session_id = ? ORDER BY e.seq",
        (session_id,),
    ).fetchall()
    return [role for (role,) in rows]


def _cli(agent_dir: Path, *args: str) -> str:
    result = CliRunner().invoke(cli, ["--agent-dir", str(agent_dir), *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_each_opencode_session_file_is_a_session(index: SessionIndex):
    found = _sessions(index, "opencode")
    assert {key: (*row[:4], row[4]) for key, row in found.items()} == {
        key: (title, cwd, entries, created, None)
        for key, (title, cwd, entries, created) in OPENCODE.items()
    }


def test_opencode_entries_are_a_chain_with_tool_results_after_their_call(
    agent_dir: Path, index: SessionIndex
):
    assert _roles(index, "s_stage0_large") == [
        None, "user", "assistant", "toolResult", "user", "assistant",
    ]  # fmt: skip
    tree = _cli(agent_dir, "show", "s_stage0_large", "--json")
    entries = json.loads(tree)["entries"]
    parents = [entry["parentId"] for entry in entries]
    assert parents == [None] + [entry["id"] for entry in entries[:-1]]


def test_an_opencode_tool_call_and_its_result_share_the_call_id(
    agent_dir: Path, index: SessionIndex
):
    # jq -c '[.callID, .tool, .state.output]' $F/part/m_assistant_large_1/001.json
    output = _cli(agent_dir, "show", "s_stage0_large", "--json")
    entries = json.loads(output)["entries"]
    calls = [
        block
        for entry in entries
        for block in (entry.get("message") or {}).get("content") or ()
        if block.get("type") == "toolCall"
    ]
    results = [
        entry["message"]
        for entry in entries
        if (entry.get("message") or {}).get("role") == "toolResult"
    ]
    assert [(call["id"], call["name"]) for call in calls] == [("call_large_1", "bash")]
    assert [(result["toolCallId"], result["content"][0]["text"]) for result in results] == [
        ("call_large_1", "ls: /non-existent-directory: No such file or directory\n")
    ]


def test_opencode_usage_is_its_tokens_and_recorded_cost(index: SessionIndex):
    rows = index.connection.execute(
        "SELECT e.provider, e.model, e.input_tokens, e.output_tokens, e.cost FROM entries AS e"
        " JOIN sessions AS s ON e.session = s.file_id"
        " WHERE s.agent = 'opencode' AND e.input_tokens IS NOT NULL"
    ).fetchall()
    # The one message with tokens records its cost as an object, not dollars: no cost.
    assert rows == [("openai", "gpt-4o-mini", 120, 16, None)]
    models = index.connection.execute(
        "SELECT DISTINCT e.model FROM entries AS e JOIN sessions AS s ON e.session = s.file_id"
        " WHERE s.agent = 'opencode' AND e.role = 'assistant'"
    ).fetchall()
    assert models == [("gpt-4o-mini",)]


def test_opencode_costs_are_never_estimated(index: SessionIndex):
    rows = {row.key: row for row in index.usage(by="agent")}
    assert (rows["opencode"].input_tokens, rows["opencode"].output_tokens) == (120, 16)
    assert rows["opencode"].estimated == 0


def test_a_recorded_cost_that_is_missing_is_unknown_not_zero(index: SessionIndex):
    """The message with tokens and no cost in dollars: its session's cost is unknown (null,
    ``?``), as an unpriced model's is, never a recorded $0."""
    sessions = {session.session_id: session for session in index.list_sessions()}
    assert sessions["s_stage0_large"].cost_kind == "unpriced"
    assert sessions["s_stage0_large"].to_json()["cost"] is None
    # No tokens, no cost: nothing is unknown.
    assert sessions["s_stage0_small"].cost_kind == "recorded"


def test_opencode_text_reasoning_and_tool_output_are_searchable(index: SessionIndex):
    # The reasoning part (004.json), the tool's output (001.json), a user's text part.
    for word in ("Investigating", "non-existent-directory", "Hello"):
        assert {hit.agent for hit in index.search(word, limit=5)} == {"opencode"}, word


def test_opencode_parts_without_text_add_none(index: SessionIndex):
    # The step-start's snapshot title (005.json) and the file part's name (003.json).
    assert index.search('"Run command"', limit=5) == []
    assert index.search("error.log", limit=5) == []


def test_a_child_session_links_its_parent(index: SessionIndex):
    child = _home() / STORAGE / "session" / "proj_test" / "ses_s_stage0_small.json"
    value = json.loads(child.read_bytes())
    child.write_text(json.dumps({**value, "parentID": "s_stage0_large"}))
    index.sync(workers=1)
    assert _sessions(index, "opencode")["s_stage0_small"][4] == "s_stage0_large"


def test_a_session_is_read_again_when_a_part_changes(index: SessionIndex):
    part = _home() / STORAGE / "part" / "m_assistant_small" / "003.json"
    part.write_text(json.dumps({"id": "p_text_2", "type": "text", "text": "a wombat appeared"}))
    report = index.sync(workers=1)
    assert report.files_changed == 1
    assert [hit.session_id for hit in index.search("wombat", limit=5)] == ["s_stage0_small"]
    assert index.verify().clean


def test_a_bad_opencode_part_costs_its_record_only(index: SessionIndex):
    (_home() / STORAGE / "part" / "m_assistant_small" / "002.json").write_text("{not json")
    index.sync(workers=1)
    assert _roles(index, "s_stage0_small") == [None, "user", "assistant", "toolResult"]
    assert index.search("Found", limit=5) == []


def test_each_gemini_document_is_a_session(index: SessionIndex):
    found = _sessions(index, "gemini")
    assert {key: (row[2], row[5]) for key, row in found.items()} == {
        key: (entries, first) for key, (entries, _calls, first) in GEMINI.items()
    }


def test_gemini_document_messages_chain_and_keep_their_calls(agent_dir: Path, index: SessionIndex):
    output = _cli(agent_dir, "show", "sess-uuid-2", "--json")
    entries = json.loads(output)["entries"]
    messages = [entry for entry in entries if entry.get("type") == "message"]
    assert [(entry["id"], entry["parentId"]) for entry in messages] == [("u1", None), ("a1", "u1")]
    calls = [b for b in messages[1]["message"]["content"] if b["type"] == "toolCall"]
    assert [(call["name"], call["arguments"]) for call in calls] == [
        ("read_file", {"file_path": "main.go"})
    ]


def test_gemini_document_thoughts_are_searchable_and_usage_is_none(index: SessionIndex):
    # "config loading flow": the second thought's description (thinking_only).
    hits = index.search('"config loading flow"', limit=5)
    assert [hit.session_id for hit in hits] == ["sess-uuid-thinking"]
    totals = index.connection.execute(
        "SELECT sum(input_tokens + output_tokens) FROM sessions WHERE agent = 'gemini'"
    ).fetchall()
    assert totals == [(0,)]


def test_a_gemini_document_call_result_is_a_tool_result(agent_dir: Path, index: SessionIndex):
    # A chat that keeps its call's result only inside the call (no functionResponse message),
    # with the tokens of one API call: input 100 (20 cached), output 7, thoughts 3.
    chat = json.loads((Path(__file__).parent / "fixtures" / "gemini" /
                       "wesm__agentsview__tool_calls.json").read_bytes())  # fmt: skip
    chat["sessionId"] = "sess-call"
    answer = chat["messages"][1]
    answer["toolCalls"][0].update(
        id="c1", result=[{"functionResponse": {"name": "read_file", "id": "c1",
                                               "response": {"output": "package quokka"}}}]
    )  # fmt: skip
    answer["tokens"] = {"input": 100, "output": 7, "cached": 20, "thoughts": 3, "total": 110}
    chats = _home() / ".gemini" / "tmp" / "p" / "chats"
    chats.mkdir(parents=True)
    (chats / "session-2024-01-01T10-00-sess-cal.json").write_text(json.dumps(chat))
    index.sync(workers=1)
    assert _roles(index, "sess-call") == [None, "user", "assistant", "toolResult"]
    assert [hit.session_id for hit in index.search("quokka", limit=5)] == ["sess-call"]
    usage = index.connection.execute(
        "SELECT input_tokens, output_tokens, cache_read_tokens FROM sessions"
        " WHERE session_id = 'sess-call'"
    ).fetchall()
    assert usage == [(80, 10, 20)]


def test_other_json_files_beside_gemini_chats_are_not_sessions(index: SessionIndex):
    (_home() / ".gemini" / "tmp" / "abc123def456" / "logs.json").write_text("[]")
    index.sync(workers=1)
    assert len(_sessions(index, "gemini")) == len(GEMINI)


def _snapshot(root: Path) -> dict[str, tuple[bytes | None, int, int]]:
    found = {}
    for path in sorted([root, *root.rglob("*")]):
        info = path.lstat()
        content = path.read_bytes() if path.is_file() else None
        found[str(path)] = (content, info.st_mtime_ns, stat.S_IMODE(info.st_mode))
    return found


def test_sync_gc_and_repair_write_nothing_in_the_agents_folders(agent_dir: Path):
    placed = lay_out_documents(_home())
    folders = [_home() / ".gemini", _home() / STORAGE]
    assert {place for places in DOCUMENT_PLACES.values() for place in places.values()} == {
        str(path.relative_to(_home())) for path in placed
    }
    every = [path for root in folders for path in [root, *root.rglob("*")]]
    for path in sorted(every, key=lambda path: len(path.parts), reverse=True):
        path.chmod(0o555 if path.is_dir() else 0o444)
    try:
        before = [_snapshot(root) for root in folders]
        (agent_dir / "sessions").mkdir(parents=True, exist_ok=True)
        with SessionIndex.open(str(agent_dir)) as opened:
            assert opened.sync(workers=1).unreadable == {}
            opened.sync(full=True, workers=1)
            opened.blob_gc(apply=True)
            assert opened.verify(repair=True).clean
            agents = opened.connection.execute(
                "SELECT agent, count(*) FROM sessions GROUP BY agent ORDER BY agent"
            ).fetchall()
        assert agents == [("gemini", 2), ("opencode", 2)]
        assert [_snapshot(root) for root in folders] == before
    finally:
        for path in every:
            path.chmod(0o755 if path.is_dir() else 0o644)


@pytest.fixture
def database(agent_dir: Path) -> Path:
    """opencode 1.x's database of the storage fixture, where opencode keeps it."""
    folder = _home() / ".local" / "share" / "opencode"
    folder.mkdir(parents=True)
    opencode_database(FIXTURES / "opencode" / "jazzyalex__agent-sessions__storage_v2",
                      folder / "opencode.db")  # fmt: skip
    (agent_dir / "sessions").mkdir(parents=True, exist_ok=True)
    return folder / "opencode.db"


def test_opencode_database_sessions_read_as_the_tree_does(database: Path, agent_dir: Path):
    with SessionIndex.open(str(agent_dir)) as opened:
        assert opened.sync(workers=1).unreadable == {}
        found = _sessions(opened, "opencode")
        assert {key: row[:4] for key, row in found.items()} == {
            key: (title, cwd, entries, created)
            for key, (title, cwd, entries, created) in OPENCODE.items()
        }
        assert _roles(opened, "s_stage0_large") == [
            None, "user", "assistant", "toolResult", "user", "assistant",
        ]  # fmt: skip
        assert {hit.agent for hit in opened.search("Investigating", limit=5)} == {"opencode"}
        rows = {row.key: row for row in opened.usage(by="agent")}
        assert (rows["opencode"].input_tokens, rows["opencode"].output_tokens) == (120, 16)
        assert opened.verify().clean


def test_a_changed_database_row_reads_its_session_again(database: Path, agent_dir: Path):
    with SessionIndex.open(str(agent_dir)) as opened:
        opened.sync(workers=1)
        with closing(sqlite3.connect(database)) as connection, connection:
            connection.execute(
                "UPDATE part SET data = json_set(data, '$.text', 'a numbat appeared'),"
                " time_updated = time_updated + 1 WHERE id = 'p_text_large_2'"
            )
        report = opened.sync(workers=1)
        assert report.files_changed == 1
        hits = opened.search("numbat", limit=5)
        assert [hit.session_id for hit in hits] == ["s_stage0_large"]


def test_sync_gc_and_repair_write_nothing_beside_the_database(database: Path, agent_dir: Path):
    folder = database.parent
    folder.chmod(0o555)
    database.chmod(0o444)
    try:
        before = _snapshot(folder)
        with SessionIndex.open(str(agent_dir)) as opened:
            assert opened.sync(workers=1).unreadable == {}
            opened.sync(full=True, workers=1)
            opened.blob_gc(apply=True)
            assert opened.verify(repair=True).clean
            assert len(_sessions(opened, "opencode")) == len(OPENCODE)
        assert _snapshot(folder) == before
    finally:
        folder.chmod(0o755)
        database.chmod(0o644)


def test_an_opencode_summary_message_is_a_compaction(index: SessionIndex):
    # opencode marks the answer to a compaction's "what did we do so far" with summary: true.
    message = _home() / STORAGE / "message" / "s_stage0_large" / "msg_0004.json"
    message.write_text(json.dumps({**json.loads(message.read_bytes()), "summary": True}))
    index.sync(workers=1)
    rows = index.connection.execute(
        "SELECT e.type FROM entries AS e JOIN sessions AS s ON e.session = s.file_id"
        " WHERE s.session_id = 's_stage0_large' ORDER BY e.seq"
    ).fetchall()
    assert [kind for (kind,) in rows][-1] == "compaction"
    assert [hit.session_id for hit in index.search("Ok", limit=5)] == ["s_stage0_large"]


def test_watch_reads_a_new_part_and_writes_nothing_in_the_agents_folders(agent_dir: Path):
    pytest.importorskip("watchfiles")
    from helpers.watch_process import Watch

    lay_out_documents(_home())
    (agent_dir / "sessions").mkdir(parents=True, exist_ok=True)
    folders = [_home() / ".gemini", _home() / STORAGE]
    before = [_snapshot(root) for root in folders]
    session = _home() / STORAGE / "session" / "proj_test" / "ses_s_stage0_small.json"
    part = _home() / STORAGE / "part" / "m_assistant_small" / "003.json"
    running = Watch(agent_dir)
    try:
        # What opencode does as an answer streams in: a part file of its own.
        part.write_text(json.dumps({"id": "p_text_3", "type": "text", "text": "a quokka waved"}))
        running.wait_for(
            lambda line: line["change"] == "indexed" and line.get("path") == str(session)
        )
        assert running.stop() == 0
    finally:
        if running.process.poll() is None:
            running.process.kill()
    with SessionIndex.open(str(agent_dir), read_only=True) as opened:
        assert [hit.session_id for hit in opened.search("quokka")] == ["s_stage0_small"]
    after = [_snapshot(root) for root in folders]
    # The part file the "agent" wrote, and its folder's time.
    for name in (str(part), str(part.parent)):
        after[1].pop(name)
        before[1].pop(name, None)
    assert after == before
