"""The team index and the archive (issue 34 item 7): a session whose file is gone stays in the
team index as pushed, marked with when its file went; ``forget`` takes it out on the next push.
On the real PostgreSQL server."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner
from real_home import RealHome

from xcsh_store.cli import cli
from xcsh_store.index import SessionIndex
from xcsh_store.team import push


def _team_listing(team_url: str, *options: str) -> list[dict[str, object]]:
    result = CliRunner().invoke(cli, ["--db", team_url, "ls", "--limit", "0", *options, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_an_archived_session_stays_in_the_team_index_and_forget_propagates(
    agent_dir: Path, real_home: RealHome, team_url: str
):
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync(workers=1)
    push(str(agent_dir), team_url, host="laptop")
    before = _team_listing(team_url)
    claude = {s["id"] for s in before if s["agent"] == "claude"}
    assert claude and {s["source"] for s in before} == {"file"}
    shutil.rmtree(real_home.claude_dir)
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync(workers=1)
    push(str(agent_dir), team_url, host="laptop")
    after = _team_listing(team_url)
    assert len(after) == len(before)
    assert {s["id"] for s in _team_listing(team_url, "--archived")} == claude
    gone = [s for s in after if s["id"] in claude]
    assert all(s["source"] == "archived" and s["source_gone_at"] for s in gone)
    forgotten = CliRunner().invoke(cli, ["forget", "--agent", "claude", "--yes"])
    assert forgotten.exit_code == 0, forgotten.output
    push(str(agent_dir), team_url, host="laptop")
    assert {s["id"] for s in _team_listing(team_url)} == {s["id"] for s in before} - claude
