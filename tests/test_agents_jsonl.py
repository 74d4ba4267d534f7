"""Gemini CLI (JSONL), GitHub Copilot CLI, Qwen Code, Factory Droid and Cursor sessions in the
index: every fixture of those agents, laid out where its agent keeps it in the test's home and
found there by the sync, indexes with the values worked out from the file with jq (each command
beside its value, ``$F`` the fixture); their folders are never written; a file written a piece
at a time with syncs in between equals one full read.

Common commands:

* entries (every object of the file, less those a later line of the same id replaced):
  ``jq -s 'length - ([map(.id // .uuid | select(.)) | group_by(.)[] | length - 1] | add // 0)'
  $F``;
* tree entries (objects with an id; Copilot's trimmed events share one id, "[trimmed for
  fixture]", and a later line of an id replaces the earlier one): ``jq -s 'map(.id // .uuid |
  select(.)) | unique | length' $F``; Cursor's transcripts have no ids: every object is one;
* roots: entries whose parent is missing (Copilot's trimmed event is its own parent, a cycle
  the tree starts anew at, hence a second root);
* a searchable word: one found in the file's message text with ``jq -r '.. | .text? // .content?
  | strings' $F``.
"""

from __future__ import annotations

import logging
import os
import shutil
import stat
from pathlib import Path
from typing import Any

import orjson
import pytest
from agent_homes import HOME_PLACES, lay_out_agents
from helpers.agent_lines import FORMATS, chat_bytes, record, tokens_of
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from session_builder import FIXTURES

from xcsh_store.index import SessionIndex

# fixture: (agent, session id, entries, tree entries, roots, title, models,
#           (input, output, cache read, cache write, premium requests), a searchable word)
EXPECTED: dict[str, tuple[Any, ...]] = {
    # session id: jq -r 'select(.projectHash) | .sessionId' $F; tree: the 3 message records.
    # usage: jq -sc 'map(select(.type == "gemini") | .tokens) | [(map(.input - .cached +
    #   .tool) | add), (map(.output + .thoughts) | add), (map(.cached) | add)]' $F
    #   -> [12422,228,11502]; models: jq -sc 'map(.model | select(.)) | unique' $F.
    "gemini/jazzyalex__agent-sessions__jsonl_v040.jsonl": (
        "gemini", "gemini_stage0_jsonl", 5, 3, 1, None, ["gemini-3-flash-preview"],
        (12422, 228, 11502, 0, 0), "hello",
    ),
    # usage, the shutdown totals: jq -c 'select(.type == "session.shutdown") | .data |
    #   [.tokenDetails.input.tokenCount, .tokenDetails.output.tokenCount,
    #   .tokenDetails.cache_read.tokenCount, .tokenDetails.cache_write.tokenCount,
    #   .totalPremiumRequests]' $F -> [100,15,5,0,1], input less cache reads (95); models of
    #   the answers kept (the trimmed
    #   ones collapse into the last, line 32): jq -sc 'map(select(.type ==
    #   "assistant.message") | .data.model | select(.)) | unique' $F -> ["gpt-5-mini"].
    "copilot/jazzyalex__agent-sessions__small.jsonl": (
        "copilot", "copilot_stage0_small", 17, 17, 2, None, ["gpt-5-mini"],
        (95, 15, 5, 0, 1), "Listing",
    ),
    # No ids: each event continues from the one before (a chain of 7); no shutdown, no usage;
    # no model named: jq -s 'map(.data.model | select(.))' $F -> [].
    "copilot/juspay__shooter__session.jsonl": (
        "copilot", "sess-1", 7, 7, 1, None, [], (0, 0, 0, 0, 0), "analysis",
    ),
    "copilot/jazzyalex__agent-sessions__aaaabbbb-1111-2222-3333-ccccddddeeee/events.jsonl": (
        "copilot", "aaaabbbb-1111-2222-3333-ccccddddeeee", 8, 8, 1, None, [], (0, 0, 0, 0, 0),
        "contains",
    ),
    # usage: jq -sc 'map(select(.usageMetadata) | .usageMetadata) | [(map(.promptTokenCount -
    #   .cachedContentTokenCount) | add), (map(.candidatesTokenCount + .thoughtsTokenCount) |
    #   add), (map(.cachedContentTokenCount) | add)]' $F -> [1050,25,50].
    "qwen/Piebald-AI__splitrail__qwen_code.jsonl": (
        "qwen", "69f0814a-8bfc-4c8e-93d3-05757f17b96f", 8, 8, 1, None, ["coder-model"],
        (1050, 25, 50, 0, 0), "absolute",
    ),
    "qwen/jazzyalex__agent-sessions__019f0000-0000-7000-8000-000000000001.jsonl": (
        "qwen", "019f0000-0000-7000-8000-000000000001", 6, 6, 1, None, ["synthetic-model"],
        (0, 0, 0, 0, 0), "valid",
    ),
    # title: jq -r 'select(.type == "session_start") | .sessionTitle' $F; the session_start's
    # id is the first message's parent: one tree of 4.
    "droid/jazzyalex__agent-sessions__session_store_small.jsonl": (
        "droid", "droid_s1", 4, 4, 1, "Stage0 Droid Small", [], (0, 0, 0, 0, 0), "directory",
    ),
    "cursor/jazzyalex__agent-sessions__small.jsonl": (
        "cursor", "small", 5, 5, 1, None, [], (0, 0, 0, 0, 0), "Running",
    ),
    "cursor/jazzyalex__agent-sessions__subagent/parent.jsonl": (
        "cursor", "parent", 2, 2, 1, None, [], (0, 0, 0, 0, 0), "Spawning",
    ),
    "cursor/jazzyalex__agent-sessions__subagent/subagents/child.jsonl": (
        "cursor", "child", 2, 2, 1, None, [], (0, 0, 0, 0, 0), "file2",
    ),
}  # fmt: skip


