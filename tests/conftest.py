"""Shared fixtures: every test runs with its own agent dir and a pinned terminal id; an index
over it, and one with two small sessions synced."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from real_home import RealHome, lay_out_home
from session_builder import header, message, sessions_dir, write_session

from xcsh_store.index import SessionIndex

_TERMINAL_VARIABLES = ("KITTY_WINDOW_ID", "TMUX_PANE", "TERM_SESSION_ID", "WT_SESSION")


@pytest.fixture(scope="session")
def rule_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where Kingfisher keeps its compiled secret rules for the whole run (compiling them takes
    seconds; it would keep them under $HOME, which is new in every test)."""
    return tmp_path_factory.mktemp("kingfisher-rules")


@pytest.fixture(autouse=True)
def agent_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rule_cache: Path) -> Path:
    """Nothing a test does may touch the real $HOME, the real agent dir or the real Claude Code
    and Codex folders (a sync indexes those when they exist)."""
    monkeypatch.setenv("KF_RULE_CACHE_DIR", str(rule_cache))
    home = tmp_path / "home"
    home.mkdir()
    agent = tmp_path / "agent"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home / ".claude"))
    monkeypatch.setenv("CODEX_HOME", str(home / ".codex"))
    monkeypatch.setenv("XCSH_AGENT_DIR", str(agent))
    monkeypatch.setenv("XCSH_TERMINAL_ID", "pytest-terminal")
    for variable in _TERMINAL_VARIABLES:
        monkeypatch.delenv(variable, raising=False)
    return agent


@pytest.fixture
def index(agent_dir: Path) -> Iterator[SessionIndex]:
    """The index of the test's agent dir, open for writing, closed after the test."""
    with SessionIndex.open(str(agent_dir)) as opened:
        yield opened


@pytest.fixture
def two_sessions(agent_dir: Path, index: SessionIndex) -> tuple[Path, Path]:
    """Sessions "one" and "two", a user message each, synced into ``index``."""
    folder = sessions_dir(agent_dir)
    one = write_session(folder / "one.jsonl", [header("one"), message("u1", None, "user", "alpha")])
    two = write_session(folder / "two.jsonl", [header("two"), message("u1", None, "user", "beta")])
    index.sync()
    return one, two


@pytest.fixture
def real_home(agent_dir: Path) -> RealHome:
    """The real Claude Code, Codex, pi and oh-my-pi fixtures where those agents keep them, in
    the test's $HOME (real_home.py)."""
    return lay_out_home(agent_dir.parent / "home")
