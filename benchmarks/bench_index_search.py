"""Full-text search on a large corpus: latency percentiles, against ripgrep over the same files.

    python benchmarks/bench_index_search.py [--size 1GB] [--sessions 2000]

Queries: 30 rare words (planted in the corpus), 30 words of middling frequency (in 0.05 % to
3 % of the entries, from the index's own vocabulary), 20 pairs of those, 10 prefixes of them,
and 10 queries of the corpus's most common words (stop words; shown separately too). ripgrep
(Debian package ``ripgrep``) searches the session files for the query's rarest word,
case-insensitively: less work than our query, so the comparison favours it.
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


def middling_words(index: SessionIndex, seed: int = 0) -> list[str]:
    """Words in 0.05 % to 3 % of the entries: what people actually search for."""
    (entries,) = index.connection.execute("SELECT count(*) FROM entries").fetchall()[0]
    rows = index.connection.execute(
        "SELECT term FROM entries_vocab WHERE doc BETWEEN ? AND ? AND length(term) >= 4",
        (max(1, entries // 2000), entries * 3 // 100),
    ).fetchall()
    words = sorted(term for (term,) in rows if term.isalpha())
    return random.Random(seed).sample(words, min(40, len(words)))


def queries_for(
    rare: list[str], middling: list[str], common: list[str], seed: int = 0
) -> tuple[list[str], list[str]]:
    """The benchmark's queries, and separately its stop-word queries."""
    rng = random.Random(seed)
    pairs = [" ".join(rng.sample(middling, 2)) for _ in range(20)] if len(middling) > 1 else []
    prefixes = [word[: max(3, len(word) - 2)] for word in middling[:10]]
    stop = [rng.choice(common) for _ in range(5)]
    stop += [f"{rng.choice(common)} {rng.choice(common)}" for _ in range(5)]
    return rare[:30] + middling[:30] + pairs + prefixes, stop


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
    latencies: list[float] = []
    stop_latencies: list[float] = []
    hits = 0
    with SessionIndex.open(corpus.agent_dir, db_path=db_path, read_only=True) as index:
        queries, stop = queries_for(
            list(corpus.rare_words), middling_words(index), corpus.common_words
        )
        for query in queries + stop:
            index.search(query)  # warm the page cache for this query's terms once
        for _round in range(3):
            for query in queries + stop:
                started = time.perf_counter()
                found = index.search(query)
                elapsed = time.perf_counter() - started
                latencies.append(elapsed)
                if query in stop:
                    stop_latencies.append(elapsed)
                hits += bool(found)

    sessions_dir = str(Path(corpus.agent_dir) / "sessions")
    rg_times: list[float] = []
    for query in (queries + stop)[:: max(1, len(queries + stop) // options.rg_queries)]:
        rarest = min(query.split(), key=lambda word: corpus.rare_words.get(word, 10**9))
        command = ["rg", "--count-matches", "-i", "-F", "--", rarest, sessions_dir]
        subprocess.run(command, capture_output=True)  # warm
        started = time.perf_counter()
        subprocess.run(command, capture_output=True)
        rg_times.append(time.perf_counter() - started)

    p50, p95 = percentile(latencies, 50), percentile(latencies, 95)
    rg_median = percentile(rg_times, 50)
    rows = [
        compare(f"search p50 ({len(queries) + len(stop)} queries x 3, {hits} with hits)", p50,
                rg_median, min_ratio=20),
        compare("search p95", p95, rg_median, limit=0.050),
        compare("search max", max(latencies), max(rg_times)),
        compare("stop-word queries only, p95", percentile(stop_latencies, 95), rg_median),
    ]  # fmt: skip
    print_table(
        rows,
        title=f"Search over {corpus.total_bytes / 1e9:.2f} GB (baseline: ripgrep, median)",
    )


if __name__ == "__main__":
    main()
