"""``sql`` is bounded: one statement, a time limit, Ctrl-C that stops the statement at once, rows
streamed (JSON) or capped (table), one-line errors for parameters it was not given."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner, Result

from xcsh_store.cli import cli
from xcsh_store.index import SessionIndex
from xcsh_store.index.read.query import QueryTimeoutError, open_query
from xcsh_store.paths import get_index_db_path

ENDLESS_COUNT = (
    "WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r) SELECT count(*) FROM r"
)
ENDLESS_ROWS = "WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r) SELECT x FROM r"
TWELVE_ROWS = (
    "WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r LIMIT 12) SELECT x FROM r"
)
# Bounds on waiting for a subprocess: far beyond what it needs, only there so a broken build
# fails instead of hanging the suite.
PATIENCE = 120


@pytest.fixture
def indexed(agent_dir: Path) -> Path:
    (agent_dir / "sessions").mkdir(parents=True)
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync()
    return agent_dir


def sql(*args: str) -> Result:
    return CliRunner().invoke(cli, ["sql", *args], catch_exceptions=False)


def assert_one_line_error(result: Result, text: str) -> None:
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith("Error: ") and text in result.stderr, result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.output


def test_an_endless_statement_stops_at_the_time_limit(indexed):
    assert_one_line_error(sql("--timeout", "0.3", ENDLESS_COUNT), "0.3s time limit")


def test_the_time_limit_has_a_default(indexed):
    with (
        pytest.raises(QueryTimeoutError),
        open_query(get_index_db_path(str(indexed)), ENDLESS_COUNT, timeout=0.2) as stream,
    ):
        list(stream)
    assert "--timeout" in CliRunner().invoke(cli, ["sql", "--help"]).output
    assert "default: 30" in CliRunner().invoke(cli, ["sql", "--help"]).output


def test_rows_come_before_the_statement_ends(indexed):
    with open_query(get_index_db_path(str(indexed)), ENDLESS_ROWS, timeout=60) as stream:
        rows = iter(stream)
        assert [next(rows), next(rows)] == [(1,), (2,)]
        assert stream.columns == ["x"]


def test_several_statements_are_refused_not_half_shown(indexed):
    assert_one_line_error(sql("SELECT 1; SELECT 2"), "one statement at a time; the query has 2")
    assert json.loads(sql("SELECT 1 AS a; -- a comment", "--json").stdout) == [{"a": 1}]


@pytest.mark.parametrize(
    ("query", "text"),
    [("SELECT :a", "No value for :a"), ("SELECT :a, $b", ":a, :b"), ("SELECT ?", "Name every")],
)
def test_a_missing_parameter_is_a_one_line_error(indexed, query, text):
    assert_one_line_error(sql(query), text)


def test_the_table_shows_at_most_limit_rows_and_counts_the_rest(indexed):
    lines = sql("--limit", "5", TWELVE_ROWS).stdout.splitlines()
    assert lines[2:7] == ["1", "2", "3", "4", "5"]
    assert lines[-1] == "(5 rows; 7 more rows not shown: raise --limit or use --json)"


def test_json_is_the_documented_shape_written_row_by_row(indexed):
    rows = [{"x": number} for number in range(1, 13)]
    expected = orjson.dumps(rows, option=orjson.OPT_INDENT_2) + b"\n"
    assert sql(TWELVE_ROWS, "--json").stdout_bytes == expected
    assert sql("SELECT 1 AS x WHERE 0", "--json").stdout == "[]\n"


def _command(agent: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "xcsh_store", "--agent-dir", str(agent), "sql", *args]


def test_json_streams_an_endless_result_into_a_pipe(indexed):
    process = subprocess.Popen(
        _command(indexed, "--json", "--timeout", "0", ENDLESS_ROWS),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None
    try:
        ready, _, _ = select.select([process.stdout], [], [], PATIENCE)
        assert ready, "no row arrived"
        assert process.stdout.read(200).startswith(b'[\n  {\n    "x": 1\n  },')
    finally:
        process.stdout.close()  # the reader leaves, as `| head` does
        code = process.wait(PATIENCE)
    assert code == 0 and b"Traceback" not in process.stderr.read()


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _has_open(pid: int, name: str) -> bool:
    folder = f"/proc/{pid}/fd"
    for fd in os.listdir(folder):
        try:
            if os.readlink(f"{folder}/{fd}").endswith(name):
                return True
        except FileNotFoundError:
            continue  # closed since the listing
    return False


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_ctrl_c_stops_a_running_statement_at_once(indexed):
    process = subprocess.Popen(
        _command(indexed, "--timeout", "0", ENDLESS_COUNT),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        # Once index.db is open and the process has spent a CPU second since, it is inside the
        # endless statement (everything before it takes milliseconds), whatever the load.
        deadline = time.monotonic() + PATIENCE
        while not _has_open(process.pid, "index.db"):
            assert time.monotonic() < deadline and process.poll() is None
            time.sleep(0.05)
        opened_at = _cpu_seconds(process.pid)
        while _cpu_seconds(process.pid) < opened_at + 1:
            assert time.monotonic() < deadline and process.poll() is None
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=PATIENCE)
    finally:
        process.kill()
    assert process.returncode == 130, stderr
    assert stderr == b"Error: The query was interrupted\n"
