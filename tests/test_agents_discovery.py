"""Claude Code and Codex folders are found by themselves ($CLAUDE_CONFIG_DIR/projects,
$CODEX_HOME/sessions; conftest points both into the test's temp home), can be added from
elsewhere as ``claude:DIR`` / ``codex:DIR``, and turned off; and they are never written: every
byte, mtime and name in them is the same after a sync, also with the folders read-only."""

from __future__ import annotations

import json
import os
import shutil
import stat
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from session_builder import FIXTURES

from xcsh_store.cli.app import cli
from xcsh_store.index import SessionIndex

CLAUDE_FILE = "sheurich__episodic-memory__claude-tiny-conversation.jsonl"
CODEX_FILE = "Shyaar__beam_v1__codex-session.jsonl"


def _agent_folders() -> tuple[Path, Path]:
    """The Claude Code and Codex session folders of the test's home, with one session each
    (a Claude project folder and subagent folder, a Codex date folder)."""
    claude = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "projects"
    codex = Path(os.environ["CODEX_HOME"]) / "sessions"
    (claude / "-home-user-project").mkdir(parents=True)
    (codex / "2026" / "04" / "21").mkdir(parents=True)
    shutil.copyfile(FIXTURES / "claude" / CLAUDE_FILE, claude / "-home-user-project" / "s1.jsonl")
    shutil.copyfile(FIXTURES / "codex" / CODEX_FILE, codex / "2026" / "04" / "21" / "rollout.jsonl")
    return claude, codex


def _snapshot(folder: Path) -> dict[str, tuple[bytes | None, int, int]]:
    """Every name below ``folder`` (dotfiles too) with its bytes, mtime and mode."""
    found = {}
    for path in [folder, *folder.rglob("*")]:
        info = path.lstat()
        content = path.read_bytes() if path.is_file() else None
        found[str(path)] = (content, info.st_mtime_ns, stat.S_IMODE(info.st_mode))
    return found


def _agents(index: SessionIndex) -> list[tuple[str, int]]:
    return index.connection.execute(
        "SELECT agent, count(*) FROM sessions GROUP BY agent ORDER BY agent"
    ).fetchall()


def test_the_test_home_holds_the_agents_folders(tmp_path: Path):
    # Existing tests sync: they must never find the machine's real ~/.claude or ~/.codex.
    for variable in ("HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME"):
        assert Path(os.environ[variable]).is_relative_to(tmp_path)


def test_sync_finds_the_claude_and_codex_folders(index: SessionIndex):
    _agent_folders()
    index.sync(workers=1)
    assert _agents(index) == [("claude", 1), ("codex", 1)]


def test_no_agent_folders_means_no_other_sessions(index: SessionIndex):
    index.sync(workers=1)
    assert _agents(index) == []


def test_sync_changes_nothing_in_the_agents_folders(index: SessionIndex):
    claude, codex = _agent_folders()
    # A name like one of xcsh's stale rewrite temp files, an hour old: a sync removes those
    # from xcsh roots, never from another agent's folder.
    temp = claude / "-home-user-project" / ".s1.jsonl.0123456789abcdef.tmp"
    temp.write_bytes(b"not ours")
    old = time.time() - 7200
    os.utime(temp, (old, old))
    before = {**_snapshot(claude), **_snapshot(codex)}
    index.sync(workers=1)
    index.sync(full=True, workers=1)
    assert index.verify().clean
    assert {**_snapshot(claude), **_snapshot(codex)} == before


def test_sync_reads_read_only_agent_folders_and_writes_nothing(index: SessionIndex):
    claude, codex = _agent_folders()
    folders = [path for root in (claude, codex) for path in [root, *root.rglob("*")]]
    for path in sorted(folders, key=lambda path: len(path.parts), reverse=True):
        path.chmod(0o555 if path.is_dir() else 0o444)
    try:
        before = {**_snapshot(claude), **_snapshot(codex)}
        report = index.sync(workers=1)
        assert report.unreadable == {}
        assert _agents(index) == [("claude", 1), ("codex", 1)]
        assert {**_snapshot(claude), **_snapshot(codex)} == before
    finally:
        for path in folders:
            path.chmod(0o755 if path.is_dir() else 0o644)


