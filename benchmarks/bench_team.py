"""The team index and the Parquet export on the benchmark corpora, side by side in one run.

    python benchmarks/bench_team.py [--pg postgresql://postgres@127.0.0.1:5432/postgres]
        [--corpus DIR] [--small DIR]

Rows (targets of issue 17):

* push of the 1 GB corpus (full tier, into an empty team index) against a bare ``COPY`` of
  the very rows it wrote (dumped from the server, loaded into another empty team index with
  the same schema, indexes and tsvector column): at most 1.5x its time;
* a no-change push of 10,000 files: at most 200 ms;
* team search p95 over three hosts x 1 GB (the pushed host's rows copied to two more hosts on
  the server), the queries of bench_index_search.py: at most 50 ms;
* ``usage --by host --by day`` over the three hosts: at most 100 ms;
* export of the 1 GB corpus to Parquet, and a DuckDB query over it (no target).

The corpora (by default agent-1gb-2000 and agent-200mb-10000 of index_common.agent_corpus,
generated once into $XCSH_BENCH_DATA) are read, never written: their indexes live in the
benchmarks' work folder (built when missing). Each run creates its databases (unique names)
and drops them after.
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import duckdb
import psycopg

from benchmarks.bench_index_search import middling_words, queries_for
from benchmarks.corpus import CorpusManifest
from benchmarks.harness import compare, percentile, print_table, time_interleaved
from benchmarks.index_common import WORK_DIR, agent_corpus
from xcsh_store.index import SessionIndex
from xcsh_store.team import TeamIndex, connect, export_parquet, push

# The team tables in the order their foreign keys allow loading them, with the columns a COPY
# writes (the tsvector columns are generated).
TABLES = {
    "hosts": None,
    "usage_rollup": None,
    "files": None,
    "sessions": None,
    "entries": None,
    "blob_refs": "host, path, seq, hash",
}
INDEX_HOME = WORK_DIR


def database_url(base: str, name: str) -> str:
    parts = urlsplit(base)
    return urlunsplit((parts.scheme, parts.netloc, f"/{name}", parts.query, parts.fragment))


@contextmanager
def fresh_database(base: str) -> Iterator[str]:
    name = f"xcsh_bench_{os.getpid()}_{secrets.token_hex(3)}"
    with psycopg.connect(base, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield database_url(base, name)
    finally:
        with psycopg.connect(base, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def built_index(agent_dir: str, name: str) -> str:
    """The corpus's index, outside the corpus (built once)."""
    db_path = INDEX_HOME / name / "index.db"
    db_path.parent.mkdir(parents=True, exist_ok=True)
    with SessionIndex.open(agent_dir, db_path=str(db_path)) as index:
        index.sync()
    return str(db_path)


def copy_columns(connection: psycopg.Connection[Any], table: str) -> str:
    listed = TABLES[table]
    if listed is not None:
        return listed
    rows = connection.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_name = %s"
        " AND is_generated = 'NEVER' ORDER BY ordinal_position",
        (table,),
    ).fetchall()
    return ", ".join(name for (name,) in rows)


def dump(url: str, folder: Path) -> dict[str, str]:
    """Every team table's rows, in COPY's binary format, one file each."""
    columns = {}
    with psycopg.connect(url) as connection:
        for table in TABLES:
            columns[table] = copy_columns(connection, table)
            with (
                open(folder / f"{table}.copy", "wb") as out,
                connection.cursor().copy(
                    f"COPY (SELECT {columns[table]} FROM {table}) TO STDOUT (FORMAT binary)"
                ) as copy,
            ):
                for block in copy:
                    out.write(block)
    return columns


def bare_copy(url: str, folder: Path, columns: dict[str, str]) -> None:
    """The baseline: the dumped rows loaded by COPY, one transaction, nothing else."""
    with psycopg.connect(url) as connection, connection.transaction():
        for table in TABLES:
            with (
                open(folder / f"{table}.copy", "rb") as source,
                connection.cursor().copy(
                    f"COPY {table} ({columns[table]}) FROM STDIN (FORMAT binary)"
                ) as copy,
            ):
                while block := source.read(1 << 20):
                    copy.write(block)


def copy_host(url: str, source: str, target: str) -> None:
    """Another host with the same rows, made on the server."""
    with psycopg.connect(url) as connection, connection.transaction():
        for table in TABLES:
            columns = copy_columns(connection, table)
            chosen = columns.replace("host", "%s AS host", 1)
            connection.execute(
                f"INSERT INTO {table} ({columns}) SELECT {chosen} FROM {table} WHERE host = %s",
                (target, source),
            )
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute("VACUUM ANALYZE")


