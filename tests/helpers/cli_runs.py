"""The CLI run in-process over one agent dir (CliRunner), its output checked for the exit code."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from xcsh_store.cli.app import cli


def run(agent_dir: Path, *args: str, code: int = 0) -> str:
    result = CliRunner().invoke(cli, ["--agent-dir", str(agent_dir), *args])
    assert result.exit_code == code, result.output
    return result.output


def run_json(agent_dir: Path, *args: str) -> Any:
    return json.loads(run(agent_dir, *args, "--json"))
