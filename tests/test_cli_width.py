"""Human output fits the terminal: every line of every table and chart, at 80 and 120 columns,
through CliRunner ($COLUMNS) and through a real pty (the window size of a terminal)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner
from fuzzing import examples
from helpers.terminal_cells import cells
from hypothesis import given, settings
from hypothesis import strategies as st
from pty_terminal import run_in_pty
from session_builder import copy_fixtures, header, message, write_session
from tabulate import tabulate

from xcsh_store.cli import cli
from xcsh_store.cli.output.render import MARK_CLOSE, MARK_OPEN, display_width
from xcsh_store.cli.output.table import fit_table
from xcsh_store.history.store import HistoryStorage
from xcsh_store.index import SessionIndex
from xcsh_store.paths import get_history_db_path

WIDTHS = (80, 120)
DAYS = 1100  # more days of usage than any terminal has columns
WIDE_TITLE = "移行計画の見直し ✅ → 漢字とemojiのタイトル 🚀 " * 3
DEEP_CWD = "/work/a-project-folder/with/quite/a/deep/path/to/the/checkout/of/the-app"


def _days_session(path: Path) -> Path:
    start = datetime(2023, 1, 1, 9, 0, tzinfo=UTC)
    records = [header("wide-days-0001", cwd=DEEP_CWD, title=WIDE_TITLE)]
    parent = None
    for day in range(DAYS):
        stamp = (start + timedelta(days=day)).isoformat(timespec="milliseconds")
        entry = message(f"e{day:05d}", parent, "assistant", f"day {day} 進捗 ✅")
        entry["timestamp"] = stamp.replace("+00:00", "Z")
        records.append(entry)
        parent = entry["id"]
    return write_session(path, records)


@pytest.fixture(scope="module")
def wide_agent(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Real pi sessions plus one with a CJK/emoji title, a deep cwd and 1,100 days of usage,
    and a prompt like its title in history.db."""
    agent = tmp_path_factory.mktemp("wide") / "agent"
    copy_fixtures(agent, max_bytes=400_000)
    _days_session(agent / "sessions" / "--work-wide--" / "2023-01-01T09-00-00-000Z_wide.jsonl")
    with HistoryStorage.open(get_history_db_path(str(agent))) as history:
        history.add(WIDE_TITLE, DEEP_CWD)
    with SessionIndex.open(str(agent)) as index:
        index.sync()
    return agent


VIEWS = (
    ("ls",),
    ("ls", "--order", "title", "-n", "0"),
    ("show", "wide-days"),
    ("show", "wide-days", "--tree"),
    ("show", "wide-days", "--context"),
    ("search", "the"),
    ("usage",),
    ("usage", "--chart"),
    ("usage", "--chart", "--metric", "cost"),
    ("usage", "--by", "session"),
    ("usage", "--by", "session", "--chart"),
    ("usage", "--by", "project", "--chart"),
    ("history", "recent"),
    ("history", "recent", "--sessions"),
    ("sql", "SELECT * FROM sessions"),
    ("migrate", "--dry-run"),
)


