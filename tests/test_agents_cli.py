"""The verbs across agents: ``--agent`` on ls, search, usage and history, ``agent`` in their
--json items, ``usage --by agent`` with its estimated and unpriced costs, prompt recall from
Claude Code's and Codex's history.jsonl, and show --context of a compacted Claude session.

The fixture files are synced from $CLAUDE_CONFIG_DIR/projects and $CODEX_HOME/sessions (the
test's temp home, see conftest), so discovery is what finds them."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from helpers.cli_runs import run, run_json
from session_builder import FIXTURES, header, message, sessions_dir, write_session

CLAUDE_COUNT = len(list((FIXTURES / "claude").glob("*.jsonl")))
CODEX_COUNT = len(list((FIXTURES / "codex").glob("*.jsonl")))


@pytest.fixture
def mixed(agent_dir: Path) -> Path:
    """An agent dir with one xcsh session, and every Claude and Codex fixture in the agents'
    own folders; synced."""
    write_session(
        sessions_dir(agent_dir) / "x.jsonl",
        [header("x"), message("u1", None, "user", "cargo build fails on xcsh")],
    )
    claude = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "projects" / "-work"
    codex = Path(os.environ["CODEX_HOME"]) / "sessions" / "2026" / "01" / "01"
    claude.mkdir(parents=True)
    codex.mkdir(parents=True)
    for source in (FIXTURES / "claude").glob("*.jsonl"):
        shutil.copyfile(source, claude / source.name)
    for source in (FIXTURES / "codex").glob("*.jsonl"):
        shutil.copyfile(source, codex / source.name)
    run(agent_dir, "sync", "--workers", "1")
    return agent_dir


def test_ls_lists_every_agent_and_says_which(mixed: Path):
    items = run_json(mixed, "ls", "--limit", "0")
    counts: dict[str, int] = {}
    for item in items:
        counts[item["agent"]] = counts.get(item["agent"], 0) + 1
    assert counts == {"xcsh": 1, "claude": CLAUDE_COUNT, "codex": CODEX_COUNT}


def test_ls_agent_filter_is_repeatable(mixed: Path):
    items = run_json(mixed, "ls", "--limit", "0", "--agent", "codex", "--agent", "xcsh")
    assert sorted({item["agent"] for item in items}) == ["codex", "xcsh"]
    assert len(items) == CODEX_COUNT + 1


def test_search_agent_filter(mixed: Path):
    # "cargo": the xcsh prompt above, and Codex tool calls (grep -c cargo on the codex files).
    every = {hit["agent"] for hit in run_json(mixed, "search", "cargo", "--limit", "100")}
    assert {"xcsh", "codex"} <= every
    codex = run_json(mixed, "search", "cargo", "--agent", "codex", "--limit", "100")
    assert codex and {hit["agent"] for hit in codex} == {"codex"}


def test_an_unknown_agent_is_refused(mixed: Path):
    assert "Invalid value for '--agent'" in run(mixed, "ls", "--agent", "nosuch", code=2)


def test_usage_by_agent_counts_estimated_and_unpriced_costs(mixed: Path):
    rows = {row["key"]: row for row in run_json(mixed, "usage", "--by", "agent")["rows"]}
    assert set(rows) == {"claude", "codex"}  # the xcsh session has no usage
    # Responses, each streamed response once (over every Claude fixture):
    # cat claude/*.jsonl | jq -sc 'map(select(.type == "assistant" and .message.usage)) |
    #   group_by(.sessionId + .message.id + ":" + (.requestId // "")) | length'
    # 536, every one priced (tests/test_pricing.py); token_count events, each once (per file,
    # by running total): 241, every one priced.
    assert (rows["claude"]["estimated_cost_entries"], rows["claude"]["unpriced_entries"]) == (
        536,
        0,
    )
    assert (rows["codex"]["estimated_cost_entries"], rows["codex"]["unpriced_entries"]) == (241, 0)
    # The sums of tests/test_agents.py's per-file figures.
    assert rows["claude"]["input_tokens"] == 42 + 818 + 129 + 6 + 20 + 360 + 2005 + 14 + 53272
    assert rows["codex"]["cache_read_tokens"] == (1027328 + 34132736 + 77440 + 164608 + 1160576)


def test_usage_table_says_which_costs_are_estimates(mixed: Path):
    output = run(mixed, "usage", "--by", "agent")
    assert "777 entries' cost is estimated (their agents record tokens, not costs)" in output


def test_usage_agent_filter(mixed: Path):
    rows = run_json(mixed, "usage", "--by", "model", "--agent", "codex")["rows"]
    assert {row["key"].split("/")[0] for row in rows} == {"openai"}


def test_subagent_usage_rolls_up_into_its_parent(agent_dir: Path):
    project = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "projects" / "-work"
    parent = "c0ffee00-1111-2222-3333-444455556666"
    (project / parent / "subagents").mkdir(parents=True)
    shutil.copyfile(
        FIXTURES / "claude" / f"jkindrix__claude-snatch__{parent}.jsonl",
        project / f"{parent}.jsonl",
    )
    shutil.copyfile(
        FIXTURES / "claude" / "jkindrix__claude-snatch__agent-1111111111111111.jsonl",
        project / parent / "subagents" / "agent-1111111111111111.jsonl",
    )
    run(agent_dir, "sync", "--init", "--workers", "1")
    by_session = {
        row["key"]: row["input_tokens"]
        for row in run_json(agent_dir, "usage", "--by", "session")["rows"]
    }
    # Each file's own: input_tokens 20 (parent), 6 (subagent): jq '.message.usage.input_tokens'
    assert by_session == {parent: 20, "agent-1111111111111111": 6}
    rolled = run_json(agent_dir, "usage", "--by", "root-session")
    assert [(row["key"], row["input_tokens"]) for row in rolled["rows"]] == [(parent, 26)]
    assert rolled["total"]["input_tokens"] == 26  # counted once


def _write_histories() -> None:
    claude = Path(os.environ["CLAUDE_CONFIG_DIR"])
    codex = Path(os.environ["CODEX_HOME"])
    claude.mkdir(parents=True, exist_ok=True)
    codex.mkdir(parents=True, exist_ok=True)
    (claude / "history.jsonl").write_text(
        json.dumps({"display": "refactor the quokka parser", "pastedContents": {},
                    "timestamp": 1767225600000, "project": "/work/app"}) + "\n"
        + "not json\n"
    )  # fmt: skip
    (codex / "history.jsonl").write_text(
        json.dumps({"session_id": "t-1", "ts": 1767229200, "text": "explain the quokka test"})
        + "\n"
    )


def test_history_recalls_claude_and_codex_prompts(agent_dir: Path):
    _write_histories()
    run(agent_dir, "sync", "--init")
    hits = run_json(agent_dir, "history", "search", "quokka", "--sessions")
    assert [(hit["agent"], hit["prompt"], hit["cwd"]) for hit in hits] == [
        ("codex", "explain the quokka test", None),  # ts 1767229200: an hour later
        ("claude", "refactor the quokka parser", "/work/app"),
    ]
    assert hits[1]["created"] == "2026-01-01T00:00:00Z"


def test_history_agent_filter(agent_dir: Path):
    _write_histories()
    run(agent_dir, "sync", "--init")
    hits = run_json(agent_dir, "history", "recent", "--agent", "claude")
    assert [hit["prompt"] for hit in hits] == ["refactor the quokka parser"]


def test_history_files_are_not_read_with_agent_roots_off(agent_dir: Path):
    _write_histories()
    run(agent_dir, "sync", "--init")
    assert len(run_json(agent_dir, "history", "recent", "--sessions")) == 2
    run(agent_dir, "sync", "--no-agent-roots")
    assert run_json(agent_dir, "history", "recent", "--sessions") == []


def test_show_context_of_a_compacted_claude_session_starts_at_its_summary(mixed: Path):
    shown = run_json(mixed, "show", "robcmills__cc.nvim__compact_boundary", "--context")
    roles = [item["role"] for item in shown["context"]["messages"]]
    # Line 2 is the isCompactSummary user line; line 3 a meta line of the user's turn.
    assert roles == ["compactionSummary", "custom"]
    assert shown["session"]["agent"] == "claude"


def test_show_tree_of_a_claude_session_with_sidechains(mixed: Path):
    # 6 roots: the main conversation and 5 Task sidechains (tests/test_agents.py derives them).
    shown = run_json(mixed, "show", "fe5e1c67", "--tree")
    assert len(shown["roots"]) == 6
    assert len(shown["nodes"]) == 437


def _usage_line(output: str) -> str:
    return next(line for line in output.splitlines() if line.startswith("Usage"))


def test_estimated_and_unpriced_costs_are_marked_in_text(mixed: Path):
    # 019a93b9: gpt-5.1-codex, an estimate (a model without a price: tests/test_costs.py).
    assert _usage_line(run(mixed, "show", "019a93b9")).startswith("Usage    ~$0.44 · ")
    assert _usage_line(run(mixed, "show", "x")).startswith("Usage    $0 · ")
