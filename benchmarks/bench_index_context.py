"""The context of a very deep leaf from the index, against loading the file and building it.

    python benchmarks/bench_index_context.py [--depth 50000]

Target (issue 6): context() at most 1/5 of the time of load_session + build_session_context.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.corpus import cached_corpus, generate_deep_session
from benchmarks.harness import compare, print_table, time_call
from benchmarks.index_common import built_index
from xcsh_store.format.blobs import BlobStore
from xcsh_store.format.context import build_session_context
from xcsh_store.format.loader import load_session
from xcsh_store.format.versions import find_header_index
from xcsh_store.index import SessionIndex


def load_and_build(path: str, leaf: str, blobs: BlobStore):
    entries = load_session(path, blob_store=blobs).entries
    return build_session_context(entries[find_header_index(entries) + 1 :], leaf)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depth", type=int, default=50_000)
    options = parser.parse_args()
    corpus = cached_corpus(f"deep-{options.depth}", generate_deep_session, depth=options.depth)
    ((relative_path, leaf),) = corpus.deep_leaves.items()
    path = str(Path(corpus.agent_dir) / relative_path)
    db_path = built_index(corpus, f"deep-{options.depth}")
    blobs = BlobStore(str(Path(corpus.agent_dir) / "blobs"))
    with SessionIndex.open(corpus.agent_dir, db_path=db_path, read_only=True) as index:
        session = index.find_session(path)
        ours = time_call(index.context, session, leaf, repeat=5)
    baseline = time_call(load_and_build, path, leaf, blobs, repeat=5)
    assert ours.result == baseline.result, "the index context differs from the loaded one"
    depth = len(corpus.files) and corpus.files[0].leaf_depth
    rows = [
        compare(f"context of a leaf {depth:,} entries deep "
                f"({corpus.total_bytes / 1e6:,.0f} MB file)", ours, baseline, min_ratio=5),
    ]  # fmt: skip
    print_table(rows, title="Context of a deep leaf (baseline: load the file, build in memory)")


if __name__ == "__main__":
    main()
