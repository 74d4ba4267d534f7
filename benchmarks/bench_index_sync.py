"""Full sync throughput with 1, 2 and the default number of worker processes, the writer's own
ceiling, the floor of parsing and inserting the same rows, and the peak memory of the whole
process tree (workers included).

    python -m benchmarks.bench_index_sync [--size 1GB] [--sessions 2000] [--single 500MB]

* full sync, N workers: ``SessionIndex.sync(workers=N)`` from an empty index (1: no worker
  processes at all);
* the writer's ceiling: the chunks of rows the workers would hand over are built first (not
  timed, written to a file), then the writer alone applies them as in a sync, loading
  included: no sync with any number of workers can beat it by much (a sync also overlaps the
  writer's reading of files still being built with its writing);
* the floor: orjson-parse every line, then insert exactly the rows our sync produced
  (entries, search text, blob refs) with apsw ``executemany`` in transactions of the same size:
  the work a sync in one process cannot avoid;
* peak RSS: the largest sum of the resident sets of the syncing process and its workers,
  sampled every 20 ms (and the sum of each process's own peak, which bounds it from above).

Targets (issue 16): at least 50 MB/s with the default workers on 2 cores, peak RSS of the whole
sync at most 300 MB, also for one 500 MB session. Every step runs in a fresh child process.
"""

from __future__ import annotations

import argparse
import marshal
import os
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.corpus import cached_corpus, generate_session_file, parse_size
from benchmarks.harness import Row, compare, measure_in_child, print_table
from benchmarks.index_common import WORK_DIR, agent_corpus, fresh_db_path
from xcsh_store.files import open_regular_file
from xcsh_store.index import SessionIndex
from xcsh_store.index.db import apply_migrations, connect, load_migrations
from xcsh_store.index.write import pipeline
from xcsh_store.index.write.build import Chunk, Emit, read_from_start
from xcsh_store.index.write.bulk_load import bulk_writing
from xcsh_store.index.write.indexer import (
    _ENTRY_COLUMNS as ENTRY_COLUMNS,
)
from xcsh_store.index.write.indexer import (
    COMMIT_EVERY_VALUES,
    pk_counter,
)
from xcsh_store.index.write.scan import SeenFile, SyncReport, scan_root
from xcsh_store.index.write.stages.read import FileIndexer

# --------------------------------------------------------------------------------------------
# Memory of a process tree


def _status_kib(pid: int, key: str) -> int:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith(key):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _children(pid: int) -> list[int]:
    """The children of ``pid`` (any of its threads may have started them)."""
    found = []
    try:
        for thread in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{thread}/children", encoding="ascii") as handle:
                found += [int(child) for child in handle.read().split()]
    except OSError:
        pass
    return found


class TreeMemory:
    """Samples the resident set of this process and its children while a step runs."""

    def __init__(self, every: float = 0.02) -> None:
        self.every = every
        self.peak_sum = 0
        self.peaks: dict[int, int] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> TreeMemory:
        self.thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop.set()
        self.thread.join()
        self._sample_once()

    def _sample(self) -> None:
        while not self.stop.wait(self.every):
            self._sample_once()

    def _sample_once(self) -> None:
        pids = [os.getpid(), *_children(os.getpid())]
        self.peak_sum = max(self.peak_sum, sum(_status_kib(pid, "VmRSS:") for pid in pids) * 1024)
        for pid in pids:
            self.peaks[pid] = max(self.peaks.get(pid, 0), _status_kib(pid, "VmHWM:") * 1024)

    @property
    def sum_of_peaks(self) -> int:
        return sum(self.peaks.values())


def full_sync(agent_dir: str, db_path: str, workers: int | None) -> tuple[int, int, int]:
    """A full sync from an empty index (in a child): bytes read and the tree's peak RSS, as
    sampled and as the sum of each process's peak."""
    with TreeMemory() as memory, SessionIndex.open(agent_dir, db_path=db_path) as index:
        read = index.sync(workers=workers).bytes_read
    return read, memory.peak_sum, memory.sum_of_peaks


