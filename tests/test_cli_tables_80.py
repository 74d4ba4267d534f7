"""The tables a user of many agents reads in a terminal of 80 columns, in colour (a real pty):
the real fixtures of every agent laid out as a home (real_home, agent_homes), plus a second
Qwen Code session started in the same minute as the first (UUIDv7 ids that share 33
characters, as such sessions do). Each table keeps what tells its rows apart whole."""

from __future__ import annotations

import difflib
import json
import re
from pathlib import Path

import pytest
from agent_homes import HOME_PLACES, lay_out_agents, lay_out_documents
from click.testing import CliRunner
from helpers.terminal_cells import cells
from pty_terminal import run_in_pty
from session_builder import FIXTURES

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
    """Every agent's real fixtures where it keeps them (one project below the home), synced."""
    lay_out_agents(real_home.home)
    lay_out_documents(real_home.home)
    _second_qwen_session(real_home.home)
    # oh-my-pi's session of a project below the home, as most users' projects are.
    omp = real_home.files["bakedbean__workspacex__omp-session.jsonl"]
    omp.write_text(
        omp.read_text(encoding="utf-8").replace("/tmp/omp-fixture", f"{real_home.home}/src/app"),
        encoding="utf-8",
    )
    run("sync", "--init")
    return agent_dir


def terminal(agent_dir: Path, *args: str, coloured: bool = True) -> str:
    """What ``xcsh-store ARGS`` shows in a colour terminal of 80 columns, colours removed
    (after checking that it was coloured, if it colours, and that every line fits)."""
    code, shown = run_in_pty(args, WIDTH, {"XCSH_AGENT_DIR": str(agent_dir)})
    assert code == 0, shown
    assert ("\x1b[" in shown) == coloured
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


def test_prices_is_a_compact_table_with_short_names_and_whole_rates(every_agent: Path):
    shown = terminal(every_agent, "prices", coloured=False)
    headers, rows = table(shown)
    assert headers[:2] == ["agent", "model"]
    models = [row for row in rows if row[0]]
    assert not any(row[1].startswith(("anthropic/", "claude-", "openai/")) for row in models)
    assert not any("…" in cell for row in rows for cell in row[2:])
    seen = json.loads(run("prices", "--json"))["models"]
    assert len(models) == len(seen)
    for row, model in zip(models, seen, strict=True):
        price = model["price"]
        if price is not None and price["input"] is not None:
            assert float(row[3]) == price["input"]["base"]
    # A tier is a line of its own below its model: the rates over 200k tokens of input.
    sonnet = next(i for i, row in enumerate(rows) if row[:2] == ["claude", "sonnet-4"])
    assert rows[sonnet + 1][1] == "> 200k" and float(rows[sonnet + 1][3]) == 6
    assert "Sources: 1 " in shown


def test_usage_by_project_shows_each_path_as_ls_does_its_end_kept(every_agent: Path):
    _headers, rows = table(terminal(every_agent, "usage", "--by", "project"))
    projects = [row[0] for row in rows[:-1]]
    full = [row["key"] for row in json.loads(run("usage", "--by", "project", "--json"))["rows"]]
    assert len(projects) == len(full)
    home = str(Path.home())
    paths = [(path or "?").replace(home, "~", 1) for path in full]
    # The rows go by the folder's name, the part every row shows; then by the whole path.
    paths.sort(key=lambda path: (re.split(r"[/\\]", path)[-1].casefold(), path))
    for shown, path in zip(projects, paths, strict=True):
        # Home-relative as in ls (~/src/x, never …home/src/x), cut at its start only.
        assert "…" not in shown[1:] and path.endswith(shown.removeprefix("…")), (shown, path)
    assert any(shown.startswith("…/") for shown in projects)
    assert "~/src/app" in projects
    headers, rows = table(terminal(every_agent, "ls", "--agent", "omp"))
    assert "~/src/app" in [row[headers.index("cwd")] for row in rows]


def test_usage_by_session_names_each_session_by_its_id_and_title(every_agent: Path):
    _headers, rows = table(terminal(every_agent, "usage", "--by", "session"))
    listed = {s["id"]: s for s in json.loads(run("ls", "-n", "0", "--json"))}
    for row in rows[:-1]:
        prefix, _, title = row[0].partition(" ")
        (session,) = [s for full, s in listed.items() if full.startswith(prefix)]
        label = " ".join((session["title"] or session["first_message"] or "").split())
        assert title and label.startswith(title.removesuffix("…")), row


