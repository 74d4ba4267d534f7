"""Prompt history at scale: add() throughput and search() latency against a LIKE scan.

Builds a history.db of N generated prompts (Zipf-distributed words, 5-60 per prompt, seeded)
through ``HistoryStorage.add()`` + ``flush()``, spreads their times over two years, then times
``search()`` over a few hundred queries of 1-3 content words (a third ending in a word prefix)
and, in the same run, the same queries as ``prompt LIKE '%word%'`` scans (AND of LIKEs, same
ordering and limit). A second, smaller set of stop-word queries shows the worst case. Every
search() answer is also compared with the reference's single SQL statement.

Reproduce (from the repository root):

    python benchmarks/bench_history.py                  # 1,000,000 prompts, about 6 minutes
    python benchmarks/bench_history.py --prompts 50000  # a quick run
"""

from __future__ import annotations

import argparse
import bisect
import itertools
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import apsw
from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from xcsh_store.history.search import REFERENCE_SEARCH_SQL, build_fts_query
from xcsh_store.history.store import HistoryEntry, HistoryStorage

# Words people type to coding agents, most frequent first: function words, then content words.
# The long tail (identifiers, names, domain words) is made up from syllables so the vocabulary
# is as large as a real history's.
STOP_TEXT = """
the to and a of in it is for that this with on can you be please i we not from should as when if
all so it's an are there now but what by do have at or also just one was then into only still
how more
"""
CONTENT_TEXT = """
file test add fix use make error function code run new change why update function's check
instead data need tests class return value type failing build make sure write read config module
import package script command output input line lines files method variable name names path
directory folder branch commit merge rebase push pull request review issue bug bugs crash
exception stack trace log logs logging debug release version versions install dependency
dependencies upgrade downgrade migrate migration migrations database schema table query index
column row rows sql sqlite postgres cache server client api endpoint route handler request
response header headers json yaml toml csv parse parser serialize deserialize string strings
list dict array map set tuple object objects field fields property key keys default option
options flag flags argument arguments parameter parameters call calls loop async await thread
threads process processes lock timeout retry queue worker job jobs event events callback promise
stream buffer memory performance slow fast faster benchmark profile refactor rename move delete
remove extract inline split merge clean cleanup simplify duplicate document docs docstring
comment comments readme example examples tutorial guide explain why unit integration end
regression coverage mock fixture fixtures assert assertion pytest jest typescript javascript
python rust golang java kotlin swift ruby shell bash zsh docker compose kubernetes helm
terraform aws gcp azure deploy deployment production staging local environment variables secret
secrets token auth login logout session sessions user users account password permission
permissions role roles admin frontend backend component components react vue svelte css html
style layout button form modal page pages view views template templates render state props hook
hooks store reducer action actions router navigation link links image images upload download
storage bucket file's size limit limits pagination sort sorting filter filtering search result
results total count sum average date time timezone format formatting lint linter ruff eslint
prettier types typing generic generics interface interfaces enum struct trait impl closure
iterator generator decorator context manager wrapper adapter factory singleton pattern
architecture design diagram plan plans step steps first second next last before after again
"""
STOP_WORDS = STOP_TEXT.split()
COMMON_WORDS = STOP_WORDS + CONTENT_TEXT.split()

TWO_YEARS = 2 * 365 * 86400

SYLLABLE_TEXT = (
    "ka ri to mo sa ne lu vi pe dor an ex tr ium ol ac ist el ven gra pho lin ser qua bit net "
    "zen mar tek sol cor flux dat syn ops hub max min kit wav pix cod dev log arc"
)
SYLLABLES = SYLLABLE_TEXT.split()


def build_vocabulary(rng: random.Random, size: int) -> list[str]:
    words = list(dict.fromkeys(COMMON_WORDS))
    seen = set(words)
    while len(words) < size:
        candidate = "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4)))
        if candidate not in seen:
            seen.add(candidate)
            words.append(candidate)
    return words


def zipf_sampler(rng: random.Random, words: Sequence[str]) -> Callable[[int], list[str]]:
    """Draw words with frequency proportional to 1 / rank, as in natural text."""
    cumulative = list(itertools.accumulate(1.0 / rank for rank in range(1, len(words) + 1)))
    total = cumulative[-1]

    def sample(count: int) -> list[str]:
        return [
            words[bisect.bisect(cumulative, rng.random() * total, hi=len(words) - 1)]
            for _ in range(count)
        ]

    return sample