# --------------------------------------------------------------------------------------------
# The writer alone, and the floor


def _files(agent_dir: str) -> list[SeenFile]:
    """The session files in the order a sync reads them."""
    found = list(scan_root(os.path.join(agent_dir, "sessions"), SyncReport()))
    return sorted(found, key=lambda item: item.mtime_ns)


def _collector(into: list[tuple[Any, ...]]) -> Emit:
    def emit(chunk: Chunk) -> bool:
        into.append(tuple(chunk))
        return False

    return emit


def build_chunks(agent_dir: str, out: str) -> int:
    """Every file's chunks, as workers hand them over, marshalled into ``out`` (not timed)."""
    count = 0
    with open(out, "wb") as handle:
        for seen in _files(agent_dir):
            chunks: list[tuple[Any, ...]] = []
            with open_regular_file(seen.path) as stream:
                info = os.fstat(stream.fileno())
                read_from_start(
                    stream, seen.path, info.st_mtime_ns, _collector(chunks),
                    pipeline.WORKER_CHUNK_VALUES, pipeline.WORKER_CHUNK_BYTES,
                )  # fmt: skip
            stat = (info.st_size, info.st_mtime_ns, info.st_ino, info.st_ctime_ns)
            marshal.dump((seen.path, seen.root, seen.project_dir, stat, chunks), handle)
            count += 1
    return count


def _built(path: str) -> Iterator[tuple[SeenFile, tuple[int, int, int, int], list[Chunk]]]:
    with open(path, "rb") as handle:
        while True:
            try:
                file_path, root, project_dir, stat, chunks = marshal.load(handle)
            except EOFError:
                return
            seen = SeenFile(file_path, root, project_dir, *stat)
            yield seen, stat, [Chunk._make(chunk) for chunk in chunks]


def apply_chunks(chunks_file: str, db_path: str) -> int:
    """The writer's ceiling (in a child): load and apply the built chunks; microseconds."""
    connection = connect(db_path)
    apply_migrations(connection, load_migrations())
    indexer = FileIndexer(connection, pk_counter(connection), SyncReport())
    started = time.perf_counter()
    with bulk_writing(connection):
        for seen, stat, chunks in _built(chunks_file):
            indexer.apply_built(seen, None, stat, chunks)
            if indexer.batch.full:
                indexer.batch.commit()
        indexer.batch.commit()
    elapsed = time.perf_counter() - started
    connection.close()
    return int(elapsed * 1e6)


def _floor_rows(chunks_file: str) -> dict[str, list[tuple[Any, ...]]]:
    """The rows a sync from an empty index writes, keys as it hands them out (files in
    order, from 1), less those a later line with the same id replaced."""
    rows: dict[str, list[tuple[Any, ...]]] = {"entries": [], "entries_fts": [], "blob_refs": []}
    base = 1
    for file_id, (_seen, _stat, chunks) in enumerate(_built(chunks_file), 1):
        replaced = {key for chunk in chunks for key in chunk.replaced}
        for chunk in chunks:
            rows["entries"] += [
                (row[0] + base, file_id, *row[1:-1], None if row[-1] is None else row[-1] + base)
                for row in chunk.entries
                if row[0] not in replaced
            ]
            rows["entries_fts"] += [(k + base, t) for k, t in chunk.texts if k not in replaced]
            rows["blob_refs"] += [(k + base, d) for k, d in chunk.blobs if k not in replaced]
        base += chunks[-1].keys_end
    return rows


def floor(agent_dir: str, chunks_file: str, db_path: str) -> int:
    """orjson-parse every line, then insert the same rows (preparing them is not timed)."""
    rows = _floor_rows(chunks_file)
    connection = apsw.Connection(db_path)
    connection.execute("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL")
    connection.execute("PRAGMA cache_size = -32768")
    apply_migrations(connection, load_migrations())
    started = time.perf_counter()
    for seen in _files(agent_dir):
        with open(seen.path, "rb") as handle:
            for line in handle:
                orjson.loads(line)
    for table, values in rows.items():
        if not values:
            continue
        # The entry rows are in the writer's column order, not the table's (migrations add
        # columns at the end).
        columns = {"entries_fts": "(rowid, text)", "entries": f"({ENTRY_COLUMNS})"}.get(table, "")
        marks = ",".join("?" * len(values[0]))
        for start in range(0, len(values), COMMIT_EVERY_VALUES):
            with connection:
                connection.executemany(
                    f"INSERT INTO {table} {columns} VALUES ({marks})",
                    values[start : start + COMMIT_EVERY_VALUES],
                )
    elapsed = time.perf_counter() - started
    connection.close()
    return int(elapsed * 1e6)