def test_appended_lines_are_read_from_the_discovered_folder(index: SessionIndex):
    claude, _ = _agent_folders()
    index.sync(workers=1)
    session = claude / "-home-user-project" / "s1.jsonl"
    line = {
        "type": "user", "uuid": "appended-1", "parentUuid": None, "sessionId": "s1",
        "timestamp": "2026-05-01T00:00:00.000Z",
        "message": {"role": "user", "content": "zanzibar appended later"},
    }  # fmt: skip
    with session.open("ab") as stream:
        stream.write(json.dumps(line).encode() + b"\n")
    report = index.sync(workers=1)
    assert report.files_reindexed == 0  # read from where the last sync stopped
    assert [hit.session_id for hit in index.search("zanzibar")] == ["s1"]


def _invoke(agent_dir: Path, *args: str) -> str:
    result = CliRunner().invoke(cli, ["--agent-dir", str(agent_dir), *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_no_agent_roots_turns_them_off_and_back_on(agent_dir: Path):
    _agent_folders()
    _invoke(agent_dir, "sync", "--init")
    assert (
        json.loads(_invoke(agent_dir, "sync", "--no-agent-roots", "--json"))["files_removed"] == 2
    )
    with SessionIndex.open(str(agent_dir)) as index:
        assert _agents(index) == []
    _invoke(agent_dir, "sync")  # remembered
    with SessionIndex.open(str(agent_dir)) as index:
        assert _agents(index) == []
    _invoke(agent_dir, "sync", "--agent-roots")
    with SessionIndex.open(str(agent_dir)) as index:
        assert _agents(index) == [("claude", 1), ("codex", 1)]


def test_add_root_with_an_agent_prefix_is_read_only(agent_dir: Path, tmp_path: Path):
    copy = tmp_path / "old-machine" / "projects" / "p"
    copy.mkdir(parents=True)
    shutil.copyfile(FIXTURES / "claude" / CLAUDE_FILE, copy / "s9.jsonl")
    temp = copy / ".s9.jsonl.0123456789abcdef.tmp"
    temp.write_bytes(b"x")
    old = time.time() - 7200
    os.utime(temp, (old, old))
    _invoke(agent_dir, "sync", "--init", "--add-root", f"claude:{copy.parent}")
    assert temp.exists()
    with SessionIndex.open(str(agent_dir)) as index:
        assert _agents(index) == [("claude", 1)]
        assert index.agent_roots() == {str(copy.parent): "claude"}


def test_add_root_of_a_missing_folder_is_refused(agent_dir: Path, tmp_path: Path):
    result = CliRunner().invoke(
        cli,
        ["--agent-dir", str(agent_dir), "sync", "--init", "--add-root", f"codex:{tmp_path}/nope"],
    )
    assert result.exit_code == 2
    assert "is not a folder" in result.output


@pytest.mark.parametrize("prefix", ["", "claude:"])
def test_a_claude_folder_is_read_whatever_root_it_was_added_as(
    index: SessionIndex, tmp_path: Path, prefix: str
):
    # Before issue 18 such a folder was indexed as files with an invalid header and no rows.
    folder = tmp_path / "copy"
    folder.mkdir()
    shutil.copyfile(FIXTURES / "claude" / CLAUDE_FILE, folder / "s2.jsonl")
    index.add_root(str(folder), prefix.rstrip(":") or None)
    index.sync(workers=1)
    assert index.connection.execute("SELECT status FROM files").fetchall() == [("ok",)]
    assert _agents(index) == [("claude", 1)]


def test_sync_into_a_folder_that_is_no_agent_dir_says_where_the_sessions_are(agent_dir: Path):
    # An --agent-dir that is no agent dir (mistyped?), and sessions of other agents found.
    _agent_folders()
    refused = CliRunner().invoke(cli, ["--agent-dir", str(agent_dir), "sync"])
    assert refused.exit_code == 1 and not agent_dir.exists()
    assert "~/.claude/projects (claude), ~/.codex/sessions (codex)" in refused.output
    assert "`xcsh-store sync` without --agent-dir" in refused.output
    assert "`xcsh-store sync --init` to make this folder an agent dir" in refused.output
    synced = CliRunner().invoke(cli, ["--agent-dir", str(agent_dir), "sync", "--init", "--json"])
    assert synced.exit_code == 0, synced.output
    assert json.loads(synced.output)["files_changed"] == 2