def _home() -> Path:
    return Path(os.environ["HOME"])


@pytest.fixture
def laid_out(index: SessionIndex) -> SessionIndex:
    lay_out_agents(_home())
    index.sync(workers=1)
    return index


def _row(index: SessionIndex, fixture: str) -> dict[str, Any]:
    place = HOME_PLACES[fixture.split("/", 1)[0]][fixture]
    cursor = index.connection.execute(
        "SELECT * FROM sessions WHERE path = ?", (str(_home() / place),)
    )
    names = [column[0] for column in cursor.getdescription()]
    rows = [dict(zip(names, row, strict=True)) for row in cursor]
    assert len(rows) == 1, fixture
    return rows[0]


def test_every_fixture_has_its_expected_values():
    placed = {source for places in HOME_PLACES.values() for source in places}
    assert placed == set(EXPECTED)
    for agent in HOME_PLACES:
        on_disk = {str(path.relative_to(FIXTURES)) for path in (FIXTURES / agent).rglob("*.jsonl")}
        assert on_disk <= placed, agent


@pytest.mark.parametrize("fixture", sorted(EXPECTED))
def test_fixture_entries_tree_title_models_usage_and_words(laid_out: SessionIndex, fixture: str):
    agent, session_id, entries, tree_entries, roots, title, models, usage, word = EXPECTED[fixture]
    row = _row(laid_out, fixture)
    assert (row["agent"], row["session_id"], row["entry_count"]) == (agent, session_id, entries)
    tree = laid_out.tree(row["file_id"])
    assert (len(tree.entries), len(tree.roots)) == (tree_entries, roots)
    assert row["title"] == title
    found = laid_out.connection.execute(
        "SELECT DISTINCT model FROM entries WHERE session = ? AND model IS NOT NULL ORDER BY model",
        (row["file_id"],),
    ).fetchall()
    assert [model for (model,) in found] == models
    assert (
        row["input_tokens"], row["output_tokens"], row["cache_read_tokens"],
        row["cache_write_tokens"], row["premium_requests"],
    ) == usage  # fmt: skip
    assert session_id in {hit.session_id for hit in laid_out.search(word, limit=50)}


def test_tool_calls_and_results_are_paired_by_call_id(laid_out: SessionIndex):
    # jq -c 'select(.type == "tool.execution_complete") | .data.toolCallId' $F -> "call_1",
    # the id of the bash call the assistant.message before it requested.
    fixture = "copilot/jazzyalex__agent-sessions__aaaabbbb-1111-2222-3333-ccccddddeeee/events.jsonl"
    row = _row(laid_out, fixture)
    roles = laid_out.connection.execute(
        "SELECT role FROM entries WHERE session = ? AND role IS NOT NULL ORDER BY seq",
        (row["file_id"],),
    ).fetchall()
    assert [role for (role,) in roles] == ["user", "assistant", "toolResult", "assistant"]
    hits = laid_out.search("file1", limit=10)
    assert row["session_id"] in {hit.session_id for hit in hits}


