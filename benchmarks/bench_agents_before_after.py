"""A full sync of generated Claude Code and Codex corpora by this checkout and by an earlier
commit, in turns on the same files: what a change of the reader path costs the JSONL agents.

    python -m benchmarks.bench_agents_before_after --base REV [--size 150MB] [--sessions 300]
        [--rounds 5]

* the corpora: bench_agents.agent_corpus (written once under $XCSH_BENCH_DATA, reused);
* the earlier commit: ``git archive REV`` into the work folder, run with its own package on
  PYTHONPATH (this checkout's interpreter and libraries);
* each round syncs each corpus once with each tree, in one process (``workers=1``), into a new
  index; the table gives the median seconds of each side and after / before (rounds in turns,
  so that the load of a shared machine falls on both alike).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_agents import agent_corpus
from benchmarks.corpus import parse_size
from benchmarks.harness import compare, print_table
from benchmarks.index_common import WORK_DIR

ROOT = Path(__file__).resolve().parents[1]
# One sync in a fresh process: seconds, on stdout.
_SYNC = """
import os, sys, tempfile, time
from xcsh_store.index import SessionIndex
agent, corpus = sys.argv[1], sys.argv[2]
work = tempfile.mkdtemp(dir=sys.argv[3])
os.makedirs(os.path.join(work, "sessions"))
with SessionIndex.open(work) as index:
    index.add_root(os.path.join(corpus, "sessions"), agent)
    started = time.perf_counter()
    index.sync(workers=1)
    print(time.perf_counter() - started)
"""


def sync_seconds(tree: Path, agent: str, corpus: str) -> float:
    scratch = Path(tempfile.mkdtemp(dir=WORK_DIR))
    try:
        done = subprocess.run(
            # -P: the tree PYTHONPATH names, not the working directory's checkout.
            [sys.executable, "-P", "-c", _SYNC, agent, corpus, str(scratch)],
            env={**os.environ, "PYTHONPATH": str(tree)},
            capture_output=True,
            text=True,
            check=True,
        )
    finally:
        shutil.rmtree(scratch)
    return float(done.stdout.split()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="the earlier commit")
    parser.add_argument("--size", default="150MB", help="size of each agent's corpus")
    parser.add_argument("--sessions", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args()
    WORK_DIR.mkdir(parents=True, exist_ok=True)
    base = WORK_DIR / f"tree-{options.base}"
    if not base.is_dir():
        base.mkdir()
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", options.base], capture_output=True, check=True
        )
        subprocess.run(["tar", "-x", "-C", str(base)], input=archive.stdout, check=True)
    size = parse_size(options.size)
    rows = []
    for agent in ("claude", "codex"):
        corpus, total = agent_corpus(agent, size, options.sessions)
        seconds: dict[str, list[float]] = {"before": [], "after": []}
        for _ in range(options.rounds):
            seconds["before"].append(sync_seconds(base, agent, corpus))
            seconds["after"].append(sync_seconds(ROOT, agent, corpus))
        before, after = (statistics.median(seconds[side]) for side in ("before", "after"))
        label = f"{agent}: full sync of {total / 1e6:,.0f} MB, 1 worker, median s"
        rows.append(compare(label, after, before, unit="s"))
    print_table(rows, title=f"This checkout (after) against {options.base} (before)")


if __name__ == "__main__":
    main()
