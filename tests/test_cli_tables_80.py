"""The tables a user of many agents reads in a terminal of 80 columns, in colour (a real pty):
the real fixtures of every agent laid out as a home (real_home, agent_homes), plus a second
Qwen Code session started in the same minute as the first (UUIDv7 ids that share 33
characters, as such sessions do). Each table keeps what tells its rows apart whole."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from agent_homes import HOME_PLACES, lay_out_agents, lay_out_documents
from click.testing import CliRunner
from pty_terminal import run_in_pty
from session_builder import FIXTURES
from test_cli_width import cells

from xcsh_store.cli import cli

WIDTH = 80
_STYLE = re.compile(r"\x1b\[[0-9;]*m")
QWEN_FIRST = "019f0000-0000-7000-8000-000000000001"
QWEN_SECOND = "019f0000-0000-7000-8000-000000000004"


def run(*args: str, width: int = WIDTH) -> str:
    result = CliRunner(env={"COLUMNS": str(width)}).invoke(cli, list(args))
    assert result.exit_code == 0, (args, result.output)
    return result.output


def _second_qwen_session(home: Path) -> None:
    """The Qwen fixture again as another session of the same project and minute."""
    (source, place), *_ = [
        (source, place) for source, place in HOME_PLACES["qwen"].items() if QWEN_FIRST in source
    ]
    text = (FIXTURES / source).read_text(encoding="utf-8").replace(QWEN_FIRST, QWEN_SECOND)
    target = home / place.replace(QWEN_FIRST, QWEN_SECOND)
    target.write_text(text, encoding="utf-8")


@pytest.fixture
def every_agent(agent_dir: Path, real_home) -> Path:
    """Every agent's real fixtures where it keeps them, synced."""
    lay_out_agents(real_home.home)
    lay_out_documents(real_home.home)
    _second_qwen_session(real_home.home)
    run("sync", "--init")
    return agent_dir


def terminal(agent_dir: Path, *args: str) -> str:
    """What ``xcsh-store ARGS`` shows in a coloured terminal of 80 columns, colours removed
    (after checking that it was coloured and that every line fits)."""
    code, shown = run_in_pty(args, WIDTH, {"XCSH_AGENT_DIR": str(agent_dir)})
    assert code == 0, shown
    assert "\x1b[" in shown
    assert [line for line in shown.splitlines() if cells(line) > WIDTH] == [], args
    return _STYLE.sub("", shown)


def table(shown: str) -> tuple[list[str], list[list[str]]]:
    """The header cells and the rows of the first table in ``shown`` (split at its dashes)."""
    lines = shown.splitlines()
    rule = next(i for i, line in enumerate(lines) if line.startswith("--"))
    spans = [match.span() for match in re.finditer(r"-+", lines[rule])]
    spans[-1] = (spans[-1][0], WIDTH)
    rows: list[list[str]] = []
    spilled = None  # an id too wide for its column, on the line above its row
    for line in lines[rule + 1 :]:
        if not line.strip() or line.startswith(("(", "Note", "Sources")):
            break
        if line.strip() and " " not in line.strip() and line.startswith(line.strip()):
            spilled = line.strip()
            continue
        row = [line[start:end].strip() for start, end in spans]
        if spilled is not None:
            assert row[0] == "", line
            row[0], spilled = spilled, None
        rows.append(row)
    return [lines[rule - 1][start:end].strip() for start, end in spans], rows


def test_ls_shows_every_id_whole_as_a_prefix_show_takes(every_agent: Path):
    headers, rows = table(terminal(every_agent, "ls", "-n", "0"))
    assert headers[0] == "id"
    listed = json.loads(run("ls", "-n", "0", "--json"))
    ids = [session["id"] for session in listed]
    shown = [row[0].rstrip("*⌂") for row in rows]
    assert len(shown) == len(ids)
    for short, full in zip(shown, ids, strict=True):
        assert "…" not in short
        assert full.startswith(short), (short, full)
    # The two Qwen sessions of one minute read apart, each by what `show` selects it with.
    qwen = {
        full: short for short, full in zip(shown, ids, strict=True) if full.startswith("019f0000")
    }
    assert set(qwen) == {QWEN_FIRST, QWEN_SECOND}
    assert qwen[QWEN_FIRST] != qwen[QWEN_SECOND]
    for full, short in qwen.items():
        assert json.loads(run("show", short, "--json"))["session"]["id"] == full
    # The title keeps its room: 24 cells, however long the ids.
    assert headers[-1].startswith("title")
    assert max(len(row[-1]) for row in rows) >= 24


def test_ls_names_the_agent_of_each_row_when_several_are_listed(every_agent: Path):
    headers, rows = table(terminal(every_agent, "ls", "-n", "0"))
    assert "agent" in headers
    listed = json.loads(run("ls", "-n", "0", "--json"))
    assert [row[headers.index("agent")] for row in rows] == [s["agent"] for s in listed]
    assert len({row[headers.index("agent")] for row in rows}) >= 10
    headers, rows = table(terminal(every_agent, "ls", "--agent", "claude"))
    assert "agent" not in headers


@pytest.mark.parametrize("agent", ["claude", "codex"])
def test_ls_of_one_agent_keeps_its_cwd_at_80_columns(every_agent: Path, agent: str):
    headers, rows = table(terminal(every_agent, "ls", "--agent", agent))
    assert "cwd" in headers
    cwds = [row[headers.index("cwd")] for row in rows if row[headers.index("cwd")]]
    assert cwds and all(re.match(r"…/|/|~|…", cwd) for cwd in cwds), cwds
    # A cut cwd keeps its last folder's name (…/random), not a cut inside the start.
    assert any(cwd.startswith("…/") for cwd in cwds)
