"""Team search latency over several hosts (issue 28, item 2), at a corpus size the machine
allows, for rare, middling and common words.

    python -m benchmarks.bench_team_search [--size 200MB] [--hosts 3,10]
        [--pg postgresql://postgres@127.0.0.1:5432/postgres]

One host's index of the corpus is pushed, then copied on the server to more hosts (as
bench_team.py does); for each host count the queries of bench_index_search.py (rare words,
middling words, pairs, prefixes, and stop words) run three times after a warm-up round:
p50 and p95 per kind of query, and over all.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from benchmarks.bench_index_search import middling_words, queries_for
from benchmarks.bench_team import built_index, copy_host, fresh_database
from benchmarks.corpus import CorpusManifest
from benchmarks.harness import compare, percentile, print_table
from benchmarks.index_common import agent_corpus
from xcsh_store.index import SessionIndex
from xcsh_store.team import TeamIndex, connect, push


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--size", default="200MB")
    parser.add_argument("--sessions", type=int, default=2000)
    parser.add_argument("--hosts", default="3,10")
    options = parser.parse_args()
    counts = sorted(int(count) for count in options.hosts.split(","))
    manifest = agent_corpus(options.size, options.sessions)
    db_path = built_index(manifest.agent_dir, f"team-index-{options.size.lower()}")
    with SessionIndex.open(manifest.agent_dir, db_path=db_path, read_only=True) as index:
        corpus = CorpusManifest.read(Path(manifest.agent_dir) / "manifest.json")
        queries, stop = queries_for(
            list(corpus.rare_words), middling_words(index), corpus.common_words
        )
    kinds = {
        "rare": queries[:30],
        "middling": queries[30:60],
        "pairs and prefixes": queries[60:],
        "stop words": stop,
    }
    print(f"load before: {os.getloadavg()}", flush=True)
    rows = []
    with fresh_database(options.pg) as url:
        connect(url).close()
        push(manifest.agent_dir, url, host="h1", db_path=db_path)
        made = 1
        for count in counts:
            for number in range(made + 1, count + 1):
                copy_host(url, "h1", f"h{number}")
            made = count
            every: list[float] = []
            with TeamIndex.open(url) as team:
                for query in queries + stop:
                    team.search(query)  # warm
                for kind, asked in kinds.items():
                    latencies = []
                    for _round in range(3):
                        for query in asked:
                            started = time.perf_counter()
                            team.search(query)
                            latencies.append(time.perf_counter() - started)
                    every += latencies
                    where = f"{count} hosts × {options.size}, {kind}"
                    rows.append(compare(f"team search p50, {where}", percentile(latencies, 50)))
                    rows.append(compare(f"team search p95, {where}", percentile(latencies, 95)))
            limit = 0.05 if count <= 3 else 0.08
            rows.append(
                compare(
                    f"team search p95, {count} hosts × {options.size}, all"
                    f" ({len(queries + stop)} queries × 3)",
                    percentile(every, 95),
                    limit=limit,
                )
            )
            print(rows[-1].cells(), flush=True)
    print(f"load after: {os.getloadavg()}")
    print_table(rows, title="Team search (benchmarks/bench_team_search.py)")


if __name__ == "__main__":
    main()
