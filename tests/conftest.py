"""Shared fixtures: every test runs with its own home, agent dir and agents' folders, none of
them the machine's (isolation.py), and a pinned terminal id; an index over the agent dir, one
with two small sessions synced, the real agents' fixtures laid out in the home, a blob store,
the usual umask and the web app's test client. And the Hypothesis profiles: ``ci`` (the
default) and ``stress`` (fuzzing.py)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from fuzzing import examples, profile
from hypothesis import HealthCheck, settings
from isolation import REMOVED, isolate, isolated_environment
from real_home import RealHome, lay_out_home
from session_builder import header, message, sessions_dir, write_session
from store_checks import SmallDisk, mount_small_disk
from web_server import LOCAL

from xcsh_store.format.blobs import BlobStore
from xcsh_store.index import SessionIndex

if TYPE_CHECKING:
    from starlette.testclient import TestClient
    from team_server import Roles

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
    # Whatever profile Hypothesis itself loaded (its own "ci" profile derandomises when $CI is
    # set): new examples on every run, none saved.
    derandomize=False,
    database=None,
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


@pytest.fixture
def shared_agent_dir(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An agent dir outside pytest's private temp folder, so that ``nobody`` can reach it."""
    base = Path(tempfile.mkdtemp(prefix="xcsh-unreadable-"))
    base.chmod(0o755)
    agent = base / "agent"
    monkeypatch.setenv("XCSH_AGENT_DIR", str(agent))
    yield agent
    shutil.rmtree(base)


@pytest.fixture
def store(tmp_path: Path) -> BlobStore:
    """A blob store of its own, in the test's folder."""
    return BlobStore(str(tmp_path / "blobs"))


@pytest.fixture
def usual_umask() -> Iterator[None]:
    """The common umask 022, under which Python's and SQLite's defaults are world-readable."""
    previous = os.umask(0o022)
    yield
    os.umask(previous)


@pytest.fixture
def client(agent_dir: Path) -> TestClient:
    """The web app over the test's agent dir, through Starlette's test client (the web extra:
    imported here, when a test asks for it)."""
    from starlette.testclient import TestClient

    from xcsh_store.web import create_app

    return TestClient(create_app(str(agent_dir)), base_url=LOCAL)


# The team index's server (team_server.py, which imports psycopg: the team extra, imported only
# by the tests that ask for these).
@pytest.fixture(scope="session")
def team_server() -> Iterator[str]:
    """A fresh database on $XCSH_TEST_PG for the whole run, dropped after it."""
    import team_server as server

    yield from server.fresh_database()


@pytest.fixture
def team_url(team_server: str) -> str:
    """The run's database, emptied for the test."""
    import team_server as server

    return server.emptied(team_server)


@pytest.fixture
def roles(team_url: str) -> Iterator[Roles]:
    """The PostgreSQL roles the test makes, dropped after it."""
    import team_server as server

    made = server.Roles(team_url)
    yield made
    made.drop()


@pytest.fixture
def hosts(roles: Roles, team_url: str) -> dict[str, str]:
    """The URL of each of two hosts' roles, made by the docs' SQL on a migrated team index."""
    from xcsh_store.team import connect

    connect(team_url).close()  # `xcsh-store team migrate`, as the admin
    roles.run("pushers")
    return {
        host: roles.run("host", host)[f"xcsh_host_{host.replace('-', '_')}"]
        for host in ("laptop-ana", "laptop-bob")
    }
