"""Index size and sync time as session files are deleted (issue 25: entries_fts without
contentless_delete, whose rows of deleted entries stay until they are a tenth of the index).

    python -m benchmarks.bench_index_churn [--size 300MB] [--sessions 600]

On a copy of the corpus: a full sync, and the index's size against the sessions'; every 20th
session file deleted (5 %) and a sync; every 12th of the rest deleted (8 % more) and a sync. The
size is taken after a checkpoint (the WAL emptied). It uses only what every version of the index
has, so running it in a tree of an earlier commit (``git archive``) gives the numbers to compare.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness import compare, print_table
from benchmarks.index_common import WORK_DIR, agent_corpus
from xcsh_store.index import SessionIndex


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="300MB")
    parser.add_argument("--sessions", type=int, default=600)
    options = parser.parse_args()
    corpus = agent_corpus(options.size, options.sessions)
    work = WORK_DIR / "churn"
    shutil.rmtree(work, ignore_errors=True)
    agent = work / "agent"
    shutil.copytree(corpus.agent_dir, agent, symlinks=True)
    db = work / "index.db"
    files = sorted((agent / "sessions").rglob("*.jsonl"))
    rows = []
    try:
        with SessionIndex.open(str(agent), db_path=str(db)) as index:

            def size() -> int:
                index.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                return os.path.getsize(db)

            def sessions() -> int:
                return sum(path.stat().st_size for path in files if path.exists())

            started = time.perf_counter()
            index.sync()
            rows.append(compare("full sync", time.perf_counter() - started))
            rows.append(compare("index.db / the sessions", size() / sessions(), unit="×"))
            for label, gone in (
                ("5 %", files[::20]),
                ("8 % more", [path for path in files[7::12] if path.exists()]),
            ):
                for path in gone:
                    path.unlink()
                started = time.perf_counter()
                report = index.sync()
                took = time.perf_counter() - started
                rows.append(
                    compare(
                        f"sync after deleting {label} ({report.entries_removed:,} entries)", took
                    )
                )
                rows.append(compare("index.db / the sessions left", size() / sessions(), unit="×"))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print_table(rows, title=f"Deleting session files of {corpus.total_bytes / 1e6:.0f} MB")


if __name__ == "__main__":
    main()