def generate_prompts(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    sample = zipf_sampler(rng, build_vocabulary(rng, 20_000))
    return [" ".join(sample(rng.randint(5, 60))) for _ in range(count)]


def generate_queries(prompts: Sequence[str], count: int, seed: int) -> list[list[str]]:
    """1-3 content words of a stored prompt (what people recall it by); a third end in a prefix.

    Stop words are left out: nobody looks a prompt up by "the". What they cost is measured
    separately (stop_word_queries).
    """
    rng = random.Random(seed + 1)
    queries = []
    while len(queries) < count:
        words = [word for word in rng.choice(prompts).split() if word not in STOP_WORDS]
        if not words:
            continue
        chosen = rng.sample(words, min(len(words), rng.randint(1, 3)))
        if rng.random() < 1 / 3 and len(chosen[-1]) > 3:
            chosen[-1] = chosen[-1][: rng.randint(3, len(chosen[-1]) - 1)]
        queries.append(chosen)
    return queries


def stop_word_queries(count: int, seed: int) -> list[list[str]]:
    """The worst case for FTS5 without a prefix index: 1-2 of the most frequent words."""
    rng = random.Random(seed + 2)
    return [rng.sample(STOP_WORDS, rng.randint(1, 2)) for _ in range(count)]


def like_scan(connection: apsw.Connection, words: Sequence[str], limit: int) -> list[HistoryEntry]:
    """The baseline without FTS: every word as a substring, same order and limit as search()."""
    where = " AND ".join("prompt LIKE ?" for _ in words)
    sql = (
        f"SELECT id, prompt, created_at, cwd FROM history WHERE {where}"
        " ORDER BY created_at DESC, id DESC LIMIT ?"
    )
    rows = connection.execute(sql, (*(f"%{word}%" for word in words), limit)).fetchall()
    return [HistoryEntry(*row) for row in rows]


def time_each(run: Callable[[Sequence[str]], object], queries: Sequence[list[str]]) -> list[float]:
    timings = []
    for words in queries:
        started = time.perf_counter()
        run(words)
        timings.append((time.perf_counter() - started) * 1000)
    return timings


def percentile(values: Sequence[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prompts", type=int, default=1_000_000, help="prompts to store")
    parser.add_argument("--queries", type=int, default=300, help="search queries to time")
    parser.add_argument("--limit", type=int, default=50, help="limit passed to every search")
    parser.add_argument("--seed", type=int, default=1, help="seed of the text generator")
    parser.add_argument("--dir", help="folder for history.db (default: a fresh temp folder)")
    args = parser.parse_args()

    folder = args.dir or tempfile.mkdtemp(prefix="bench-history-")
    db_path = os.path.join(folder, "history.db")
    if os.path.exists(db_path):
        parser.error(f"{db_path} exists; give an empty --dir")

    print(f"generating {args.prompts:,} prompts (seed {args.seed})", flush=True)
    prompts = generate_prompts(args.prompts, args.seed)
    queries = generate_queries(prompts, args.queries, args.seed)

    with HistoryStorage.open(db_path) as history:
        started = time.perf_counter()
        for prompt in prompts:
            history.add(prompt, "/work/project")
        history.flush()
        insert_seconds = time.perf_counter() - started
        stored = len(prompts)
        print(f"inserted in {insert_seconds:.1f} s", flush=True)
        spread_over_two_years(db_path)

        baseline = apsw.Connection(db_path, flags=apsw.SQLITE_OPEN_READONLY)
        try:
            content = measure(history, baseline, queries, args.limit)
            stop_words = measure(history, baseline, stop_word_queries(50, args.seed), args.limit)
        finally:
            baseline.close()

    size_mb = os.path.getsize(db_path) / 1e6
    print()
    print(
        f"{stored:,} prompts, {size_mb:,.0f} MB, SQLite {apsw.sqlite_lib_version()};"
        f" limit {args.limit}"
    )
    print(f"insert through add()+flush(): {stored / insert_seconds:,.0f} prompts/s")
    for title, measured in (
        (f"{len(queries)} content-word queries", content),
        ("50 stop-word queries (worst case, for reference)", stop_words),
    ):
        fts_ms, like_ms, filled, identical = measured
        print(
            f"\n{title}: {filled} filled the limit;"
            f" results identical to the reference query: {identical}/{len(fts_ms)}"
        )
        print(table(fts_ms, like_ms))
    print(f"\ndatabase kept at {db_path}")


def spread_over_two_years(db_path: str) -> None:
    """Give the prompts the times of a two-year history, in id order.

    add() stamps them all within the same minute or two, which no real history looks like:
    thousands of rows sharing each second would make both sides sort big groups of equal
    times. Only created_at changes, so the FTS index is untouched.
    """
    connection = apsw.Connection(db_path)
    try:
        connection.set_busy_timeout(5000)
        newest = connection.execute("SELECT max(created_at), max(id) FROM history").fetchone()
        with connection:
            connection.execute(
                "UPDATE history SET created_at = ? - (? - id) * ? / ?",
                (*newest, TWO_YEARS, newest[1]),
            )
    finally:
        connection.close()


def measure(
    history: HistoryStorage, baseline: apsw.Connection, queries: list[list[str]], limit: int
) -> tuple[list[float], list[float], int, int]:
    """Timings of search() and of the LIKE scan per query, plus two checks of the answers."""
    # One untimed pass over a few queries each way so neither side pays for a cold cache.
    for words in queries[:20]:
        history.search(" ".join(words), limit)
        like_scan(baseline, words, limit)
    fts_ms = time_each(lambda words: history.search(" ".join(words), limit), queries)
    like_ms = time_each(lambda words: like_scan(baseline, words, limit), queries)
    filled = identical = 0
    for words in queries:
        found = history.search(" ".join(words), limit)
        filled += len(found) == limit
        identical += found == reference_search(baseline, " ".join(words), limit)
    return fts_ms, like_ms, filled, identical


def reference_search(connection: apsw.Connection, query: str, limit: int) -> list[HistoryEntry]:
    """The reference's single query, which sorts every match: what search() must return
    (compatibility: Prompt history as in the reference)."""
    rows = connection.execute(REFERENCE_SEARCH_SQL, (build_fts_query(query), limit))
    return [HistoryEntry(*row) for row in rows]


def table(fts_ms: Sequence[float], like_ms: Sequence[float]) -> str:
    rows = [
        (label, fts, like, f"{like / fts:,.0f}x" if like >= 10 * fts else f"{like / fts:.2f}x")
        for label, fts, like in (
            ("p50", percentile(fts_ms, 0.5), percentile(like_ms, 0.5)),
            ("p95", percentile(fts_ms, 0.95), percentile(like_ms, 0.95)),
            ("max", max(fts_ms), max(like_ms)),
            ("mean", statistics.fmean(fts_ms), statistics.fmean(like_ms)),
        )
    ]
    return tabulate(
        rows, headers=["", "search() ms", "LIKE scan ms", "LIKE / search()"], floatfmt=".2f"
    )


if __name__ == "__main__":
    main()
