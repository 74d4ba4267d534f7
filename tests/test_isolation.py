"""The test suite never reads the user's own sessions (issue 25, item 12): run on a machine where
Claude Code, Codex, pi, oh-my-pi and xcsh have sessions where they keep them, and where the
variables that move those folders are set, a sample of the suite passes and sees none of them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner
from isolation import ISOLATED_FOLDERS, REMOVED
from real_home import lay_out_home
from session_builder import header, message, write_session

from xcsh_store.agents import agent_session_roots
from xcsh_store.cli.app import cli
from xcsh_store.homes import get_store_dir
from xcsh_store.index import SessionIndex

ROOT = Path(__file__).resolve().parent.parent
# Tests that failed on such a machine before (a module-scoped fixture synced outside the
# per-test environment), the CLI across agents, and this file's own check of a test's view.
SAMPLE = (
    "tests/test_isolation.py::test_a_test_sees_its_own_folders_only",
    "tests/test_agents_cli.py::test_ls_lists_every_agent_and_says_which",
    "tests/test_pi_compat.py::test_every_pi_fixture_has_the_models_and_title_of_d3_d26_d27",
)


def test_a_test_sees_its_own_folders_only(tmp_path: Path):
    for variable in ISOLATED_FOLDERS:
        assert Path(os.environ[variable]).is_relative_to(tmp_path), variable
    for variable in REMOVED:
        assert variable not in os.environ, variable
    for folder in [get_store_dir(), *agent_session_roots()]:
        assert Path(folder).is_relative_to(tmp_path), folder
    result = CliRunner().invoke(cli, ["sync", "--init", "--json"])
    assert result.exit_code == 0, result.output
    listed = CliRunner().invoke(cli, ["ls", "--limit", "0", "--json"])
    assert listed.exit_code == 0, listed.output
    assert listed.output.strip() == "[]"


def _snapshot(folder: Path) -> dict[str, tuple[bytes | None, int]]:
    return {
        str(path): (path.read_bytes() if path.is_file() else None, path.lstat().st_mtime_ns)
        for path in [folder, *folder.rglob("*")]
    }


def test_the_suite_sees_none_of_the_users_sessions(tmp_path: Path):
    user = lay_out_home(tmp_path / "user").home
    xcsh = user / ".xcsh" / "agent"
    write_session(
        xcsh / "sessions" / "--work--" / "mine.jsonl",
        [header("users-own-session"), message("u1", None, "user", "the user's own prompt")],
    )
    with SessionIndex.open(str(xcsh)) as index:
        index.sync()
    before = _snapshot(user)
    outer = {
        **os.environ,
        "HOME": str(user),
        "XCSH_AGENT_DIR": str(xcsh),
        "CLAUDE_CONFIG_DIR": str(user / ".claude"),
        "CODEX_HOME": str(user / ".codex"),
        "PI_CODING_AGENT_DIR": str(user / ".pi" / "agent"),
        "OMP_CODING_AGENT_DIR": str(user / ".omp" / "agent"),
        "XDG_DATA_HOME": str(user / ".local" / "share"),
        "XDG_CONFIG_HOME": str(user / ".config"),
        # A team index the read verbs would read: no test may reach it.
        "XCSH_STORE_DB": "postgresql://nobody@127.0.0.1:1/nowhere",
    }
    finished = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *SAMPLE],
        cwd=ROOT,
        env=outer,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert finished.returncode == 0, finished.stdout[-4000:] + finished.stderr[-2000:]
    assert " passed" in finished.stdout and "skipped" not in finished.stdout
    assert _snapshot(user) == before