# --------------------------------------------------------------------------------------------
# The run


def _sync_rows(
    label: str,
    agent_dir: str,
    megabytes: float,
    runs: list[tuple[int | None, str]],
    name: str,
    target: float | None = None,
) -> tuple[list[Row], dict[int | None, float]]:
    """A full sync with each (workers, label) of ``runs``: MB/s (against the first run; the
    default workers' against ``target`` too) and the peak RSS of its processes."""
    rows: list[Row] = []
    rates: dict[int | None, float] = {}
    for count, shown in runs:
        run = measure_in_child(full_sync, agent_dir, fresh_db_path(name), count, label=shown)
        rates[count] = megabytes / run.best
        _read, peak_sum, sum_of_peaks = run.result
        first = rates[runs[0][0]] if count != runs[0][0] else None
        limit: dict[str, Any] = {"limit": target} if count is None and target else {}
        rows += [
            compare(f"{label}, {shown}", rates[count], first, unit="MB/s",
                    higher_is_better=True, **limit),
            compare(f"peak RSS of the sync's processes, {shown}", peak_sum, unit="B",
                    limit=300e6),
            compare("  (each process's own peak, summed)", sum_of_peaks, unit="B"),
        ]  # fmt: skip
    return rows, rates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="1GB")
    parser.add_argument("--sessions", type=int, default=2000)
    parser.add_argument("--single", default="500MB", help="size of the one-session corpus")
    options = parser.parse_args()

    corpus = agent_corpus(options.size, options.sessions)
    megabytes = corpus.total_bytes / 1e6
    label = f"full sync of {megabytes:,.0f} MB ({corpus.sessions} sessions)"
    default = pipeline.default_workers()
    runs: list[tuple[int | None, str]] = [(1, "1 worker (none started)")]
    if default == 2:
        runs.append((None, "2 workers (the default)"))
    else:
        runs += [(2, "2 workers"), (None, f"{default} workers (the default)")]
    rows, rates = _sync_rows(label, corpus.agent_dir, megabytes, runs, "sync-full", target=50)

    chunks_file = str(WORK_DIR / "sync-chunks" / "chunks.marshal")
    Path(chunks_file).parent.mkdir(parents=True, exist_ok=True)
    build_chunks(corpus.agent_dir, chunks_file)
    ceiling = measure_in_child(apply_chunks, chunks_file, fresh_db_path("sync-writer"))
    floor_run = measure_in_child(floor, corpus.agent_dir, chunks_file, fresh_db_path("floor"))
    os.remove(chunks_file)
    rows += [
        compare("the writer's ceiling (applying built chunks alone)",
                megabytes / (ceiling.result / 1e6), rates[1], unit="MB/s", higher_is_better=True),
        compare("floor: parse + insert the same rows, one process",
                megabytes / (floor_run.result / 1e6), rates[1], unit="MB/s",
                higher_is_better=True),
    ]  # fmt: skip

    single = cached_corpus(
        f"session-{options.single.lower()}",
        generate_session_file,
        target_bytes=parse_size(options.single),
        seed=11,
    )
    single_rows, _ = _sync_rows(
        f"sync of one {single.total_bytes / 1e6:,.0f} MB session",
        single.agent_dir,
        single.total_bytes / 1e6,
        [(None, f"{default} workers (the default)")],
        "sync-single",
    )
    rows += single_rows
    print_table(
        rows, title="Full sync (baseline: the same sync with 1 worker, i.e. in one process)"
    )


if __name__ == "__main__":
    main()