def _too_wide(text: str, width: int) -> list[str]:
    return [line for line in text.splitlines() if cells(line) > width]


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("view", VIEWS, ids=" ".join)
def test_every_line_fits_the_columns_given(wide_agent: Path, view: tuple[str, ...], width: int):
    result = CliRunner(env={"COLUMNS": str(width)}).invoke(
        cli, ["--agent-dir", str(wide_agent), *view], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    assert result.output.count("\n") > 2
    assert _too_wide(result.output, width) == []


@pytest.mark.parametrize("width", WIDTHS)
def test_a_real_terminal_gets_lines_no_wider_than_its_window(wide_agent: Path, width: int):
    for view in (("ls", "-n", "0"), ("usage", "--chart"), ("show", "wide-days", "--tree")):
        code, shown = run_in_pty(view, width, {"XCSH_AGENT_DIR": str(wide_agent)})
        assert code == 0, shown
        assert "\x1b[" in shown  # a terminal: coloured, and colour codes take no room
        assert shown.count("\n") > 2
        assert _too_wide(shown, width) == [], view


def test_the_sparkline_sums_days_when_there_are_more_days_than_columns(wide_agent: Path):
    result = CliRunner(env={"COLUMNS": "80"}).invoke(
        cli, ["--agent-dir", str(wide_agent), "usage", "--chart"], catch_exceptions=False
    )
    (tokens,) = [line for line in result.output.splitlines() if line.lstrip().startswith("tokens")]
    assert re.search(r"\(each mark \d+ days\)$", tokens)


def test_display_width_counts_wide_characters_twice_and_marks_not_at_all():
    assert display_width("漢字") == 4
    assert display_width("✅ ok") == 5
    assert display_width("e\u0301") == 1  # e and a combining acute accent
    assert display_width("\x1b[36mid\x1b[0m") == 2
    assert display_width(f"a {MARK_OPEN}hit{MARK_CLOSE}") == 5


def test_ls_order_title_sorts_by_the_shown_title_untitled_last(wide_agent: Path):
    result = CliRunner().invoke(
        cli, ["--agent-dir", str(wide_agent), "ls", "--order", "title", "-n", "0", "--json"]
    )
    titles = [session["title"] for session in __import__("json").loads(result.stdout)]
    named = [title for title in titles if title]
    assert titles == named + [None] * (len(titles) - len(named))
    assert named == sorted(named, key=lambda title: " ".join(title.split()).casefold())


_CELL_TEXT = st.text(alphabet="ab Z-9漢字✅é\u0301", max_size=30)


@settings(max_examples=examples(150), deadline=None)
@given(
    rows=st.lists(st.lists(_CELL_TEXT, min_size=4, max_size=4), max_size=5),
    width=st.integers(min_value=1, max_value=140),
    flexible=st.sets(st.integers(min_value=0, max_value=3)),
)
def test_any_table_fits_any_width(rows, width, flexible):
    table = fit_table(rows, ("id", "title", "n", "text"), flexible=sorted(flexible), width=width)
    assert [line for line in table.splitlines() if cells(line) > width] == []


_ID = st.text(alphabet="0123456789abcdef-", min_size=1, max_size=36)


@settings(max_examples=examples(150), deadline=None)
@given(
    rows=st.lists(st.tuples(_ID, _CELL_TEXT, _CELL_TEXT), min_size=1, max_size=6),
    width=st.integers(min_value=20, max_value=140),
)
def test_a_whole_column_is_never_cut_and_every_line_fits(rows, width):
    """An id (a whole column) is shown in full, on its row or on a line of its own above it,
    as long as the terminal is as wide as the id; every line fits all the same."""
    table = fit_table(
        [list(row) for row in rows], ("id", "title", "text"), flexible=(1, 2), whole=(0,),
        width=width,
    )  # fmt: skip
    lines = table.splitlines()
    assert [line for line in lines if cells(line) > width] == []
    words = {word for line in lines[2:] for word in line.split()}
    for row in rows:
        if len(row[0]) <= width:
            assert row[0] in words, (row[0], table)


_ASCII_CELL = st.text(alphabet="abc XYZ-19", max_size=12).map(lambda text: " ".join(text.split()))


@settings(max_examples=examples(150), deadline=None)
@given(
    table=st.integers(min_value=1, max_value=5).flatmap(
        lambda n: st.tuples(
            st.lists(_ASCII_CELL, min_size=n, max_size=n),
            st.lists(st.lists(_ASCII_CELL, min_size=n, max_size=n), max_size=4),
            st.sets(st.integers(min_value=0, max_value=n - 1)),
        )
    )
)
def test_a_table_that_fits_is_laid_out_as_tabulate_does(table):
    """The layout the README's outputs show: tabulate's "simple" format, to the byte."""
    headers, rows, right = table
    align = [("right" if i in right else "left") for i in range(len(headers))] if rows else None
    expected = tabulate(
        rows, headers=headers, tablefmt="simple", disable_numparse=True, colalign=align
    )
    assert fit_table(rows, headers, right=right, width=None) == expected
    assert fit_table(rows, headers, right=right, width=1000) == expected
