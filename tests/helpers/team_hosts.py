"""Two hosts pushed into the team index (the ``two_hosts`` fixture: a test module imports it)."""

from __future__ import annotations

from pathlib import Path

import pytest
from session_builder import planted_host

from xcsh_store.team import push


@pytest.fixture
def two_hosts(tmp_path: Path, agent_dir: Path, team_url: str) -> dict[str, Path]:
    hosts = {"laptop": planted_host(agent_dir), "ci": planted_host(tmp_path / "ci", range(4, 7))}
    for name, folder in hosts.items():
        push(str(folder), team_url, host=name)
    return hosts
