"""Blob GC from reference counts, against mark-and-sweep by scanning every JSONL file.

    python benchmarks/bench_index_gc.py [--blobs 100000] [--size 1GB] [--sessions 2000]

The agent dir holds the sessions of the standard corpus (``--size``) plus a blob store of
``--blobs`` images with the sessions that reference them (project folders linked in, blobs
hard-linked into a folder of its own, so that new blobs never land in a cached corpus). Both
sides find the blob files no session references (a dry run, no grace period). Targets
(issue 16): a gc dry run at least 10x faster than mark-and-sweep, right after a new blob too.

Rows: a new process's gc (open, gc, close) while the blob folder is as it was when last listed
(its signature proves it), and right after a new blob (the folder listed again: a process of
its own cannot know what changed otherwise); then a process that collects again and again (the
same SessionIndex: it watches the blob folder from its second collection on, and looks at the
names that changed), unchanged and right after a new blob. New blobs are written by another
BlobStore, as an agent writes them.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.corpus import cached_corpus, generate_blob_store
from benchmarks.harness import compare, print_table, time_call
from benchmarks.index_common import WORK_DIR, agent_corpus, fresh_db_path, full_sync
from xcsh_store.format.blobs import BlobStore
from xcsh_store.index import GcReport, SessionIndex
from xcsh_store.index.upkeep.blob_folder import RACY_SECONDS

REF = re.compile(rb"blob:sha256:([0-9a-f]{64})")
EVERYTHING = timedelta(0)  # no grace period, so both sides answer the same question


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
    """An agent dir whose project folders are links into cached corpora, and whose blob
    folder holds hard links to the last corpus's blobs (copies across file systems)."""
    agent = WORK_DIR / "gc-agent"
    shutil.rmtree(agent, ignore_errors=True)
    (agent / "sessions").mkdir(parents=True)
    for number, source in enumerate(sources):
        for project in (source / "sessions").iterdir():
            (agent / "sessions" / f"{number}{project.name}").symlink_to(project)
    shutil.copytree(sources[-1] / "blobs", agent / "blobs", copy_function=_link_or_copy)
    return agent


def _link_or_copy(source: str, target: str) -> None:
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def gc_in_a_new_process(agent: str, db_path: str) -> GcReport:
    """What `xcsh-store gc` does once its interpreter is up: open, collect, close."""
    with SessionIndex.open(agent, db_path=db_path) as index:
        return index.blob_gc(grace=EVERYTHING)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blobs", type=int, default=100_000)
    parser.add_argument("--size", default="1GB")
    parser.add_argument("--sessions", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=7)
    options = parser.parse_args()
    blobs = cached_corpus(f"blobs-{options.blobs}", generate_blob_store, count=options.blobs)
    sessions = agent_corpus(options.size, options.sessions)
    agent = combined_agent_dir([Path(sessions.agent_dir), Path(blobs.agent_dir)])
    db_path = fresh_db_path(f"gc-{options.blobs}")
    full_sync(str(agent), db_path)
    store = BlobStore(str(agent / "blobs"))

    def new_blob() -> None:
        store.put(os.urandom(900))

    # The folder was just made: wait until its signature can be trusted (blob_folder.py), as
    # that of a blob folder nobody wrote to in the last seconds can.
    time.sleep(max(0.0, os.stat(agent / "blobs").st_ctime + RACY_SECONDS - time.time()))
    repeat = options.repeat
    unchanged_new = time_call(
        gc_in_a_new_process, str(agent), db_path, repeat=repeat, label="new process, unchanged"
    )
    after_new = time_call(
        gc_in_a_new_process, str(agent), db_path, repeat=repeat, setup=new_blob,
        label="new process, after a new blob",
    )  # fmt: skip
    with SessionIndex.open(str(agent), db_path=db_path) as index:
        # The first two collections of an index list the folder; the second starts watching it.
        index.blob_gc(grace=EVERYTHING)
        kept = time_call(index.blob_gc, grace=EVERYTHING, repeat=repeat, label="again, unchanged")
        kept_new = time_call(
            index.blob_gc, grace=EVERYTHING, repeat=repeat, setup=new_blob,
            label="again, after a new blob",
        )  # fmt: skip
    baseline = time_call(mark_and_sweep, str(agent), repeat=3)
    # Both ways, the same answer as mark-and-sweep on the folder as it is now.
    assert set(kept_new.result.candidates) == baseline.result
    assert set(gc_in_a_new_process(str(agent), db_path).candidates) == baseline.result
    megabytes = (sessions.total_bytes + blobs.total_bytes) / 1e6
    label = f"{kept.result.blobs_on_disk:,} blobs, {megabytes:,.0f} MB of sessions"
    rows = [
        compare(f"gc dry run, new process, folder unchanged ({label})", unchanged_new, baseline,
                min_ratio=10),
        compare("gc dry run, new process, right after a new blob (folder listed)", after_new,
                baseline, min_ratio=10),
        compare("gc dry run, same index again, folder unchanged", kept, baseline, min_ratio=10),
        compare("gc dry run, same index again, right after a new blob (changes only)",
                kept_new, baseline, min_ratio=10),
    ]  # fmt: skip
    print_table(rows, title="Blob GC (baseline: mark-and-sweep over all JSONL)")


if __name__ == "__main__":
    main()
