"""Where each JSONL agent (Gemini CLI, GitHub Copilot CLI, Qwen Code, Factory Droid, Cursor)
keeps the fixtures of tests/fixtures/<agent>/ below a home, as that agent would have written
them: tests/test_agents_jsonl.py syncs them there, benchmarks/compare_ccusage_jsonl.py runs
ccusage on them."""

from __future__ import annotations

import shutil
from pathlib import Path

from session_builder import FIXTURES

# agent: {fixture path below FIXTURES: its place below the home}
HOME_PLACES = {
    "gemini": {
        "gemini/jazzyalex__agent-sessions__jsonl_v040.jsonl":
            ".gemini/tmp/0b7dfb12/chats/session-2026-04-29T21-39-gemini_s.jsonl",
    },
    "copilot": {
        "copilot/jazzyalex__agent-sessions__small.jsonl":
            ".copilot/session-state/copilot_stage0_small.jsonl",
        "copilot/juspay__shooter__session.jsonl": ".copilot/session-state/sess-1.jsonl",
        "copilot/jazzyalex__agent-sessions__aaaabbbb-1111-2222-3333-ccccddddeeee/events.jsonl":
            ".copilot/session-state/aaaabbbb-1111-2222-3333-ccccddddeeee/events.jsonl",
    },
    "qwen": {
        "qwen/Piebald-AI__splitrail__qwen_code.jsonl":
            ".qwen/projects/-tmp-qwentest/chats/69f0814a-8bfc-4c8e-93d3-05757f17b96f.jsonl",
        "qwen/jazzyalex__agent-sessions__019f0000-0000-7000-8000-000000000001.jsonl":
            ".qwen/projects/-tmp-as-qwen-fixture-project/chats/"
            "019f0000-0000-7000-8000-000000000001.jsonl",
    },
    "droid": {
        "droid/jazzyalex__agent-sessions__session_store_small.jsonl":
            ".factory/sessions/-tmp/droid_s1.jsonl",
    },
    "cursor": {
        "cursor/jazzyalex__agent-sessions__small.jsonl":
            ".cursor/projects/tmp-repo/agent-transcripts/small/small.jsonl",
        "cursor/jazzyalex__agent-sessions__subagent/parent.jsonl":
            ".cursor/projects/tmp-repo/agent-transcripts/parent/parent.jsonl",
        "cursor/jazzyalex__agent-sessions__subagent/subagents/child.jsonl":
            ".cursor/projects/tmp-repo/agent-transcripts/parent/subagents/child.jsonl",
    },
}  # fmt: skip


def lay_out_agents(home: Path, agents: tuple[str, ...] = tuple(HOME_PLACES)) -> list[Path]:
    """Copy the fixtures of ``agents`` where each agent keeps them below ``home``."""
    placed = []
    for agent in agents:
        for source, place in HOME_PLACES[agent].items():
            target = home / place
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(FIXTURES / source, target)
            placed.append(target)
    return placed
