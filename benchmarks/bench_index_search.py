"""Full-text search on a large corpus: latency percentiles, against ripgrep over the same files.

    python benchmarks/bench_index_search.py [--size 1GB] [--sessions 2000]

Queries mix rare words, common words, two-word queries and prefixes, taken from the corpus
manifest. ripgrep (Debian package ``ripgrep``) searches the session files for the query's
rarest word, case-insensitively: less work than our query, so the comparison favours it.
Targets (issue 6): p95 at most 50 ms and at least 20x faster than ripgrep.
"""

from __future__ import annotations

import argparse
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness import compare, percentile, print_table
from benchmarks.index_common import agent_corpus, built_index
from xcsh_store.index import SessionIndex


def queries_for(rare: list[str], common: list[str], seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    mixed = [f"{rng.choice(common)} {rng.choice(common)}" for _ in range(20)]
    mixed += [f"{rng.choice(common)} {rng.choice(rare)}" for _ in range(20)]
    prefixes = [word[: max(3, len(word) - 2)] for word in rng.sample(common, min(10, len(common)))]
    return rare[:30] + common[:20] + mixed + prefixes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="1GB")
    parser.add_argument("--sessions", type=int, default=2000)
    parser.add_argument("--rg-queries", type=int, default=15)
    options = parser.parse_args()
    if shutil.which("rg") is None:
        raise SystemExit("ripgrep is needed as the baseline: apt-get install ripgrep")
    corpus = agent_corpus(options.size, options.sessions)
    db_path = built_index(corpus, f"search-{options.size.lower()}-{options.sessions}")
    queries = queries_for(list(corpus.rare_words), corpus.common_words)

    latencies: list[float] = []
    hits = 0
    with SessionIndex.open(corpus.agent_dir, db_path=db_path, read_only=True) as index:
        for query in queries:
            index.search(query)  # warm the page cache for this query's terms once
        for _round in range(3):
            for query in queries:
                started = time.perf_counter()
                found = index.search(query)
                latencies.append(time.perf_counter() - started)
                hits += bool(found)

    sessions_dir = str(Path(corpus.agent_dir) / "sessions")
    rg_times: list[float] = []
    for query in queries[: options.rg_queries]:
        rarest = min(query.split(), key=lambda word: corpus.rare_words.get(word, 10**9))
        command = ["rg", "--count-matches", "-i", "-F", "--", rarest, sessions_dir]
        subprocess.run(command, capture_output=True)  # warm
        started = time.perf_counter()
        subprocess.run(command, capture_output=True)
        rg_times.append(time.perf_counter() - started)

    p50, p95 = percentile(latencies, 50), percentile(latencies, 95)
    rg_median = percentile(rg_times, 50)
    rows = [
        compare(f"search p50 ({len(queries)} queries x 3, {hits} with hits)", p50, rg_median,
                min_ratio=20),
        compare("search p95", p95, rg_median, limit=0.050),
        compare("search max", max(latencies), max(rg_times)),
    ]  # fmt: skip
    print_table(
        rows,
        title=f"Search over {corpus.total_bytes / 1e9:.2f} GB (baseline: ripgrep, median)",
    )


if __name__ == "__main__":
    main()
