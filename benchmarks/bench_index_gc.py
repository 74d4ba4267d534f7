"""Blob GC from reference counts, against mark-and-sweep by scanning every JSONL file.

    python benchmarks/bench_index_gc.py [--blobs 100000] [--size 1GB] [--sessions 2000]

The agent dir holds the sessions of the standard corpus (``--size``) plus a blob store of
``--blobs`` images with the sessions that reference them (linked in, not copied). Both sides
find the blob files no session references (a dry run). Target (issue 6): at least 10x faster
than mark-and-sweep.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.corpus import cached_corpus, generate_blob_store
from benchmarks.harness import compare, print_table, time_call
from benchmarks.index_common import WORK_DIR, agent_corpus, fresh_db_path, full_sync
from xcsh_store.format.blobs import BlobStore
from xcsh_store.index import SessionIndex

REF = re.compile(rb"blob:sha256:([0-9a-f]{64})")


def mark_and_sweep(agent_dir: str) -> set[str]:
    """Every reference in every session file, then every blob file not among them."""
    referenced: set[bytes] = set()
    for folder, _dirs, names in os.walk(os.path.join(agent_dir, "sessions"), followlinks=True):
        for name in names:
            if name.endswith(".jsonl"):
                with open(os.path.join(folder, name), "rb") as handle:
                    referenced.update(REF.findall(handle.read()))
    on_disk = set(os.listdir(os.path.join(agent_dir, "blobs")))
    return on_disk - {digest.decode() for digest in referenced}


def combined_agent_dir(sources: list[Path]) -> Path:
    """An agent dir whose project folders and blobs are links into cached corpora."""
    agent = WORK_DIR / "gc-agent"
    shutil.rmtree(agent, ignore_errors=True)
    (agent / "sessions").mkdir(parents=True)
    for number, source in enumerate(sources):
        for project in (source / "sessions").iterdir():
            (agent / "sessions" / f"{number}{project.name}").symlink_to(project)
    (agent / "blobs").symlink_to(sources[-1] / "blobs")
    return agent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blobs", type=int, default=100_000)
    parser.add_argument("--size", default="1GB")
    parser.add_argument("--sessions", type=int, default=2000)
    options = parser.parse_args()
    blobs = cached_corpus(f"blobs-{options.blobs}", generate_blob_store, count=options.blobs)
    sessions = agent_corpus(options.size, options.sessions)
    agent = combined_agent_dir([Path(sessions.agent_dir), Path(blobs.agent_dir)])
    db_path = fresh_db_path(f"gc-{options.blobs}")
    full_sync(str(agent), db_path)
    everything = timedelta(0)  # no grace period, so both answer the same question
    store = BlobStore(str(agent / "blobs"))
    added: list[str] = []  # removed at the end: the blobs folder is the cached corpus's
    with SessionIndex.open(str(agent), db_path=db_path) as index:
        ours = time_call(index.blob_gc, grace=everything, repeat=5, label="blob_gc (dry run)")
        # A new blob changes the folder: the GC lists it again instead of trusting the index.
        changed = time_call(
            index.blob_gc,
            grace=everything,
            repeat=3,
            setup=lambda: added.append(store.put(os.urandom(900)).path),
            label="blob_gc after a new blob",
        )
    baseline = time_call(mark_and_sweep, str(agent), repeat=3)
    assert set(changed.result.candidates) == baseline.result
    for path in added:
        os.remove(path)
    megabytes = (sessions.total_bytes + blobs.total_bytes) / 1e6
    label = f"{ours.result.blobs_on_disk:,} blobs, {megabytes:,.0f} MB of sessions"
    rows = [
        compare(f"gc dry run, blob folder unchanged ({label})", ours, baseline, min_ratio=10),
        compare("gc dry run after a new blob (folder listed again)", changed, baseline,
                min_ratio=10),
    ]  # fmt: skip
    print_table(rows, title="Blob GC (baseline: mark-and-sweep over all JSONL)")


if __name__ == "__main__":
    main()
