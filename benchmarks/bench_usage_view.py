"""The usage_entries view of migration 0019 (three window sorts over narrow rows at every
query) and of 0020 (the ranks the sync stored in usage_ranks, joined) side by side on one index
(issue 40):

    python -m benchmarks.bench_usage_view [--size 326MB] [--rounds 5] [--usage-first]

The index is of the Claude Code home that benchmarks/claude_tree.py builds (``--size``): a full
sync, or with ``--usage-first`` a sync asked for usage alone (every file's usage in usage_lines,
no entry rows yet). Both views are created as temporary views of the same connection; each
query runs once through each, the two taking turns (which goes first alternates by round), and
the rows of both must be the same (sums to 9 decimals: the rows come in another order). CPU
seconds of this process, medians; old / new is more is better for the stored ranks.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import apsw

from benchmarks.bench_start_up import ROOT, environment_of
from benchmarks.claude_tree import claude_home
from benchmarks.harness import print_table
from benchmarks.index_common import WORK_DIR
from xcsh_store.index.read.usage import USAGE_GROUPS, USAGE_SUMS_SQL

VIEWS = {"0019": "0019_usage_entries_narrow.sql", "0020": "0020_usage_ranks.sql"}
_DAY = USAGE_GROUPS["day"].format(shift="'+0 seconds'")
QUERIES = {
    "usage --by day": f"SELECT {_DAY} AS k, {USAGE_SUMS_SQL} FROM {{view}} GROUP BY k ORDER BY k",
    "sum of every row": "SELECT sum(input_tokens), sum(output_tokens), sum(cost) FROM {view}",
    "every column of every row": "SELECT * FROM {view} ORDER BY pk",
    "--agent claude": (
        f"SELECT {_DAY} AS k, {USAGE_SUMS_SQL} FROM {{view}} WHERE agent = 'claude'"
        " GROUP BY k ORDER BY k"
    ),
    "one session": (
        "SELECT sum(cost), count(*) FROM {view}"
        " WHERE session_id = (SELECT session_id FROM sessions ORDER BY file_id LIMIT 1)"
    ),
}


def view_sql(number: str) -> str:
    """The CREATE VIEW of migration ``number``, as a temporary view named v{number}."""
    text = (ROOT / "migrations" / VIEWS[number]).read_text()
    text = text[text.index("CREATE VIEW usage_entries") :]
    return text.replace("CREATE VIEW usage_entries", f"CREATE TEMP VIEW v{number}", 1)


def build_index(size: str, usage_first: bool) -> Path:
    agent_dir = WORK_DIR / f"usage-view-agent{'-usage-first' if usage_first else ''}"
    shutil.rmtree(agent_dir, ignore_errors=True)
    code = (
        "import sys\nfrom xcsh_store.index import SessionIndex\n"
        "SessionIndex.open(sys.argv[1]).sync(entries=sys.argv[2] == 'full')"
    )
    subprocess.run(
        [sys.executable, "-c", code, str(agent_dir), "usage" if usage_first else "full"],
        env=environment_of(ROOT, claude_home(size)),
        check=True,
    )
    return agent_dir / "index.db"


def rounded(rows: list[tuple[object, ...]]) -> list[tuple[object, ...]]:
    return [
        tuple(round(value, 9) if isinstance(value, float) else value for value in row)
        for row in rows
    ]


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="326MB")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--usage-first", action="store_true")
    arguments = parser.parse_args()
    connection = apsw.Connection(str(build_index(arguments.size, arguments.usage_first)))
    for number in VIEWS:
        connection.execute(view_sql(number))
    table = []
    for label, query in QUERIES.items():
        times: dict[str, list[float]] = {number: [] for number in VIEWS}
        answers = {}
        for round_number in range(arguments.rounds):
            order = list(VIEWS) if round_number % 2 == 0 else list(reversed(VIEWS))
            for number in order:
                start = cpu()
                answers[number] = list(connection.execute(query.format(view=f"v{number}")))
                times[number].append(cpu() - start)
        old_rows, new_rows = (rounded(answers[number]) for number in VIEWS)
        if old_rows != new_rows:
            raise SystemExit(f"{label}: the two views differ")
        old, new = (statistics.median(times[number]) for number in VIEWS)
        table.append([label, f"{old:.3f} s", f"{new:.3f} s", f"{old / new:.2f}×"])
    state = "usage first (usage_lines)" if arguments.usage_first else "full sync (entries)"
    print_table(
        table,
        ["query (CPU)", *(f"{number} view" for number in VIEWS), "old / new"],
        title=f"usage_entries, {arguments.size} Claude Code home, {state},"
        f" median of {arguments.rounds}",
    )


if __name__ == "__main__":
    main()
