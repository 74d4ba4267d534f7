"""The first run of someone who uses Claude Code, Codex, pi or oh-my-pi and no xcsh (issue 25,
item 11): `xcsh-store sync` finds their sessions where those agents keep them (or where their
variables move them), keeps its index in the data dir and writes nothing anywhere else; a verb
that reads the index before says what to do."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from real_home import FIXTURES, RealHome

from xcsh_store.cli.app import cli
from xcsh_store.homes import get_cache_dir

# real_home: every fixture of tests/fixtures/<agent>, oh-my-pi's in ~/.omp.
EXPECTED_AGENTS = {"claude": 12, "codex": 7, "pi": 27, "omp": 4}
OMP_FILE = "astral303__rearview__omp-v3.jsonl"
PI_FILE = "astral303__rearview__pi-v3-branched.jsonl"


@pytest.fixture
def no_xcsh(monkeypatch: pytest.MonkeyPatch) -> None:
    """A machine where xcsh was never used: no $XCSH_AGENT_DIR, no ~/.xcsh."""
    monkeypatch.delenv("XCSH_AGENT_DIR")


def run(*args: str, code: int = 0) -> str:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == code, result.output
    return result.output


def agents_listed() -> dict[str, int]:
    counts: dict[str, int] = {}
    for session in json.loads(run("ls", "--limit", "0", "--json")):
        counts[session["agent"]] = counts.get(session["agent"], 0) + 1
    return counts


def snapshot(folder: Path) -> dict[str, Any]:
    """Every name below ``folder``, with the bytes and mtime of each file."""
    return {
        str(path): (path.read_bytes(), path.lstat().st_mtime_ns) if path.is_file() else None
        for path in [folder, *folder.rglob("*")]
    }


def _the_stores(path: Path, store: Path) -> bool:
    """Whether ``path`` is the store's: its data dir ``store``, its cache folder (the price
    table), or a folder above either."""
    cache = Path(get_cache_dir())
    return any(path.is_relative_to(place) or path in place.parents for place in (store, cache))


def test_sync_just_works_for_a_user_of_other_agents(no_xcsh: None, real_home: RealHome):
    home = real_home.home
    before = snapshot(home)
    told = run("--no-sync", "ls", code=1)
    assert told.startswith("Error: No index at ~/.local/share/xcsh-store/index.db yet: run")
    assert (
        "`xcsh-store sync` to index ~/.claude/projects (claude), ~/.codex/sessions (codex),"
        " ~/.pi/agent/sessions (pi), ~/.omp/agent/sessions (omp)"
    ) in told
    assert snapshot(home) == before  # (the error made nothing)
    run("sync")
    assert agents_listed() == EXPECTED_AGENTS
    store = home / ".local" / "share" / "xcsh-store"
    assert (store / "index.db").is_file()
    # Nothing anywhere but the data dir and the store's cache folder (the price table): no
    # ~/.xcsh, nothing in the agents' folders.
    after = snapshot(home)
    made = sorted(set(after) - set(before))
    assert made and all(_the_stores(Path(path), store) for path in made)
    assert {path: after[path] for path in before} == before


def test_the_first_read_indexes_the_sessions_found_and_says_so(no_xcsh: None, real_home: RealHome):
    before = snapshot(real_home.home)
    result = CliRunner().invoke(cli, ["ls", "--limit", "0", "--json"])
    assert result.exit_code == 0, result.output
    counts: dict[str, int] = {}
    for session in json.loads(result.stdout):
        counts[session["agent"]] = counts.get(session["agent"], 0) + 1
    assert counts == EXPECTED_AGENTS
    assert result.stderr.startswith("Note: no index yet: indexing the sessions of this machine")
    assert result.stderr.count("\n") == 1
    store = real_home.home / ".local" / "share" / "xcsh-store"
    assert (store / "index.db").is_file()
    after = snapshot(real_home.home)
    assert all(_the_stores(Path(path), store) for path in set(after) - set(before))


def test_the_data_dir_follows_xdg_data_home(
    no_xcsh: None, real_home: RealHome, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    run("sync")
    assert (tmp_path / "data" / "xcsh-store" / "index.db").is_file()
    monkeypatch.setenv("XDG_DATA_HOME", "relative/data")  # ignored, as the XDG rules say
    run("sync")
    assert (real_home.home / ".local" / "share" / "xcsh-store" / "index.db").is_file()
    assert not Path("relative").exists()


def test_an_xcsh_agent_dir_keeps_the_index(real_home: RealHome, agent_dir: Path):
    run("sync", "--init")
    assert (agent_dir / "index.db").is_file()
    assert not (real_home.home / ".local" / "share" / "xcsh-store").exists()
    assert agents_listed() == EXPECTED_AGENTS


def test_nothing_to_sync_says_where_it_looked(no_xcsh: None, agent_dir: Path):
    home = agent_dir.parent / "home"
    told = run("sync", code=1)
    assert told.startswith("Error: Nothing to sync: no sessions found in ~/.xcsh/agent/sessions,")
    # Every agent's folder, the plugins' (agents.agent_session_roots) before the xcsh family's.
    for folder in ("~/.claude/projects, ~/.codex/sessions", "~/.qwen/projects, ~/.pi/agent"):
        assert folder in told
    assert list(home.iterdir()) == []
    told = run("ls", code=1)
    assert "run `xcsh-store sync` once an agent has written some" in told


def test_pi_and_omp_folders_moved_by_their_variables_are_found(
    no_xcsh: None, real_home: RealHome, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    # pi's $PI_CODING_AGENT_DIR, oh-my-pi's $OMP_CODING_AGENT_DIR (before 2026), a named
    # oh-my-pi profile and oh-my-pi's XDG data folder.
    shutil.move(real_home.pi_dir, tmp_path / "pi-agent")
    shutil.move(real_home.omp_dir, tmp_path / "omp-agent")
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "pi-agent"))
    monkeypatch.setenv("OMP_CODING_AGENT_DIR", str(tmp_path / "omp-agent"))
    profile = real_home.home / ".omp" / "profiles" / "work" / "agent" / "sessions" / "--p--"
    xdg = Path(os.environ["XDG_DATA_HOME"]) / "omp" / "sessions" / "--x--"
    for folder, name in ((profile, "profile.jsonl"), (xdg, "xdg.jsonl")):
        folder.mkdir(parents=True)
        shutil.copyfile(FIXTURES / "pi" / OMP_FILE, folder / name)
    run("sync")
    assert agents_listed() == {**EXPECTED_AGENTS, "omp": EXPECTED_AGENTS["omp"] + 2}


def test_the_content_tells_oh_my_pi_from_pi_in_a_folder_both_use(
    no_xcsh: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    # Current oh-my-pi honours pi's $PI_CODING_AGENT_DIR too: its files there begin with its
    # title record.
    shared = tmp_path / "shared-agent" / "sessions" / "--work--"
    shared.mkdir(parents=True)
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "shared-agent"))
    for name in (OMP_FILE, PI_FILE):
        shutil.copyfile(FIXTURES / "pi" / name, shared / name)
    run("sync")
    sessions = json.loads(run("ls", "--json"))
    assert {Path(session["path"]).name: session["agent"] for session in sessions} == {
        OMP_FILE: "omp",
        PI_FILE: "pi",
    }


def test_serve_makes_the_first_index_as_any_reader_does(no_xcsh: None, real_home: RealHome):
    from web_server import running_server

    store = real_home.home / ".local" / "share" / "xcsh-store"
    with running_server(store) as server:
        listing = server.request("/?limit=100")
    assert listing.status == 200
    assert (store / "index.db").is_file()
    assert b"claude" in listing.body and b"codex" in listing.body
    assert server.output["stderr"].startswith("Note: no index yet: indexing the sessions")
