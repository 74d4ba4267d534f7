"""What a user of Claude Code, Codex and pi sees in a terminal of 80, 100 and 120 columns: every
verb fits, and keeps what tells its rows apart (titles, model names, short entry ids). The
sessions are the real fixtures laid out as in a user's home (real_home), synced into an agent
dir of the test."""

from __future__ import annotations

import json
import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from helpers.terminal_cells import cells
from pty_terminal import run_in_pty

from xcsh_store.cli import cli

WIDTHS = (80, 100, 120)
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def run(width: int, *args: str) -> str:
    result = CliRunner(env={"COLUMNS": str(width)}).invoke(cli, list(args))
    assert result.exit_code in (0, 1), (args, result.output)
    return result.output


@pytest.fixture
def synced(agent_dir: Path, real_home) -> dict[str, str]:
    """The real home synced; the ids of a Claude Code and a Codex session with many entries."""
    run(100, "sync", "--init")
    sessions = json.loads(run(100, "ls", "-n", "0", "--json"))
    biggest = {}
    for agent in ("claude", "codex"):
        mine = [session for session in sessions if session["agent"] == agent]
        biggest[agent] = max(mine, key=lambda session: session["entry_count"])["id"]
    return biggest


def _every_verb(synced: dict[str, str]) -> list[tuple[str, ...]]:
    views = [("ls",), ("ls", "-n", "0", "--order", "title"), ("search", "the"),
             ("search", "error", "--agent", "codex"), ("history", "recent", "--sessions"),
             ("sql", "SELECT * FROM sessions"), ("doctor",), ("gc",), ("verify",),
             ("migrate", "--dry-run"), ("sync",)]  # fmt: skip
    for session in synced.values():
        views += [("show", session), ("show", session, "--tree"), ("show", session, "--context")]
    for group in ("day", "week", "model", "provider", "project", "session", "agent"):
        views += [("usage", "--by", group), ("usage", "--by", group, "--chart")]
    views += [("usage", "--by", "day", "--by", "model")]
    return views


def _helps() -> list[tuple[str, ...]]:
    context = click.Context(cli)
    verbs = [(name,) for name in cli.list_commands(context)]
    verbs += [("history", name) for name in ("add", "recent", "search", "prune")]
    return [(), *verbs, ("export", "parquet")]


@pytest.mark.parametrize("width", WIDTHS)
def test_every_verb_and_every_help_fits_the_terminal(synced, width):
    too_wide = []
    for view in [*_every_verb(synced), *((*verb, "--help") for verb in _helps())]:
        too_wide += [(view, line) for line in run(width, *view).splitlines() if cells(line) > width]
    assert too_wide == []


def _table(output: str) -> tuple[list[str], list[list[str]]]:
    """The header cells and the rows of a table printed by the CLI (split at the dashes)."""
    lines = output.splitlines()
    rule = next(i for i, line in enumerate(lines) if line.startswith("--"))
    spans = [match.span() for match in re.finditer(r"-+", lines[rule])]
    rows = []
    for line in lines[rule + 1 :]:
        if not line.strip() or line.startswith(("Note", "(")):
            break
        rows.append([line[start:end].strip() for start, end in spans])
    return [lines[rule - 1][start:end].strip() for start, end in spans], rows


def test_at_80_columns_model_names_stay_apart(synced):
    headers, rows = _table(run(80, "usage", "--by", "model"))
    models = [row[0] for row in rows[:-1]]
    assert len(set(models)) == len(models) > 5
    assert not any(model.startswith("anthropic/claud") for model in models)
    assert headers[-3:] == ["c.write", "total", "cost"]


def test_at_80_columns_the_title_gets_the_room(synced):
    headers, rows = _table(run(80, "ls"))
    assert headers[-1].startswith("title")
    assert max(len(row[-1]) for row in rows) >= 24
    # Three agents listed: each row names its agent; the message count, then the cwd, gave
    # way first: dropped.
    assert "agent" in headers
    assert "cwd" not in headers and "msgs" not in headers


def test_at_120_columns_the_cwd_shows_its_last_components(synced):
    headers, rows = _table(run(120, "ls"))
    assert "cwd" in headers
    cwds = [row[headers.index("cwd")] for row in rows if row[headers.index("cwd")]]
    assert any(cwd.startswith("…/") for cwd in cwds)
    # (a pi session started on Windows keeps its Windows cwd: Z:\temp)
    assert all(re.match(r"…/|/|~|…|[A-Z]:\\", cwd) for cwd in cwds), cwds


@pytest.mark.parametrize("agent", ["claude", "codex"])
def test_entry_ids_are_short_prefixes_that_select_their_entry(synced, agent):
    session = synced[agent]
    shown = run(80, "show", session)
    assert not UUID.search(shown.split("\n\n", 1)[1]), shown
    _headers, rows = _table(shown)
    short = rows[-1][0]
    assert 8 <= len(short) < 36
    full = json.loads(run(80, "show", session, "--leaf", short, "--json"))["leaf_id"]
    assert full.startswith(short)
    if agent == "claude":  # Claude Code's entry ids are UUIDs; Codex's are shorter already
        assert len(full) == 36 > len(short)
    tree = run(80, "show", session, "--tree")
    assert not UUID.search(tree.split("\n\n", 1)[1])


def test_search_shows_short_entry_ids(synced):
    _headers, rows = _table(run(100, "search", "the", "--agent", "claude"))
    assert rows and all(8 <= len(row[1]) < 36 for row in rows)


@pytest.mark.parametrize("width", (80, 100))
def test_a_real_terminal_of_the_real_home_gets_lines_that_fit(synced, agent_dir, width):
    for view in (("ls",), ("usage", "--by", "model"), ("show", synced["claude"], "--tree")):
        code, shown = run_in_pty(view, width, {"XCSH_AGENT_DIR": str(agent_dir)})
        assert code == 0, shown
        assert [line for line in shown.splitlines() if cells(line) > width] == [], view
