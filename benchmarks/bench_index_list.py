"""Listing every session: the index's list_sessions against the file-scanning list_all.

    python benchmarks/bench_index_list.py [--count 10000] [--size 2GB]

The corpus has ``--count`` sessions of realistic sizes (log-normal, ``--size`` in all, so 200 KB
on average by default), which list_all reads in full. Target (issue 6): list_sessions over
10,000 sessions at least 100x faster than list_all.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness import compare, print_table, time_call
from benchmarks.index_common import agent_corpus, built_index
from xcsh_store.index import SessionIndex
from xcsh_store.session.manager import SessionManager


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--size", default="2GB")
    options = parser.parse_args()
    corpus = agent_corpus(options.size, options.count)
    db_path = built_index(corpus, f"list-{options.size.lower()}-{options.count}")
    with SessionIndex.open(corpus.agent_dir, db_path=db_path, read_only=True) as index:
        ours = time_call(index.list_sessions, repeat=7, label="list_sessions")
    baseline = time_call(SessionManager.list_all, agent_dir=corpus.agent_dir, repeat=1, warmup=0)
    assert len(ours.result) == len(baseline.result) == options.count
    rows = [compare(f"list {options.count:,} sessions", ours, baseline, min_ratio=100)]
    print_table(rows, title="Listing sessions (baseline: SessionManager.list_all scanning files)")


if __name__ == "__main__":
    main()
