"""What the user sees of costs and tokens on a real machine (issue 25, the money): unknown costs
are null and ``?``, never $0; one meaning of "tokens"; a session kept in two files counts once;
days in the user's time zone."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.cli_runs import run, run_json
from real_home import RealHome

# badlogic__pi-mono__large-session.jsonl (pi, v1) and its oh-my-pi migration
# yorha2B0826__oh-my-pi__large-session.omp-title-v3.jsonl hold this one session.
DUPLICATED = "d703a1a9-1b7b-4fb1-b512-c9738b1fe617"


def unpriced_session(claude_projects: Path) -> Path:
    """A Claude Code session of two responses: one of a model no source prices, one of
    claude-opus-4-6 (10 input tokens at $5: $0.00005)."""
    folder = claude_projects / "-work"
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    for number, model in enumerate(("claude-unheard-of-9", "claude-opus-4-6")):
        lines.append(
            {
                "type": "assistant",
                "uuid": f"u{number}",
                "parentUuid": f"u{number - 1}" if number else None,
                "sessionId": "5e55104e-0000-0000-0000-000000000000",
                "cwd": "/work",
                "timestamp": f"2026-06-01T10:0{number}:00.000Z",
                "requestId": f"r{number}",
                "message": {
                    "id": f"m{number}",
                    "role": "assistant",
                    "model": model,
                    "content": [{"type": "text", "text": "hi"}],
                    "usage": {"input_tokens": 10, "output_tokens": 0},
                },
            }
        )
    path = folder / "5e55104e-0000-0000-0000-000000000000.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


@pytest.fixture
def claude_projects() -> Path:
    return Path(os.environ["CLAUDE_CONFIG_DIR"]) / "projects"


def test_an_unpriced_model_is_null_in_json_and_a_question_mark_in_text(
    agent_dir: Path, claude_projects: Path
):
    unpriced_session(claude_projects)
    run(agent_dir, "sync", "--init")
    by_model = {row["key"]: row for row in run_json(agent_dir, "usage", "--by", "model")["rows"]}
    assert by_model["claude-unheard-of-9"]["cost"] is None
    assert by_model["claude-unheard-of-9"]["unpriced_entries"] == 1
    assert by_model["anthropic/claude-opus-4-6"]["cost"] == pytest.approx(0.00005)
    total = run_json(agent_dir, "usage", "--by", "model")["total"]
    assert (total["cost"], total["unpriced_entries"]) == (pytest.approx(0.00005), 1)
    text = run(agent_dir, "usage", "--by", "model")
    unpriced_line = next(line for line in text.splitlines() if "unheard" in line)
    assert unpriced_line.rstrip().endswith("?")
    assert "at least $0.0001, 1 entries unpriced" in text
    (listed,) = run_json(agent_dir, "ls")
    assert (listed["cost"], listed["unpriced_entries"]) == (pytest.approx(0.00005), 1)
    assert "≥~$0.0001" in run(agent_dir, "ls")


def test_a_session_of_unpriced_models_only_costs_null_not_zero(
    agent_dir: Path, claude_projects: Path
):
    path = unpriced_session(claude_projects)
    path.write_text(path.read_text().replace("claude-opus-4-6", "claude-unheard-of-9"))
    run(agent_dir, "sync", "--init")
    (listed,) = run_json(agent_dir, "ls")
    assert listed["cost"] is None
    assert run_json(agent_dir, "usage", "--by", "agent")["total"]["cost"] is None
    shown = run(agent_dir, "show", "5e55104e").splitlines()
    # The Usage line opens with the cost: unknown, never $0.
    assert next(line for line in shown if line.startswith("Usage")).split()[1] == "?"


def test_tokens_mean_the_same_in_ls_show_and_usage(real_home: RealHome, agent_dir: Path):
    run(agent_dir, "sync", "--init")
    session = "0fae0449-64d3-4788-8622-d3a47d82c14b"
    # input 360 + output 22,976 + cache read 66,925,567 + cache write 2,395,354
    everything = 360 + 22_976 + 66_925_567 + 2_395_354
    listed = next(item for item in run_json(agent_dir, "ls", "-n", "0") if item["id"] == session)
    assert listed["total_tokens"] == everything
    usage = run_json(agent_dir, "usage", "--by", "session")["rows"]
    assert next(row for row in usage if row["key"] == session)["total_tokens"] == everything
    line = next(line for line in run(agent_dir, "ls", "-n", "0").splitlines() if "0fae" in line)
    assert " 69.3M " in line
    assert "total 69.3M" in run(agent_dir, "show", session)


def test_a_session_in_two_files_counts_once(real_home: RealHome, agent_dir: Path):
    run(agent_dir, "sync", "--init", "--add-root", str(real_home.pi_dir / "sessions"))
    run(agent_dir, "sync", "--add-root", str(real_home.omp_dir / "sessions"))
    rows = run_json(agent_dir, "usage", "--by", "session")["rows"]
    (row,) = [row for row in rows if row["key"] == DUPLICATED]
    # 453 assistant messages with usage in each file: grep -c '"usage"' of either (the v1
    # file has no ids; the oh-my-pi copy has new ones), counted once.
    assert row["entries"] == 453
    assert row["cost"] == pytest.approx(30.3301977)
    agents = run_json(agent_dir, "usage", "--by", "agent")["rows"]
    by_agent = {row["key"]: row["entries"] for row in agents}
    assert by_agent["omp"] == 459  # the copy in the file modified last counts: omp's
    doctor = run_json(agent_dir, "doctor")["duplicate_sessions"]
    assert [(item["session_id"], Path(item["counted"]).parts[-5]) for item in doctor] == [
        (DUPLICATED, ".omp")
    ]
    assert "Sessions in several files" in run(agent_dir, "doctor")


def test_two_equal_requests_of_one_file_are_two(agent_dir: Path, claude_projects: Path):
    path = unpriced_session(claude_projects)
    text = path.read_text().replace("claude-unheard-of-9", "claude-opus-4-6")
    path.write_text(text.replace("10:01:00", "10:00:00"))
    run(agent_dir, "sync", "--init")
    assert run_json(agent_dir, "usage", "--by", "session")["total"]["entries"] == 2


def test_days_are_the_users_and_since_is_in_the_same_zone(real_home: RealHome, agent_dir: Path):
    # edgerunner's 173 requests run from 2026-07-10T16:43Z to just past midnight UTC (its 3
    # gpt-5.6-luna ones, on 2026-07-11): in Tokyo (UTC+9) all are on 2026-07-11, the day
    # --since 2026-07-11 starts there.
    run(agent_dir, "sync", "--init")
    codex = ("--agent", "codex", "--by", "day")
    utc = {row["key"] for row in run_json(agent_dir, "usage", *codex, "-z", "UTC")["rows"]}
    tokyo = run_json(agent_dir, "usage", *codex, "-z", "Asia/Tokyo", "--since", "2026-07-11")
    assert "2026-07-10" in utc
    assert [(row["key"], row["entries"]) for row in tokyo["rows"]] == [("2026-07-11", 173)]
    in_utc = run_json(agent_dir, "usage", *codex, "-z", "UTC", "--since", "2026-07-11")
    assert [(row["key"], row["entries"]) for row in in_utc["rows"]] == [("2026-07-11", 3)]


@pytest.fixture
def far_east(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The process's local zone is UTC+14 ($TZ, read again by tzset) for the test."""
    monkeypatch.setenv("TZ", "Pacific/Kiritimati")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_the_local_zone_is_tz(real_home: RealHome, agent_dir: Path, far_east: None):
    run(agent_dir, "sync", "--init")
    rows = run_json(agent_dir, "usage", "--agent", "codex", "--by", "day")["rows"]
    assert "2026-07-11" in {row["key"] for row in rows}


def test_a_bad_time_zone_is_a_usage_error(agent_dir: Path):
    assert "is not a time zone" in run(agent_dir, "usage", "-z", "Mars/Base", code=2)
