"""A push that sends what is new (issue 28, item 1), side by side with the full push in one run.

    python -m benchmarks.bench_team_push [--size 200MB] [--sessions 2000]
        [--pg postgresql://postgres@127.0.0.1:5432/postgres]

On a writable copy of the corpus (agent_corpus: ``--sessions`` files, ``--size`` in all):

* the full push into an empty team index (the baseline);
* one entry appended to 1 % of the files, ``sync``, push: the push's time over the full push's
  (target ≤ 0.02), three rounds, median; beside it the same push without the ledger
  (team-pushed.db removed first: each grown file replaced whole, as every push did before);
* the server's row writes (triggers counting every row inserted, updated or deleted in the team
  tables) for one entry appended to the file nearest 655 lines, with and without the ledger
  (target ≤ 12 with it).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from team_server import count_row_writes

from benchmarks.bench_team import fresh_database
from benchmarks.harness import compare, print_table
from benchmarks.index_common import agent_corpus
from xcsh_store.index import SessionIndex
from xcsh_store.js import stringify
from xcsh_store.secrets import Redactor
from xcsh_store.team import connect, push
from xcsh_store.team.ledger import LEDGER_FILE_NAME


def appended(path: Path, number: int) -> None:
    """One user message more at the end of the session file."""
    line = {
        "type": "message",
        "id": f"bench-append-{number}-{path.stem[-8:]}",
        "parentId": None,
        "timestamp": "2026-06-01T00:00:00.000Z",
        "message": {"role": "user", "content": [{"type": "text", "text": f"appended {number}"}]},
    }
    with open(path, "ab") as handle:
        handle.write(stringify(line) + b"\n")


def sync(agent_dir: str) -> None:
    with SessionIndex.open(agent_dir) as index:
        index.sync()


def timed_push(agent_dir: str, url: str, redactor: Redactor | None = None) -> tuple[float, int]:
    started = time.perf_counter()
    report = push(agent_dir, url, host="bench", redactor=redactor)
    return time.perf_counter() - started, report.entries


def writes_since(url: str) -> int:
    with psycopg.connect(url, autocommit=True) as connection:
        (count,) = connection.execute("SELECT count(*) FROM row_writes").fetchone()
        connection.execute("DELETE FROM row_writes")
    return count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--size", default="200MB")
    parser.add_argument("--sessions", type=int, default=2000)
    options = parser.parse_args()
    manifest = agent_corpus(options.size, options.sessions)
    print(f"load before: {os.getloadavg()}", flush=True)
    work = Path(tempfile.mkdtemp(prefix="xcsh-bench-push-"))
    rows = []
    try:
        agent_dir = str(work / "agent")
        shutil.copytree(manifest.agent_dir, agent_dir)
        sync(agent_dir)
        files = sorted(Path(agent_dir, "sessions").rglob("*.jsonl"))
        grown = files[::100][: max(1, len(files) // 100)]
        ledger = Path(agent_dir) / LEDGER_FILE_NAME
        with fresh_database(options.pg) as url:
            connect(url).close()
            full, entries = timed_push(agent_dir, url)
            print(f"full push: {full:.2f} s, {entries:,} entries", flush=True)
            incremental, watching, replaced = [], [], []
            redactor = Redactor()  # as `push --watch` keeps one
            for number in range(3):
                for step, (times, kept) in enumerate(((incremental, None), (watching, redactor))):
                    for path in grown:
                        appended(path, 3 * number + step)
                    sync(agent_dir)
                    times.append(timed_push(agent_dir, url, kept)[0])
                for path in grown:
                    appended(path, 3 * number + 2)
                sync(agent_dir)
                ledger.unlink()
                replaced.append(timed_push(agent_dir, url)[0])
            print(f"incremental: {incremental}, watching: {watching}, replaced: {replaced}")
            share = f"{len(grown)} of {len(files):,} files grew by one entry"
            for label, times in (
                (f"push after {share}", incremental),
                ("the same in `push --watch` (the secret rules loaded once)", watching),
            ):
                row = compare(label, statistics.median(times), full)
                row.target, row.met = "≤ 0.02× the full push", row.measured <= 0.02 * full
                rows.append(row)
            rows.append(
                compare(
                    f"the same, without the ledger (files replaced whole: {share})",
                    statistics.median(replaced),
                    full,
                )
            )

            with psycopg.connect(url) as connection:
                path, count = connection.execute(
                    "SELECT path, entry_count FROM sessions WHERE host = 'bench'"
                    " ORDER BY abs(entry_count - 655), path LIMIT 1"
                ).fetchone()
            # Pushed once more first: the last round above removed the ledger, which now
            # holds only the files that grew since.
            appended(Path(path), 9)
            sync(agent_dir)
            push(agent_dir, url, host="bench")
            count_row_writes(url)
            for number, with_ledger in ((10, True), (11, False)):
                if not with_ledger:
                    ledger.unlink()
                appended(Path(path), number)
                sync(agent_dir)
                push(agent_dir, url, host="bench")
                counted = writes_since(url)
                how = "with the ledger" if with_ledger else "replaced whole (no ledger)"
                row = compare(
                    f"row writes for one entry appended to a {count}-entry session, {how}",
                    counted,
                    unit="rows",
                )
                if with_ledger:
                    row.target, row.met = "≤ 12", counted <= 12
                rows.append(row)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"load after: {os.getloadavg()}")
    print_table(rows, title="Push of what is new (benchmarks/bench_team_push.py)")


if __name__ == "__main__":
    main()
