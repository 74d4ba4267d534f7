"""A sync when nothing changed, against a bare os.scandir + stat walk of the same files.

    python benchmarks/bench_index_nochange.py [--count 10000]

Target (issues 6 and 16): a no-change sync of 10,000 session files costs at most 2x the bare
walk, the first one of a new process too. Measured twice: opening the index, syncing once and
closing it (what one ``xcsh-store sync`` does after start-up: it reads the files table, from its
covering index), and syncing again in the same process (a watcher; the files table read last
time is reused while nothing has written index.db). Each runs in alternation with the walk, so
the machine's ups and downs hit both alike.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness import compare, print_table, time_interleaved
from benchmarks.index_common import built_index, small_sessions_corpus
from xcsh_store.index import SessionIndex, SyncReport


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

    def sync_in_a_new_process() -> SyncReport:
        """What one `xcsh-store sync` does once the interpreter is up: open, sync, close."""
        with SessionIndex.open(corpus.agent_dir, db_path=db_path) as index:
            return index.sync()

    def walk() -> int:
        return scandir_stat(sessions)

    # Two rounds: a sync in a new process writes index.db, which the repeated one would notice.
    first, first_baseline = time_interleaved(sync_in_a_new_process, walk, repeat=15)
    with SessionIndex.open(corpus.agent_dir, db_path=db_path) as index:
        index.sync()
        again, again_baseline = time_interleaved(index.sync, walk, repeat=15)
    for report in (again.result, first.result):
        assert report.files_unchanged == report.files_seen == options.count, report
    rows = [
        compare(f"no-change sync of {options.count:,} files, open + sync", first,
                first_baseline),
        compare("  time / bare scandir + stat", first.median / first_baseline.median, 1.0,
                unit="x", limit=2.0),
        compare(f"no-change sync of {options.count:,} files, again in one process", again,
                again_baseline),
        compare("  time / bare scandir + stat", again.median / again_baseline.median, 1.0,
                unit="x", limit=2.0),
    ]  # fmt: skip
    print_table(rows, title="No-change sync (baseline: os.scandir + stat of the same files)")


if __name__ == "__main__":
    main()
