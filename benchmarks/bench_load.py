"""Loading session files: parse + migrate, side by side with a plain stdlib-json line loop.

    python benchmarks/bench_load.py [--size 100MB] [--repeat 3]

Files: the five largest real fixtures and a generated session of ``--size`` (cached under
benchmarks/.data). Each step runs in a fresh child process, so its peak memory is its own.
Targets (issue 2): at least 3x the stdlib loop's MB/s; peak memory growth at most 3x the file.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.corpus import cached_corpus, generate_session_file, parse_size
from benchmarks.harness import compare, measure_in_child, print_table
from xcsh_store.format.loader import load_entries_from_file
from xcsh_store.format.versions import migrate_session_entries

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "pi"


def load_and_migrate(path: str) -> int:
    """What the store does: lenient parse, header check, v1 -> v3 migration."""
    entries = load_entries_from_file(path)
    migrate_session_entries(entries)
    return len(entries)


def stdlib_line_loop(path: str) -> int:
    """The baseline: json.loads on every line, skipping the ones that fail."""
    entries = []
    with open(path, "rb") as handle:
        for line in handle:
            try:
                entries.append(json.loads(line))
            except ValueError:
                continue
    return len(entries)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="100MB", help="size of the generated session")
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()

    generated = cached_corpus(
        f"session-{options.size.lower()}",
        generate_session_file,
        target_bytes=parse_size(options.size),
        seed=7,
    )
    files = sorted(FIXTURES.glob("*.jsonl"), key=lambda path: path.stat().st_size)[-5:]
    files.append(Path(generated.session_paths()[0]))

    rows = []
    for path in files:
        size = path.stat().st_size
        ours = measure_in_child(load_and_migrate, str(path), repeat=options.repeat)
        baseline = measure_in_child(stdlib_line_loop, str(path), repeat=options.repeat)
        megabytes = size / 1e6
        label = path.name if len(path.name) < 40 else path.name[:37] + "..."
        rows.append(
            compare(
                f"{label} ({megabytes:.1f} MB) MB/s",
                megabytes / ours.best,
                megabytes / baseline.best,
                unit="MB/s",
                higher_is_better=True,
                min_ratio=3,
            )
        )
        growth = (ours.peak_rss or 0) - (ours.base_rss or 0)
        rows.append(
            compare(
                f"{label} peak memory growth / file size",
                growth / size,
                ((baseline.peak_rss or 0) - (baseline.base_rss or 0)) / size,
                unit="x",
                limit=3,
            )
        )
    print_table(rows, title=f"Loading sessions (best of {options.repeat}, pid {os.getpid()})")


if __name__ == "__main__":
    main()