def test_cwd_start_and_subagent_links(laid_out: SessionIndex):
    # jq -r 'select(.type == "session.start") | .data.context.cwd' $F -> /tmp/repo
    copilot = _row(laid_out, "copilot/jazzyalex__agent-sessions__small.jsonl")
    assert (copilot["cwd"], copilot["created_at"]) == ("/tmp/repo", "2025-12-18T21:32:04.182Z")
    # jq -r 'select(.sessionId) | .startTime' $F
    gemini = _row(laid_out, "gemini/jazzyalex__agent-sessions__jsonl_v040.jsonl")
    assert gemini["created_at"] == "2026-04-29T21:39:22.319Z"
    child = _row(laid_out, "cursor/jazzyalex__agent-sessions__subagent/subagents/child.jsonl")
    parent = _row(laid_out, "cursor/jazzyalex__agent-sessions__subagent/parent.jsonl")
    assert (child["parent_session_id"], child["parent_session"]) == ("parent", parent["path"])


def test_cursor_sessions_take_the_file_time(laid_out: SessionIndex):
    """Cursor's transcripts record no time: the session's modified time is the file's."""
    row = _row(laid_out, "cursor/jazzyalex__agent-sessions__small.jsonl")
    place = _home() / HOME_PLACES["cursor"]["cursor/jazzyalex__agent-sessions__small.jsonl"]
    from xcsh_store.times import iso_millis

    assert row["modified_at"] == iso_millis(place.stat().st_mtime_ns / 1e9)
    assert row["created_at"] is None


def _one_file(index: SessionIndex, tmp_path: Path, name: str, content: bytes) -> dict[str, Any]:
    root = tmp_path / "elsewhere"
    root.mkdir(exist_ok=True)
    (root / name).write_bytes(content)
    index.add_root(str(root))
    index.sync(workers=1)
    cursor = index.connection.execute("SELECT * FROM sessions WHERE path LIKE ?", (f"%/{name}",))
    names = [column[0] for column in cursor.getdescription()]
    return dict(zip(names, cursor.fetchall()[0], strict=True))


def test_gemini_rewind_branches_and_a_replaced_record_counts_once(
    index: SessionIndex, tmp_path: Path
):
    records = [
        record("u1", "user", "first question"),
        record("a1", "gemini", "", tokens=tokens_of(10), model="gemini-2.5-pro"),
        # The same message written again, complete: it replaces the first (usage once).
        record("a1", "gemini", "first answer", tokens=tokens_of(20), model="gemini-2.5-pro"),
        record("u2", "user", "second question"),
        record("a2", "gemini", "abandoned answer", tokens=tokens_of(7), model="gemini-2.5-pro"),
        {"$rewindTo": "u2"},
        record("u3", "user", "second question asked again"),
        {"$set": {"summary": "Rewound chat"}},
    ]
    row = _one_file(index, tmp_path, "session-g1.jsonl", chat_bytes(records))
    tree = index.tree(row["file_id"])
    # u1 -> a1 -> {u2 -> a2 (left behind), $rewindTo:u2:4 -> u3}
    assert len(tree.roots) == 1
    assert sorted(len(children) for children in tree.children.values() if children) == [1, 1, 1, 2]
    assert row["title"] == "Rewound chat"
    # a1 once (20 + 5 thoughts) and the rewound a2 (7 + 5: it was paid for); input 100 - 40.
    assert (row["input_tokens"], row["output_tokens"], row["cache_read_tokens"]) == (
        120, 37, 80,
    )  # fmt: skip
    assert [hit.session_id for hit in index.search("abandoned")] == ["g1"]
    assert index.verify().clean
    # show --context: the path to the leaf, as the index holds it (a record names no parent).
    context = index.context(row["file_id"])
    texts = [part["text"] for message in context.messages for part in message["content"]
             if part.get("type") == "text"]  # fmt: skip
    assert texts == ["first question", "first answer", "second question asked again"]


