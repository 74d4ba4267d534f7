"""Shared fixtures: every test runs with its own home, agent dir and agents' folders, none of
them the machine's (isolation.py), and a pinned terminal id; an index over the agent dir, one
with two small sessions synced, and the real agents' fixtures laid out in the home. And the
Hypothesis profiles: ``ci`` (the default) and ``stress`` (fuzzing.py)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from fuzzing import examples, profile
from hypothesis import HealthCheck, settings
from isolation import REMOVED, isolate, isolated_environment
from real_home import RealHome, lay_out_home
from session_builder import header, message, sessions_dir, write_session
from store_checks import SmallDisk, mount_small_disk

from xcsh_store.index import SessionIndex

# Hypothesis (fuzzing.py says why): the same examples on every run in CI, new and many more
# in the stress run. A slow example (a loaded machine) fails neither.
settings.register_profile(
    "ci",
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)
settings.register_profile(
    "stress",
    max_examples=examples(settings.default.max_examples),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)
settings.load_profile(profile())

# The home of everything that runs outside a test (collection, module-scoped fixtures).
_RUN_HOME = Path(tempfile.mkdtemp(prefix="xcsh-store-tests-"))


def pytest_configure(config: pytest.Config) -> None:
    isolate(_RUN_HOME / "home", os.environ)
    os.environ["XCSH_TERMINAL_ID"] = "pytest-terminal"
    # Kingfisher's compiled secret rules, kept for the whole run (compiling them takes seconds;
    # by default they go under the cache folder, which is new in every test).
    os.environ["KF_RULE_CACHE_DIR"] = str(_RUN_HOME / "kingfisher-rules")


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(_RUN_HOME, ignore_errors=True)


@pytest.fixture(autouse=True)
def agent_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Nothing a test does may touch the real $HOME, the real agent dir or any agent's real
    folders (a sync indexes those when they exist): all of them are below ``tmp_path``."""
    home = tmp_path / "home"
    home.mkdir()
    agent = tmp_path / "agent"
    for variable, value in isolated_environment(home).items():
        monkeypatch.setenv(variable, value)
    monkeypatch.setenv("XCSH_AGENT_DIR", str(agent))
    monkeypatch.setenv("XCSH_TERMINAL_ID", "pytest-terminal")
    for variable in REMOVED:
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


@pytest.fixture
def small_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SmallDisk]:
    """A real 2 MiB file system (a tmpfs) holding the test's agent dir; skipped where this
    machine does not let the tests mount one."""
    disk = mount_small_disk(tmp_path / "disk", 2048)
    if disk is None:
        pytest.skip("this machine does not let the tests mount a tmpfs")
    monkeypatch.setenv("XCSH_AGENT_DIR", str(disk.path / "agent"))
    yield disk
    disk.unmount()
