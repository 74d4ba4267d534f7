"""Push with the secrets redacted against push without, side by side in one run (issue 26).

    python benchmarks/bench_redact.py [--pg postgresql://postgres@127.0.0.1:5432/postgres]
        [--size 1GB] [--sessions 2000] [--rounds 1]

Each round pushes the whole corpus (full tier, every entry's text and JSON) into two empty
team databases, one with ``redact=False`` and one with ``redact=True``, in alternating order;
the first row is the best redacted time against the best plain one (target: at most 2x, "must
not halve push throughput"). The push times move with the machine's load, so the redaction's
own cost is measured too: ``Redactor.entries`` over every entry's text and JSON (read from the
files beforehand, as push reads them), against the reading itself. The corpus
(index_common.agent_corpus, generated once into $XCSH_BENCH_DATA) is read, never written; its
index lives in the benchmarks' work folder.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_team import built_index, fresh_database
from benchmarks.harness import compare, print_table
from benchmarks.index_common import agent_corpus
from xcsh_store.index import SessionIndex
from xcsh_store.index.read.export import entry_rows, session_files
from xcsh_store.secrets import Redactor
from xcsh_store.team import connect, push


def timed_push(corpus: str, db_path: str, base: str, redact: bool) -> tuple[float, int]:
    """Seconds of one full push into a fresh database (its schema made beforehand)."""
    with fresh_database(base) as url:
        connect(url).close()
        started = time.perf_counter()
        report = push(corpus, url, host="bench", db_path=db_path, redact=redact)
        return time.perf_counter() - started, report.entries


def redaction_alone(corpus: str, db_path: str) -> tuple[float, float, int]:
    """Seconds reading every entry's text and JSON file by file, seconds redacting them, and
    their bytes."""
    redactor = Redactor()
    reading = redacting = 0.0
    size = 0
    with SessionIndex.open(corpus, db_path=db_path, read_only=True) as index:
        for state in session_files(index).values():
            started = time.perf_counter()
            pairs = [(row.text, row.raw) for row in entry_rows(index, state.file_id, True)]
            reading += time.perf_counter() - started
            size += sum(len(raw or "") + len(text or "") for text, raw in pairs)
            started = time.perf_counter()
            redactor.entries(pairs)
            redacting += time.perf_counter() - started
    return reading, redacting, size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--size", default="1GB")
    parser.add_argument("--sessions", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=1)
    options = parser.parse_args()
    print(f"load before: {os.getloadavg()}", flush=True)
    corpus = agent_corpus(options.size, options.sessions).agent_dir
    db_path = built_index(corpus, f"redact-index-{options.size.lower()}-{options.sessions}")
    reading, redacting, size = redaction_alone(corpus, db_path)
    print(f"read {size / 1e9:.2f} GB of text and JSON in {reading:.1f} s, redacted in"
          f" {redacting:.1f} s ({size / 1e6 / redacting:.1f} MB/s)", flush=True)  # fmt: skip
    plain: list[float] = []
    redacted: list[float] = []
    entries = 0
    for number in range(options.rounds):
        order = (False, True) if number % 2 == 0 else (True, False)
        for redact in order:
            seconds, entries = timed_push(corpus, db_path, options.pg, redact)
            (redacted if redact else plain).append(seconds)
            print(f"push redact={redact}: {seconds:.1f} s, {entries:,} entries", flush=True)
    row = compare(
        f"push {options.size} ({entries:,} entries) redacted vs not",
        min(redacted),
        min(plain),
    )
    row.target, row.met = "≤ 2× (not half the throughput)", min(redacted) <= 2 * min(plain)
    alone = compare(
        f"redaction alone, {size / 1e9:.2f} GB of entries' text and JSON, vs reading them",
        redacting,
        reading,
    )
    print(f"load after: {os.getloadavg()}")
    print_table([row, alone], title="Push with secret redaction (benchmarks/bench_redact.py)")


if __name__ == "__main__":
    main()