def test_gemini_checkpoint_continues_from_its_last_message(index: SessionIndex, tmp_path: Path):
    records = [
        record("u1", "user", "keep this"),
        record("a1", "gemini", "kept answer"),
        record("u2", "user", "dropped by the checkpoint"),
        {"$set": {"messages": [record("u1", "user", "keep this"),
                               record("a1", "gemini", "kept answer"),
                               record("x9", "gemini", "zeppelin only in the checkpoint")]}},
        record("u4", "user", "after the checkpoint"),
    ]  # fmt: skip
    row = _one_file(index, tmp_path, "session-g2.jsonl", chat_bytes(records))
    tree = index.tree(row["file_id"])
    # u1 -> a1 -> {u2, $set:x9:3 (a root: x9 is no record) -> u4}
    assert tree.children["$set:x9:3"] == ["u4"]
    assert sorted(tree.children["a1"]) == ["u2"] and "$set:x9:3" in tree.roots
    assert index.search("zeppelin") == []  # its messages are not searchable twice
    assert index.verify().clean


def test_an_unknown_copilot_version_is_kept_with_one_warning(
    index: SessionIndex, tmp_path: Path, caplog: pytest.LogCaptureFixture
):
    events = [
        {"type": "session.start", "id": "e1", "parentId": None,
         "data": {"sessionId": "future", "version": 7, "context": {"cwd": "/w"}}},
        {"type": "user.message", "id": "e2", "parentId": "e1",
         "data": {"content": "quixotic prompt in a known shape"}},
        {"type": "turn.future_kind", "id": "e3", "parentId": "e2", "data": {"words": "zebra"}},
    ]  # fmt: skip
    content = b"".join(orjson.dumps(event) + b"\n" for event in events)
    with caplog.at_level(logging.WARNING, logger="xcsh_store"):
        row = _one_file(index, tmp_path, "future.jsonl", content)
    warnings = [record.getMessage() for record in caplog.records]
    assert len(warnings) == 1 and "future.jsonl" in warnings[0] and "version 7" in warnings[0]
    assert (row["entry_count"], row["session_id"], row["cwd"]) == (3, "future", "/w")
    kept = index.connection.execute(
        "SELECT type, custom_type FROM entries WHERE session = ? ORDER BY seq", (row["file_id"],)
    ).fetchall()
    assert kept == [
        ("session.start", "unknown-version:7"), ("message", None), ("turn.future_kind", None),
    ]  # fmt: skip
    assert [hit.session_id for hit in index.search("quixotic")] == ["future"]
    assert index.search("zebra") == []
    assert index.verify().clean


def _snapshot(folder: Path) -> dict[str, tuple[bytes | None, int, int]]:
    """Every name below ``folder`` (dotfiles too) with its bytes, mtime and mode."""
    found = {}
    for path in [folder, *folder.rglob("*")]:
        info = path.lstat()
        content = path.read_bytes() if path.is_file() else None
        found[str(path)] = (content, info.st_mtime_ns, stat.S_IMODE(info.st_mode))
    return found


def _agent_folders() -> list[Path]:
    return [_home() / place for place in (".gemini", ".copilot", ".qwen", ".factory", ".cursor")]


def test_sync_gc_and_repair_write_nothing_in_the_agents_folders(index: SessionIndex):
    lay_out_agents(_home())
    folders = [path for root in _agent_folders() for path in [root, *root.rglob("*")]]
    for path in sorted(folders, key=lambda path: len(path.parts), reverse=True):
        path.chmod(0o555 if path.is_dir() else 0o444)
    try:
        before = {name: value for root in _agent_folders() for name, value in
                  _snapshot(root).items()}  # fmt: skip
        report = index.sync(workers=1)
        assert report.unreadable == {}
        agents = index.connection.execute(
            "SELECT agent, count(*) FROM sessions GROUP BY agent ORDER BY agent"
        ).fetchall()
        assert agents == [("copilot", 3), ("cursor", 3), ("droid", 1), ("gemini", 1), ("qwen", 2)]
        index.sync(full=True, workers=1)
        index.blob_gc(apply=True)
        assert index.verify(repair=True).clean
        after = {name: value for root in _agent_folders() for name, value in
                 _snapshot(root).items()}  # fmt: skip
        assert after == before
    finally:
        for path in folders:
            path.chmod(0o755 if path.is_dir() else 0o644)


