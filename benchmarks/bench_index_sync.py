"""Full sync throughput and memory, against the floor of parsing and inserting the same rows.

    python benchmarks/bench_index_sync.py [--size 1GB] [--sessions 2000] [--single 500MB]

The floor parses every line of every file with orjson and inserts exactly the rows our sync
produced (entries, search text, blob refs, sessions, files) with apsw ``executemany``, in
transactions of the same size: the work no sync can avoid. Targets (issue 6): at least 40 MB/s
and at most 2.5x the floor's time; peak RSS of a full sync of 1 GB at most 300 MB, of one
500 MB session at most 200 MB. Every step runs in a fresh child process.
"""

from __future__ import annotations

import argparse
import os
import pickle
import sys
import time
from pathlib import Path

import apsw
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.corpus import cached_corpus, generate_session_file, parse_size
from benchmarks.harness import compare, measure_in_child, print_table
from benchmarks.index_common import WORK_DIR, agent_corpus, fresh_db_path, full_sync
from xcsh_store.index.db import apply_migrations, connect, load_migrations
from xcsh_store.index.indexer import COMMIT_EVERY_VALUES

TABLES = {
    "files": "SELECT * FROM files",
    "sessions": "SELECT * FROM sessions",
    "entries": "SELECT * FROM entries",
    "entries_fts": "SELECT rowid, text FROM entries_fts",
    "blob_refs": "SELECT * FROM blob_refs",
}


def dump_rows(db_path: str, out: str) -> None:
    """Every row our sync wrote, for the floor to insert again (not timed)."""
    connection = connect(db_path, read_only=True)
    with open(out, "wb") as handle:
        pickle.dump(
            {table: connection.execute(sql).fetchall() for table, sql in TABLES.items()}, handle
        )
    connection.close()


def floor(agent_dir: str, rows_file: str, db_path: str) -> int:
    """orjson-parse every line, then insert the same rows (loading the rows is not timed)."""
    with open(rows_file, "rb") as handle:
        rows = pickle.load(handle)
    connection = apsw.Connection(db_path)
    connection.execute("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL")
    connection.execute("PRAGMA cache_size = -65536")
    apply_migrations(connection, load_migrations())
    started = time.perf_counter()
    size = 0
    for folder, _dirs, names in os.walk(os.path.join(agent_dir, "sessions")):
        for name in names:
            with open(os.path.join(folder, name), "rb") as handle:
                for line in handle:
                    size += len(line)
                    orjson.loads(line)
    marks = {table: ",".join("?" * len(values[0])) for table, values in rows.items() if values}
    for table, values in rows.items():
        columns = "(rowid, text)" if table == "entries_fts" else ""
        for start in range(0, len(values), COMMIT_EVERY_VALUES):
            with connection:
                connection.executemany(
                    f"INSERT INTO {table} {columns} VALUES ({marks[table]})",
                    values[start : start + COMMIT_EVERY_VALUES],
                )
    elapsed = time.perf_counter() - started
    connection.close()
    return int(elapsed * 1e6)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="1GB")
    parser.add_argument("--sessions", type=int, default=2000)
    parser.add_argument("--single", default="500MB", help="size of the one-session corpus")
    options = parser.parse_args()

    corpus = agent_corpus(options.size, options.sessions)
    megabytes = corpus.total_bytes / 1e6
    ours_db = fresh_db_path("sync-full")
    ours = measure_in_child(full_sync, corpus.agent_dir, ours_db, label="full sync")
    rows_file = str(WORK_DIR / "sync-full" / "rows.pickle")
    dump_rows(ours_db, rows_file)
    floor_run = measure_in_child(floor, corpus.agent_dir, rows_file, fresh_db_path("sync-floor"))
    floor_seconds = floor_run.result / 1e6

    single = cached_corpus(
        f"session-{options.single.lower()}",
        generate_session_file,
        target_bytes=parse_size(options.single),
        seed=11,
    )
    one = measure_in_child(full_sync, single.agent_dir, fresh_db_path("sync-single"))

    rows = [
        compare(f"full sync of {megabytes:,.0f} MB ({corpus.sessions} sessions)", ours.best,
                floor_seconds),
        compare("full sync vs floor (time / floor time)", ours.best / floor_seconds, 1.0,
                unit="x", limit=2.5),
        compare("full sync throughput", megabytes / ours.best, megabytes / floor_seconds,
                unit="MB/s", higher_is_better=True, limit=40),
        compare(f"peak RSS, full sync of {megabytes:,.0f} MB", ours.peak_rss or 0, unit="B",
                limit=300e6),
        compare(f"peak RSS, sync of one {single.total_bytes / 1e6:,.0f} MB session",
                one.peak_rss or 0, unit="B", limit=200e6),
    ]  # fmt: skip
    print_table(rows, title="Full sync (baseline: parse + insert the same rows)")


if __name__ == "__main__":
    main()
