"""Shared fixtures: every test runs with its own agent dir and a pinned terminal id."""

from __future__ import annotations

from pathlib import Path

import pytest

# Real session files written by real agents, copied unchanged (provenance: fixtures/README.md).
FIXTURES = Path(__file__).resolve().parent / "fixtures"
PI_FIXTURES = sorted((FIXTURES / "pi").glob("*.jsonl"))

_TERMINAL_VARIABLES = ("KITTY_WINDOW_ID", "TMUX_PANE", "TERM_SESSION_ID", "WT_SESSION")


@pytest.fixture(autouse=True)
def agent_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Nothing a test does may touch the real $HOME or the real agent dir."""
    home = tmp_path / "home"
    home.mkdir()
    agent = tmp_path / "agent"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XCSH_AGENT_DIR", str(agent))
    monkeypatch.setenv("XCSH_TERMINAL_ID", "pytest-terminal")
    for variable in _TERMINAL_VARIABLES:
        monkeypatch.delenv(variable, raising=False)
    return agent