def test_the_variables_that_move_the_folders_are_honoured(
    index: SessionIndex, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    moved = tmp_path / "moved"
    monkeypatch.setenv("GEMINI_CLI_HOME", str(moved / "g"))
    monkeypatch.setenv("COPILOT_HOME", str(moved / "c"))
    monkeypatch.setenv("QWEN_HOME", str(moved / "q"))
    for source, place in (
        ("gemini/jazzyalex__agent-sessions__jsonl_v040.jsonl", "g/.gemini/tmp/p/chats/s.jsonl"),
        ("copilot/juspay__shooter__session.jsonl", "c/session-state/s.jsonl"),
        ("qwen/Piebald-AI__splitrail__qwen_code.jsonl", "q/projects/p/chats/s.jsonl"),
    ):
        (moved / place).parent.mkdir(parents=True)
        shutil.copyfile(FIXTURES / source, moved / place)
    index.sync(workers=1)
    agents = index.connection.execute("SELECT agent FROM sessions ORDER BY agent").fetchall()
    assert agents == [("copilot",), ("gemini",), ("qwen",)]


# -- appends ----------------------------------------------------------------------------------


@settings(
    max_examples=int(os.environ.get("AGENTS_EXAMPLES", "20")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(agent=st.sampled_from(sorted(FORMATS)), data=st.data())
def test_appending_with_syncs_in_between_equals_one_full_read(
    index: SessionIndex, tmp_path: Path, agent: str, data: st.DataObject
):
    content = data.draw(FORMATS[agent]())
    cuts = sorted(set(data.draw(st.lists(st.integers(1, len(content)), max_size=6))))
    root = tmp_path / agent
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir()
    index.add_root(str(root))
    path = root / f"{agent}-session.jsonl"
    written = 0
    with path.open("wb") as stream:
        for cut in [*cuts, len(content)]:
            stream.write(content[written:cut])
            stream.flush()
            written = cut
            index.sync(workers=1)
    agents = index.connection.execute("SELECT agent FROM sessions").fetchall()
    assert agents == [(agent,)]
    report = index.verify()
    assert report.clean, report
    index.remove_root(str(root))
    index.sync(workers=1)


def _cli(agent_dir: Path, *args: str) -> str:
    from click.testing import CliRunner

    from xcsh_store.cli.app import cli

    result = CliRunner().invoke(cli, ["--agent-dir", str(agent_dir), *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_the_verbs_answer_for_every_agent(agent_dir: Path):
    lay_out_agents(_home())
    _cli(agent_dir, "sync", "--init", "--workers", "1")
    listed = orjson.loads(_cli(agent_dir, "ls", "--limit", "0", "--json"))
    assert sorted({item["agent"] for item in listed}) == [
        "copilot", "cursor", "droid", "gemini", "qwen",
    ]  # fmt: skip
    gemini = orjson.loads(_cli(agent_dir, "ls", "--agent", "gemini", "--json"))
    assert [item["id"] for item in gemini] == ["gemini_stage0_jsonl"]
    assert "Say hello and list files." in _cli(agent_dir, "show", "gemini_stage0", "--tree")
    usage = orjson.loads(_cli(agent_dir, "usage", "--by", "agent", "--json"))
    rows = {row["key"]: row for row in usage["rows"]}
    # The Copilot shutdown's premium request and the Gemini tokens above.
    assert rows["copilot"]["premium_requests"] == 1
    assert rows["gemini"]["output_tokens"] == 228
    hits = orjson.loads(_cli(agent_dir, "search", "subagent", "--agent", "cursor", "--json"))
    assert {hit["session_id"] for hit in hits} == {"parent"}


def test_the_mcp_tools_take_every_agent():
    from typing import get_args

    from xcsh_store.agent_tools.tools import Agent
    from xcsh_store.agents import AGENTS

    assert set(get_args(Agent)) == set(AGENTS)


def test_gemini_cwd_comes_from_the_session_context(index: SessionIndex, tmp_path: Path):
    # As Gemini CLI writes it (its getEnvironmentContext): the first user record.
    context = (
        "<session_context>\nThis is the Gemini CLI. We are setting up the context for our chat.\n"
        "- **Workspace Directories:**\n  - /home/dd/project\n  - /home/dd/other\n"
        "</session_context>"
    )
    records = [
        record("c1", "user", context),
        record("u1", "user", "the real question"),
    ]
    row = _one_file(index, tmp_path, "session-ctx.jsonl", chat_bytes(records))
    assert (row["cwd"], row["first_message"]) == ("/home/dd/project", "the real question")


def test_a_qwen_chat_compression_is_a_compaction(index: SessionIndex, tmp_path: Path):
    # As Qwen Code's recordChatCompression writes it.
    base = {"sessionId": "q1", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/w"}
    lines = [
        {**base, "uuid": "a", "parentUuid": None, "type": "user",
         "message": {"role": "user", "parts": [{"text": "first prompt"}]}},
        {**base, "uuid": "b", "parentUuid": "a", "type": "system", "subtype": "chat_compression",
         "systemPayload": {"info": {"originalTokenCount": 1000, "newTokenCount": 100},
                           "compressedHistory": [{"role": "user", "parts": [
                               {"text": "<state_snapshot>marmalade summary</state_snapshot>"}]}]}},
    ]  # fmt: skip
    content = b"".join(orjson.dumps(line) + b"\n" for line in lines)
    row = _one_file(index, tmp_path, "q1.jsonl", content)
    kinds = index.connection.execute(
        "SELECT type FROM entries WHERE session = ? ORDER BY seq", (row["file_id"],)
    ).fetchall()
    assert kinds == [("message",), ("compaction",)]
    assert [hit.session_id for hit in index.search("marmalade")] == ["q1"]


def test_watch_reads_appends_and_writes_nothing_in_the_agents_folders(agent_dir: Path):
    pytest.importorskip("watchfiles")
    from helpers.watch_process import Watch

    placed = lay_out_agents(_home())
    (agent_dir / "sessions").mkdir(parents=True)
    gemini = next(path for path in placed if ".gemini" in path.parts)
    before = {name: value for root in _agent_folders() for name, value in
              _snapshot(root).items()}  # fmt: skip
    running = Watch(agent_dir)
    try:
        appended = record("late-1", "user", "periwinkle asked while watched")
        with gemini.open("ab") as stream:
            stream.write(orjson.dumps(appended) + b"\n")
        running.wait_for(
            lambda line: line["change"] == "indexed" and line.get("path") == str(gemini)
        )
        assert running.stop() == 0
    finally:
        if running.process.poll() is None:
            running.process.kill()
    with SessionIndex.open(str(agent_dir), read_only=True) as index:
        assert [hit.session_id for hit in index.search("periwinkle")] == ["gemini_stage0_jsonl"]
    after = {name: value for root in _agent_folders() for name, value in
             _snapshot(root).items()}  # fmt: skip
    del before[str(gemini)], after[str(gemini)]  # the one file appended to (by the "agent")
    assert after == before


def test_a_cursor_prompt_is_its_user_query(index: SessionIndex, tmp_path: Path):
    # As in the real transcript the fixtures README describes.
    lines = [
        {"role": "user", "message": {"content": [{"type": "text", "text":
            "<user_query>\nfix the flaky tangerine test\n</user_query>\n"
            "<attached_files>\nsrc/app.py\n</attached_files>"}]}},
        {"role": "assistant", "message": {"content": [{"type": "text", "text": "[REDACTED]"},
                                                      {"type": "text", "text": "Fixed."}]}},
    ]  # fmt: skip
    content = b"".join(orjson.dumps(line) + b"\n" for line in lines)
    row = _one_file(index, tmp_path, "c1.jsonl", content)
    assert row["first_message"] == "fix the flaky tangerine test"
    assert index.search("REDACTED") == [] and index.search("attached") == []


def test_a_gemini_subagent_chat_names_its_parent(index: SessionIndex, tmp_path: Path):
    # chats/<parent session id>/<session id>.jsonl, as Gemini CLI keeps a subagent's chat.
    folder = tmp_path / "tmp" / "project" / "chats" / "parent-session"
    folder.mkdir(parents=True)
    meta = {"sessionId": "child", "projectHash": "ab", "startTime": "2026-01-01T00:00:00.000Z",
            "kind": "subagent"}  # fmt: skip
    (folder / "child.jsonl").write_bytes(orjson.dumps(meta) + b"\n")
    index.add_root(str(tmp_path / "tmp"))
    index.sync(workers=1)
    found = index.connection.execute(
        "SELECT session_id, parent_session_id, agent FROM sessions"
    ).fetchall()
    assert found == [("child", "parent-session", "gemini")]
