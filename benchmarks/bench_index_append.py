"""One line appended to a big session: how many bytes the next sync reads.

    python benchmarks/bench_index_append.py [--size 200MB]

Baseline: re-reading the whole file. Target (issue 6): bytes read at most the new bytes + 8 KiB.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.corpus import cached_corpus, generate_session_file, parse_size
from benchmarks.harness import compare, io_delta, print_table
from benchmarks.index_common import WORK_DIR, fresh_db_path
from xcsh_store.index import SessionIndex
from xcsh_store.js import stringify as dumps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="200MB")
    options = parser.parse_args()
    corpus = cached_corpus(
        f"session-{options.size.lower()}",
        generate_session_file,
        target_bytes=parse_size(options.size),
        seed=5,
    )
    agent = WORK_DIR / "append" / "agent"
    shutil.rmtree(agent.parent, ignore_errors=True)
    shutil.copytree(corpus.agent_dir, agent)  # the cached corpus stays untouched
    (session,) = [agent / item.path for item in corpus.files]
    db_path = fresh_db_path("append-index")
    with SessionIndex.open(str(agent), db_path=db_path) as index:
        index.sync()
        leaf = index.list_sessions()[0].last_entry_id
        line = dumps(
            {"type": "message", "id": "bench001", "parentId": leaf,
             "timestamp": "2026-06-01T00:00:00.000Z",
             "message": {"role": "user", "content": "one more question about the benchmark"}}
        ) + b"\n"  # fmt: skip
        with open(session, "ab") as handle:
            handle.write(line)
        with io_delta() as read:
            report = index.sync()
        assert report.entries_added == 1 and report.files_reindexed == 0, report
    file_size = session.stat().st_size
    rows = [
        compare(f"bytes read after appending {len(line)} B to {file_size / 1e6:,.0f} MB",
                report.bytes_read, file_size, unit="B", limit=len(line) + 8192),
        compare("bytes read by the process (/proc/self/io rchar)", read["rchar"], file_size,
                unit="B"),
        compare("seconds for that sync", report.seconds),
    ]  # fmt: skip
    print_table(rows, title="Appending one line (baseline: re-reading the whole file)")


if __name__ == "__main__":
    main()
