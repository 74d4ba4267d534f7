"""A sync when nothing changed, against a bare os.scandir + stat walk of the same files.

    python benchmarks/bench_index_nochange.py [--count 10000]

Target (issue 6): a no-change sync of 10,000 session files costs at most 2x the bare walk.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness import compare, print_table, time_interleaved
from benchmarks.index_common import built_index, small_sessions_corpus
from xcsh_store.index import SessionIndex


def scandir_stat(root: str) -> int:
    """The least any sync must do: list every folder and stat every file."""
    count = 0
    pending = [root]
    while pending:
        for entry in os.scandir(pending.pop()):
            if entry.is_dir():
                pending.append(entry.path)
            else:
                entry.stat()
                count += 1
    return count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=10_000)
    options = parser.parse_args()
    corpus = small_sessions_corpus(options.count)
    db_path = built_index(corpus, f"nochange-{options.count}")
    sessions = os.path.join(corpus.agent_dir, "sessions")
    with SessionIndex.open(corpus.agent_dir, db_path=db_path) as index:
        index.sync()
        ours, baseline = time_interleaved(index.sync, lambda: scandir_stat(sessions), repeat=15)
        report = ours.result
    assert report.files_unchanged == report.files_seen == options.count, report
    rows = [
        compare(f"no-change sync of {options.count:,} files", ours, baseline),
        compare("time / bare scandir + stat", ours.median / baseline.median, 1.0, unit="x",
                limit=2.0),
    ]  # fmt: skip
    print_table(rows, title="No-change sync (baseline: os.scandir + stat of the same files)")


if __name__ == "__main__":
    main()