def test_usage_by_block_rows_and_headers_are_whole_and_each_agent_apart(every_agent: Path):
    shown = terminal(every_agent, "usage", "--by", "block")
    assert shown.startswith("claude:\n")
    headers, rows = table(shown)
    assert not any(header.endswith("…") for header in headers)
    gaps = [row for row in rows if row[1] == "gap"]
    assert gaps and all(re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d", row[0]) for row in gaps)
    # Each agent's windows are its own: no window mixes two agents' requests.
    every = json.loads(run("usage", "--by", "block", "--json"))["blocks"]
    agents = sorted({block["agent"] for block in every})
    assert {"claude", "codex"} <= set(agents)
    for agent in agents:
        alone = json.loads(run("usage", "--by", "block", "--agent", agent, "--json"))["blocks"]
        assert [block for block in every if block["agent"] == agent] == alone
        assert f"\n{agent}:\n" in "\n" + shown


def test_show_keeps_the_cost_on_its_usage_line(every_agent: Path):
    listed = json.loads(run("ls", "-n", "0", "--json", "--agent", "claude"))
    biggest = max(listed, key=lambda session: session["total_tokens"])
    shown = terminal(every_agent, "show", biggest["id"][:8])
    (usage,) = [line for line in shown.splitlines() if line.startswith("Usage")]
    assert re.search(r"\$\d+\.\d\d", usage), usage
    (cwd,) = [line for line in shown.splitlines() if line.startswith("Cwd")]
    assert cwd.rstrip().endswith(biggest["cwd"].rsplit("/", 1)[-1]), cwd


def test_history_recent_sessions_has_no_empty_column_and_room_for_prompts(every_agent: Path):
    headers, rows = table(terminal(every_agent, "history", "recent", "--sessions"))
    assert headers[0] != "id"
    for column in range(len(headers)):
        assert any(row[column] for row in rows), headers[column]
    assert max(len(row[-1]) for row in rows) >= 30


def test_an_ambiguous_prefix_names_each_match_on_a_line_of_its_own(every_agent: Path):
    code, shown = run_in_pty(("show", "019"), WIDTH, {"XCSH_AGENT_DIR": str(every_agent)})
    assert code == 1
    lines = _STYLE.sub("", shown).splitlines()
    assert [line for line in lines if cells(line) > WIDTH] == []
    assert lines[0].startswith("Error: '019' matches ")
    matches = [line.strip() for line in lines if line.startswith("  ")]
    assert f'{QWEN_FIRST} "Inspect the synthetic fixture."' in matches
    assert f'{QWEN_SECOND} "Inspect the synthetic fixture."' in matches
    assert matches[-1].startswith("and ") and matches[-1].endswith(" more")
    # Two files of one id: each by its path, home-relative, the ends of both kept.
    code, shown = run_in_pty(("show", "d703a1a9"), WIDTH, {"XCSH_AGENT_DIR": str(every_agent)})
    paths = [line.strip() for line in shown.splitlines() if line.startswith("  ")]
    assert [path[:6] for path in paths] == ["~/.omp", "~/.pi/"]
    assert all(path.endswith(".jsonl") for path in paths)
    # In JSON it stays the one line it was, its candidates the paths.
    result = CliRunner().invoke(cli, ["show", "019", "--json"])
    error = json.loads(result.stderr)["error"]
    assert "\n" not in error["message"] and len(error["candidates"]) == 10


def test_show_of_an_edit_is_its_coloured_diff_within_80_columns(every_agent: Path):
    # The first Edit of a real Claude Code session that changes a line, and its real strings.
    name = "apanloco__random__claude-session.jsonl"
    records = [json.loads(line) for line in (FIXTURES / "claude" / name).read_text().splitlines()]
    record, edit = next(
        (record, block["input"])
        for record in records
        if record.get("type") == "assistant"
        for block in record["message"]["content"]
        if block.get("name") == "Edit" and "\n" in block["input"]["old_string"]
    )
    code, shown = run_in_pty(
        ("show", record["sessionId"], record["uuid"]), WIDTH, {"XCSH_AGENT_DIR": str(every_agent)}
    )
    assert code == 0, shown
    assert "\x1b[31m-" in shown and "\x1b[32m+" in shown  # removed red, added green
    assert [line for line in shown.splitlines() if cells(line) > WIDTH] == []
    plain = _STYLE.sub("", shown).replace("\r", "")
    diff = difflib.unified_diff(edit["old_string"].splitlines(), edit["new_string"].splitlines())
    added = (line for line in diff if line.startswith("+") and not line.startswith("+++"))
    first_added = next(line for line in added if line[1:].strip())
    assert first_added.rstrip()[:WIDTH] in plain