def timed(call: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = call()
    return time.perf_counter() - started, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--corpus", help="the 1 GB agent dir (default: generated once)")
    parser.add_argument("--small", help="the 10,000-session agent dir (default: generated once)")
    options = parser.parse_args()
    options.corpus = options.corpus or agent_corpus("1GB", 2000).agent_dir
    options.small = options.small or agent_corpus("200MB", 10_000).agent_dir
    print(f"load before: {os.getloadavg()}", flush=True)
    big_db = built_index(options.corpus, "team-index-1gb")
    small_db = built_index(options.small, "team-index-10000")
    rows = []

    def keep(row: Any) -> None:
        """A row of the table, printed at once too (a later step may fail)."""
        rows.append(row)
        print(" | ".join(row.cells()), flush=True)

    work = Path(tempfile.mkdtemp(prefix="xcsh-bench-team-"))
    try:
        with fresh_database(options.pg) as url, fresh_database(options.pg) as baseline_url:
            connect(url).close()  # the schema, outside the timing (a first push creates it)
            connect(baseline_url).close()
            push_seconds, report = timed(
                lambda: push(options.corpus, url, host="h1", db_path=big_db)
            )
            print(f"push: {push_seconds:.1f} s, {report.entries:,} entries", flush=True)
            columns = dump(url, work)
            copy_seconds, _ = timed(lambda: bare_copy(baseline_url, work, columns))
            print(f"bare COPY: {copy_seconds:.1f} s", flush=True)
            row = compare(
                f"push 1 GB ({report.pushed:,} files, {report.entries:,} entries)"
                " vs bare COPY of its rows",
                push_seconds,
                copy_seconds,
            )
            row.target, row.met = "≤ 1.5× COPY", push_seconds <= 1.5 * copy_seconds
            keep(row)

            push(options.small, url, host="small", db_path=small_db)
            (nochange,) = time_interleaved(
                lambda: push(options.small, url, host="small", db_path=small_db), repeat=7
            )
            assert nochange.result.pushed == 0
            keep(compare("no-change push, 10,000 files", nochange, limit=0.2))

            with psycopg.connect(url, autocommit=True) as connection:
                for table in ("files", "usage_rollup", "hosts"):
                    connection.execute(f"DELETE FROM {table} WHERE host = 'small'")
            for host in ("h2", "h3"):
                copy_host(url, "h1", host)
            with SessionIndex.open(options.corpus, db_path=big_db, read_only=True) as index:
                manifest = CorpusManifest.read(Path(options.corpus) / "manifest.json")
                queries, stop = queries_for(
                    list(manifest.rare_words), middling_words(index), manifest.common_words
                )
            latencies = []
            hits = 0
            with TeamIndex.open(url) as team:
                for query in queries + stop:
                    team.search(query)  # warm
                for _round in range(3):
                    for query in queries + stop:
                        seconds, found = timed(lambda query=query: team.search(query))
                        latencies.append(seconds)
                        hits += bool(found)
                keep(
                    compare(
                        f"team search p95 ({len(queries + stop)} queries x 3, 3 hosts x 1 GB)",
                        percentile(latencies, 95),
                        limit=0.05,
                    )
                )
                keep(compare("team search p50", percentile(latencies, 50)))
                (usage,) = time_interleaved(lambda: team.usage(by=["host", "day"]), repeat=7)
                keep(compare("usage --by host --by day (3 hosts x 1 GB)", usage, limit=0.1))

        out = work / "parquet"
        export_seconds, exported = timed(
            lambda: export_parquet(options.corpus, str(out), host="h1", db_path=big_db)
        )
        keep(compare(f"export parquet 1 GB ({exported.rows:,} rows)", export_seconds))
        again_seconds, _ = timed(
            lambda: export_parquet(options.corpus, str(out), host="h1", db_path=big_db)
        )
        keep(compare("export parquet again, nothing changed", again_seconds))
        files = f"{out}/usage/**/*.parquet"
        query = (
            "SELECT host, month, model, count(*), sum(cost) FROM"
            f" read_parquet('{files}', hive_partitioning = true) GROUP BY ALL"
        )
        (duck,) = time_interleaved(lambda: duckdb.sql(query).fetchall(), repeat=7)
        keep(compare("DuckDB: usage by host, month, model over the export", duck))
        text = (
            "SELECT count(*) FROM read_parquet("
            f"'{out}/entries/**/*.parquet', hive_partitioning = true)"
            f" WHERE text ILIKE '%{manifest.common_words[0]}%'"
        )
        (scan,) = time_interleaved(lambda: duckdb.sql(text).fetchall(), repeat=3)
        keep(compare("DuckDB: ILIKE scan of every entry's text", scan))
        size = sum(path.stat().st_size for path in out.rglob("*.parquet"))
        print(f"parquet bytes: {size:,}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"load after: {os.getloadavg()}")
    print_table(rows, title="Team index and Parquet export (benchmarks/bench_team.py)")


if __name__ == "__main__":
    main()
