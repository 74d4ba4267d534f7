"""Each host's rate-limit readings and budgets on the team index (issue 37 item 4, team
migration 0007): a push sends them at every tier (they hold no text), with the rows of their
file, once; they go with their file; ``quota --db`` shows them per host."""

from __future__ import annotations

import os
from pathlib import Path

from team_server import local_rows, psycopg, server_rows

from xcsh_store.index import SessionIndex
from xcsh_store.team import push

AKASH = "AkashJana18__edgerunner__codex-session.jsonl"


def synced(agent_dir: Path) -> None:
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync()


def readings(url: str, host: str) -> int:
    with psycopg.connect(url) as connection:
        query = "SELECT count(*) FROM quota_observations WHERE host = %s"
        return connection.execute(query, (host,)).fetchone()[0]


def test_a_usage_tier_push_sends_every_reading_once(agent_dir, real_home, team_url):
    synced(agent_dir)
    report = push(str(agent_dir), team_url, host="laptop", tier="usage")
    assert report.quota == readings(team_url, "laptop") == 521
    rows = server_rows(team_url, "laptop")
    assert rows["quota_observations"] == local_rows(agent_dir)["quota_observations"]
    # Nothing changed: a push again writes no reading, and the server still holds each once.
    again = push(str(agent_dir), team_url, host="laptop")
    assert (again.pushed, again.quota) == (0, 0)
    assert server_rows(team_url, "laptop") == rows


def test_a_files_readings_go_with_its_rows(agent_dir, real_home, team_url):
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "xcsh-store" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("[agents.codex]\narchive = false\n")
    synced(agent_dir)
    push(str(agent_dir), team_url, host="laptop", tier="meta")
    real_home.files[AKASH].unlink()
    synced(agent_dir)
    report = push(str(agent_dir), team_url, host="laptop")
    assert report.deleted == 1
    assert readings(team_url, "laptop") == 521 - 350
    assert server_rows(team_url, "laptop") == local_rows(agent_dir)
