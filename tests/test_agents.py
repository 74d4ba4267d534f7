"""Claude Code and Codex sessions in the index: every real file of tests/fixtures/claude and
tests/fixtures/codex indexes with the session count, tree shape, title, searchable words and
usage totals worked out by hand from the file.

Each expected value comes from a jq one-liner over the fixture (``$F``), written next to it:

* tree entries: ``jq -s 'map(select(.uuid)) | length' $F`` (Claude lines with a uuid; Codex
  entries are every object, ``jq -s length``);
* roots: entries whose parent (``parentUuid``, else ``logicalParentUuid``) is null or not in
  the file: ``jq -s 'map(select(.uuid)) as $e | ($e | map(.uuid)) as $ids | $e | map(select(
  (.parentUuid // .logicalParentUuid) as $p | $p == null or ($ids | index([$p])) == null)) |
  length' $F``;
* branch points: ``jq -s 'map(select(.uuid)) | map(.parentUuid // .logicalParentUuid) |
  map(select(. != null)) | group_by(.) | map(select(length > 1)) | length' $F``;
* sidechain entries: ``jq -s 'map(select(.isSidechain == true)) | length' $F``;
* title: the last ``summary``/``ai-title``/``custom-title``: ``jq -rs 'map(select(.type ==
  "summary" or .type == "ai-title")) | last | (.summary // .aiTitle)' $F``;
* Claude usage, one streamed response counted once with its last line's figures: ``jq -sc
  'map(select(.type == "assistant" and .message.usage)) | group_by(.message.id + ":" +
  (.requestId // "")) | map(last.message.usage) | [(map(.input_tokens) | add),
  (map(.output_tokens) | add), (map(.cache_read_input_tokens // 0) | add),
  (map(.cache_creation_input_tokens // 0) | add)]' $F``;
* Codex usage, each token_count event once (a repeated event has the same running total):
  ``jq -sc 'map(select(.type == "event_msg" and .payload.type == "token_count" and
  .payload.info != null)) | unique_by(.payload.info.total_token_usage) |
  map(.payload.info.last_token_usage) | [(map(.input_tokens - .cached_input_tokens) | add),
  (map(.output_tokens) | add), (map(.cached_input_tokens) | add)]' $F``;
* a searchable word: one found with ``jq -r 'select(.type == "assistant") | .message.content[]
  | select(.type == "text") | .text' $F`` (Claude) or in the file's messages (Codex).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest
from session_builder import FIXTURES

from xcsh_store.index import SessionIndex

CLAUDE = FIXTURES / "claude"
CODEX = FIXTURES / "codex"

# file: (tree entries, roots, branch points, sidechain entries, title, (input, output,
# cache read, cache write), a word of an assistant's text, thinking or a tool call). A summary
# line titles the session holding its leafUuid: the large conversation's second one titles the
# tiny conversation; its first, and d-kimuson's, name a leaf no file here holds.
CLAUDE_FILES: dict[str, tuple[int, int, int, int, str | None, tuple[int, ...], str]] = {
    "KaisaLabs__octora__claude-session.jsonl": (5, 1, 0, 0, None, (0, 0, 0, 0), "administrator"),
    "apanloco__random__claude-session.jsonl": (
        85, 1, 7, 0, None, (42, 6911, 506652, 18495), "AudioContext",
    ),
    "bastion-agentique__bastion__claude-session.jsonl": (
        45, 1, 5, 0, None, (0, 0, 0, 0), "deployment",
    ),
    "d-kimuson__claude-code-viewer__fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl": (
        437, 6, 0, 405, None,
        (818, 51933, 3647854, 137976), "Comprehensive",
    ),
    "ikihin__bhavana__claude-session.jsonl": (
        296, 1, 6, 0, "Solana-based fractional property investment platform for Indonesia",
        (129, 55999, 6410533, 342491), "differentiated",
    ),
    "jkindrix__claude-snatch__agent-1111111111111111.jsonl": (
        2, 1, 0, 2, None, (6, 8, 0, 0), "modules",
    ),
    "jkindrix__claude-snatch__c0ffee00-1111-2222-3333-444455556666.jsonl": (
        2, 1, 0, 0, None, (20, 40, 0, 0), "Spawning",
    ),
    # The compact_boundary's logicalParentUuid is not in this cut of a session: the one root.
    "robcmills__cc.nvim__compact_boundary.jsonl": (3, 1, 0, 0, None, (0, 0, 0, 0), "Hammerspoon"),
    "sheurich__episodic-memory__claude-large-conversation.jsonl": (
        458, 1, 0, 0, None,
        (360, 22976, 66925567, 2395354), "Backpressure",
    ),
    "sheurich__episodic-memory__claude-long-conversation.jsonl": (
        262, 1, 0, 0, None, (2005, 3675, 4890806, 1129638), "Accessibility",
    ),
    "sheurich__episodic-memory__claude-tiny-conversation.jsonl": (
        7, 1, 0, 0, "Clarifying AI Assistant's Action-Taking Guidelines", (14, 3, 76406, 483),
        "Architectural",
    ),
    "thejamesnick__agentic-wallet__claude-session.jsonl": (
        11, 1, 1, 0, None, (53272, 135, 0, 0), "Engineering",
    ),
}  # fmt: skip

# file: (entries, title, (input without cached, output, cached), user prompts, a word, skipped)
# user prompts: ``jq -s 'map(select(.payload.type == "user_message")) | length' $F`` (the
# envelope-less file has none: its one user message, ``jq -s 'map(select(.role == "user"))'``).
ACIDIC = "rollout-2025-11-17T15-30-28-019a93b9-f380-7600-98ff-940e6b99603c.jsonl"
CODEX_FILES: dict[str, tuple[int, str | None, tuple[int, ...], int, str, int]] = {
    f"AcidicSoil__codex-session-view__{ACIDIC}": (
        279, None, (71933, 22305, 1027328), 1, "lmstudio", 0,
    ),
    "AkashJana18__edgerunner__codex-session.jsonl": (
        867, None, (1646437, 98116, 34132736), 5, "TxLINE", 0,
    ),
    "Shyaar__beam_v1__codex-session.jsonl": (
        84, "Apply for agentic engineering grant", (16972, 1586, 77440), 1, "Telemetry", 0,
    ),
    "jkindrix__claude-snatch__legacy_session.jsonl": (3, None, (0, 0, 0), 1, "synthetic", 0),
    "kunalcode12__Empire-of-bits-vorld__codex-session.jsonl": (
        88, "Apply for Superteam grant", (63626, 2478, 164608), 1, "Telegram", 0,
    ),
    # Line 8 is "this is intentionally malformed": skipped and counted (9 lines, 8 objects).
    "rudrankriyam__agent-dossier__current.jsonl": (8, None, (0, 0, 0), 1, "cargo", 1),
    "uzaxirr__raze__codex-session.jsonl": (152, None, (96556, 19360, 1160576), 1, "PgVector", 0),
}  # fmt: skip


def _indexed(index: SessionIndex, root: Path, files: list[Path]) -> SessionIndex:
    for source in files:
        shutil.copyfile(source, root / source.name)
    index.add_root(str(root))
    index.sync(workers=1)
    return index


@pytest.fixture
def claude_index(index: SessionIndex, tmp_path: Path) -> SessionIndex:
    root = tmp_path / "claude" / "projects"
    (root / "project").mkdir(parents=True)
    for source in sorted(CLAUDE.glob("*.jsonl")):
        shutil.copyfile(source, root / "project" / source.name)
    index.add_root(str(root))
    index.sync(workers=1)
    return index


@pytest.fixture
def codex_index(index: SessionIndex, tmp_path: Path) -> SessionIndex:
    root = tmp_path / "codex" / "sessions"
    root.mkdir(parents=True)
    return _indexed(index, root, sorted(CODEX.glob("*.jsonl")))


def _session_row(index: SessionIndex, name: str) -> dict[str, Any]:
    cursor = index.connection.execute(
        "SELECT s.*, f.agent AS file_agent, f.skipped_count FROM sessions AS s"
        " JOIN files AS f ON f.id = s.file_id WHERE f.path LIKE ?",
        (f"%/{name}",),
    )
    names = [column[0] for column in cursor.getdescription()]
    rows = [dict(zip(names, row, strict=True)) for row in cursor]
    assert len(rows) == 1, name
    return rows[0]


def test_every_fixture_is_indexed_as_one_session_of_its_agent(claude_index: SessionIndex):
    agents = claude_index.connection.execute(
        "SELECT agent, count(*) FROM sessions GROUP BY agent"
    ).fetchall()
    assert agents == [("claude", len(list(CLAUDE.glob("*.jsonl"))))]


def test_every_codex_fixture_is_one_codex_session(codex_index: SessionIndex):
    agents = codex_index.connection.execute(
        "SELECT agent, count(*) FROM sessions GROUP BY agent"
    ).fetchall()
    assert agents == [("codex", len(list(CODEX.glob("*.jsonl"))))]


def test_fixture_tables_cover_every_file():
    assert set(CLAUDE_FILES) == {path.name for path in CLAUDE.glob("*.jsonl")}
    assert set(CODEX_FILES) == {path.name for path in CODEX.glob("*.jsonl")}


@pytest.mark.parametrize("name", sorted(CLAUDE_FILES))
def test_claude_file_tree_title_usage_and_words(claude_index: SessionIndex, name: str):
    tree_entries, roots, branch_points, sidechain, title, usage, word = CLAUDE_FILES[name]
    row = _session_row(claude_index, name)
    tree = claude_index.tree(row["file_id"])
    assert len(tree.entries) == tree_entries
    assert len(tree.roots) == roots
    assert sum(1 for children in tree.children.values() if len(children) > 1) == branch_points
    sidechain_rows = claude_index.connection.execute(
        "SELECT count(*) FROM entries WHERE session = ? AND custom_type = 'sidechain'",
        (row["file_id"],),
    ).fetchall()[0][0]
    assert sidechain_rows == sidechain
    assert row["title"] == title
    assert (
        row["input_tokens"],
        row["output_tokens"],
        row["cache_read_tokens"],
        row["cache_write_tokens"],
    ) == usage
    hits = claude_index.search(word, limit=50)
    assert row["session_id"] in {hit.session_id for hit in hits}


@pytest.mark.parametrize("name", sorted(CODEX_FILES))
def test_codex_file_entries_title_usage_and_words(codex_index: SessionIndex, name: str):
    entries, title, usage, prompts, word, skipped = CODEX_FILES[name]
    row = _session_row(codex_index, name)
    assert row["entry_count"] == entries
    assert row["title"] == title
    assert (row["input_tokens"], row["output_tokens"], row["cache_read_tokens"]) == usage
    users = codex_index.connection.execute(
        "SELECT count(*) FROM entries WHERE session = ? AND role = 'user'", (row["file_id"],)
    ).fetchall()[0][0]
    assert users == prompts
    assert row["skipped_count"] == skipped
    hits = codex_index.search(word, limit=50)
    assert row["session_id"] in {hit.session_id for hit in hits}
    tree = codex_index.tree(row["file_id"])
    # No ids in the format: one chain in file order.
    assert len(tree.roots) == 1
    assert len(tree.leaves) == 1


def test_streamed_response_lines_count_once(claude_index: SessionIndex):
    # 32 assistant lines with usage, 22 responses:
    # jq -s 'map(select(.type == "assistant" and .message.usage)) | length' $F  -> 32
    # jq -s 'map(select(.type == "assistant" and .message.usage)) |
    #        group_by(.message.id + ":" + (.requestId // "")) | length' $F  -> 22
    row = _session_row(claude_index, "apanloco__random__claude-session.jsonl")
    counted = claude_index.connection.execute(
        "SELECT count(*) FROM entries WHERE session = ? AND input_tokens IS NOT NULL",
        (row["file_id"],),
    ).fetchall()[0][0]
    assert counted == 22


def test_records_without_text_are_entries_of_their_own_type(claude_index: SessionIndex):
    # jq -r .type $F | sort | uniq -c: 18 progress, 13 file-history-snapshot lines.
    row = _session_row(claude_index, "apanloco__random__claude-session.jsonl")
    kinds = dict(
        claude_index.connection.execute(
            "SELECT e.type, count(*) FROM entries AS e"
            " WHERE e.session = ? AND e.type IN ('progress', 'file-history-snapshot')"
            " AND NOT EXISTS (SELECT 1 FROM entries_fts_docsize AS d WHERE d.id = e.pk)"
            " GROUP BY e.type",
            (row["file_id"],),
        ).fetchall()
    )
    assert kinds == {"progress": 18, "file-history-snapshot": 13}


def test_compact_summary_is_a_compaction_after_the_boundary(claude_index: SessionIndex):
    row = _session_row(claude_index, "robcmills__cc.nvim__compact_boundary.jsonl")
    kinds = claude_index.connection.execute(
        "SELECT type, custom_type FROM entries WHERE session = ? ORDER BY seq", (row["file_id"],)
    ).fetchall()
    # Line 1 the boundary (system, compact_boundary), line 2 its isCompactSummary user line,
    # line 3 a meta (isMeta) user line: jq -c '[.type, .subtype, .isCompactSummary, .isMeta]'
    assert kinds == [
        ("system", "compact_boundary"),
        ("compaction", None),
        ("custom_message", "meta"),
    ]


def test_subagent_file_links_to_its_parent(index: SessionIndex, tmp_path: Path):
    project = tmp_path / "projects" / "project"
    parent_id = "c0ffee00-1111-2222-3333-444455556666"
    subagents = project / parent_id / "subagents"
    subagents.mkdir(parents=True)
    shutil.copyfile(
        CLAUDE / f"jkindrix__claude-snatch__{parent_id}.jsonl", project / f"{parent_id}.jsonl"
    )
    shutil.copyfile(
        CLAUDE / "jkindrix__claude-snatch__agent-1111111111111111.jsonl",
        subagents / "agent-1111111111111111.jsonl",
    )
    index.add_root(str(tmp_path / "projects"))
    index.sync(workers=1)
    rows = index.connection.execute(
        "SELECT session_id, parent_session_id, parent_session FROM sessions ORDER BY session_id"
    ).fetchall()
    assert rows == [
        ("agent-1111111111111111", parent_id, str(project / parent_id) + ".jsonl"),
        (parent_id, None, None),
    ]


def test_codex_subagent_rollout_names_its_parent_thread(codex_index: SessionIndex):
    row = _session_row(codex_index, "rudrankriyam__agent-dossier__current.jsonl")
    # jq -c '.payload.forked_from_id' of line 1: "root-001"
    assert (row["session_id"], row["parent_session_id"]) == ("child-001", "root-001")


def test_codex_usage_is_attributed_to_the_turn_model(codex_index: SessionIndex):
    row = _session_row(codex_index, "AkashJana18__edgerunner__codex-session.jsonl")
    models = codex_index.connection.execute(
        "SELECT DISTINCT model FROM entries WHERE session = ? AND input_tokens IS NOT NULL"
        " ORDER BY model",
        (row["file_id"],),
    ).fetchall()
    # jq -s 'map(select(.type == "turn_context")) | map(.payload.model) | unique' $F
    assert models == [("gpt-5.6-luna",), ("gpt-5.6-sol",)]


def test_a_fixture_index_verifies_clean(claude_index: SessionIndex, tmp_path: Path):
    root = tmp_path / "codex" / "sessions"
    root.mkdir(parents=True)
    _indexed(claude_index, root, sorted(CODEX.glob("*.jsonl")))
    report = claude_index.verify()
    assert report.clean, report


def _codex_line(second: int, kind: str, payload: dict[str, Any]) -> bytes:
    stamp = f"2026-02-01T00:00:{second:02d}.000Z"
    return orjson.dumps({"timestamp": stamp, "type": kind, "payload": payload}) + b"\n"


@pytest.mark.parametrize("synced_before_rollback", [False, True])
def test_a_codex_rollback_starts_a_branch(
    index: SessionIndex, tmp_path: Path, synced_before_rollback: bool
):
    """Three turns, the last one rolled back, then a new prompt: the new turn hangs off where
    the rolled-back one began (a branch point with two leaves), and the active path holds the
    first two turns and the new one; also when a sync read the turns before the rollback."""
    turn = [
        (0, "session_meta", {"id": "t", "timestamp": "2026-02-01T00:00:00.000Z", "cwd": "/w"}),
    ]
    for number, word in enumerate(["first", "second", "third"], 1):
        answer = [{"type": "output_text", "text": f"{word} answer"}]
        turn += [
            (number, "event_msg", {"type": "user_message", "message": f"{word} prompt"}),
            (number, "response_item", {"type": "message", "role": "assistant", "content": answer}),
        ]
    turn += [
        (5, "event_msg", {"type": "thread_rolled_back", "num_turns": 1}),
        (6, "event_msg", {"type": "user_message", "message": "another prompt"}),
    ]
    root = tmp_path / "codex"
    root.mkdir()
    lines = [_codex_line(*line) for line in turn]
    index.add_root(str(root))
    if synced_before_rollback:
        (root / "rollout.jsonl").write_bytes(b"".join(lines[:7]))
        index.sync(workers=1)
    (root / "rollout.jsonl").write_bytes(b"".join(lines))
    index.sync(workers=1)
    assert index.verify().clean
    tree = index.tree("t")
    assert [entry_id for entry_id, children in tree.children.items() if len(children) > 1] == [
        tree.entries[entry_id].id
        for entry_id in tree.entries
        if tree.entries[entry_id].seq == 4  # "second answer": where the third turn began
    ]
    assert len(tree.leaves) == 2
    active = [row.seq for row in index.branch("t")]
    assert active == [0, 1, 2, 3, 4, 7, 8]
