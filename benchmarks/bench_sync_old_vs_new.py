"""A full sync by an older build and by this checkout, taking turns on the same corpora: wall
time and CPU time (the syncing process and its workers), the ratios from the same run.

    python benchmarks/bench_sync_old_vs_new.py [REF or FOLDER] [--rounds 3]
        [--size 72MB] [--sessions 140] [--claude 326MB]

On the Claude tree each build then makes its index again from the archive alone (the tree's
sessions gone: an empty home) and verifies it, as on a new machine.

``REF`` (default ``main``) is extracted with ``git archive`` into a temporary folder (removed
afterwards); a FOLDER that holds ``xcsh_store`` is used as it is. Two corpora: the generated
agent dir (benchmarks/corpus.py) and a Claude Code home built from the fixtures
(benchmarks/claude_tree.py; ``--claude 0`` leaves it out). Every sync starts from no index (and,
for the Claude tree, no archive) in a fresh child process with the tree on ``PYTHONPATH``; the
two builds take turns, the order reversed every other round, so a machine that slows down for a
while slows both alike. Ratios are old / new (how many times faster this checkout is), per
round, and their median.
"""

from __future__ import annotations

import argparse
import compileall
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_old_vs_new import extract
from benchmarks.claude_tree import claude_home, tree_bytes
from benchmarks.index_common import WORK_DIR, agent_corpus
from benchmarks.index_compare import ROOT, warm_page_cache

# argv: the agent dir, the index, the step: "sync" (a full sync), "verify" (a sync, then
# verify: a home whose sessions are gone has its index made again from the archive first).
_CHILD = """
import sys
from xcsh_store.index import SessionIndex
with SessionIndex.open(sys.argv[1], db_path=sys.argv[2]) as index:
    index.sync()
    if sys.argv[3] == "verify":
        assert index.verify().clean
"""


def timed_sync(
    tree: str, agent_dir: Path, db_path: Path, home: Path, step: str = "sync"
) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child and its workers) of one full sync (``step``:
    see _CHILD)."""
    environment = {
        **os.environ,
        "PYTHONPATH": tree,
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "CODEX_HOME": str(WORK_DIR / "no-codex"),
    }
    environment.pop("PYTHONDONTWRITEBYTECODE", None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(
        # -P: not the working directory first on sys.path (run from the checkout, it would
        # put this tree before the one PYTHONPATH names).
        [sys.executable, "-P", "-c", _CHILD, str(agent_dir), str(db_path), step],
        env=environment,
        check=True,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def fresh(folder: Path, sessions: Path | None) -> tuple[Path, Path]:
    """An empty agent dir (with a copy of ``sessions`` when given) and a place for its index."""
    shutil.rmtree(folder, ignore_errors=True)
    agent_dir = folder / "agent"
    if sessions is not None:
        shutil.copytree(sessions, agent_dir / "sessions")
    agent_dir.mkdir(parents=True, exist_ok=True)
    (folder / "db").mkdir()
    return agent_dir, folder / "db" / "index.db"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", nargs="?", default="main")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--size", default="72MB")
    parser.add_argument("--sessions", type=int, default=140)
    parser.add_argument("--claude", default="326MB", help="0: no Claude tree")
    options = parser.parse_args()

    temporary = tempfile.mkdtemp(prefix="xcsh-sync-old-")
    try:
        if (Path(options.old) / "xcsh_store").is_dir():
            old_tree, old_label = str(Path(options.old).resolve()), options.old
        else:
            old_label = f"{options.old} ({extract(options.old, temporary)[:7]})"
            old_tree = temporary
        trees = {"old": old_tree, "new": ROOT}
        for tree in trees.values():
            compileall.compile_dir(str(Path(tree) / "xcsh_store"), quiet=1)

        corpora: list[tuple[str, Path | None, Path, float]] = []
        manifest = agent_corpus(options.size, options.sessions)
        warm_page_cache(manifest.agent_dir)
        no_home = WORK_DIR / "home"
        no_home.mkdir(parents=True, exist_ok=True)
        generated = Path(manifest.agent_dir) / "sessions"
        corpora.append((f"generated {options.size}", generated, no_home, manifest.total_bytes))
        if options.claude != "0":
            home = claude_home(options.claude)
            size = tree_bytes(home)
            for directory, _folders, names in os.walk(home):
                for name in names:
                    Path(directory, name).read_bytes()
            corpora.append((f"Claude tree {options.claude}", None, home, size))

        print(f"old: {old_label}\nnew: {ROOT}\nload average: {os.getloadavg()}")
        for label, sessions, home, size in corpora:
            results: dict[str, list[tuple[float, float]]] = {"old": [], "new": []}
            # The Claude tree is archived: its index made again from the archive alone (the
            # sessions gone from an empty home) and verified, by each build in its turn.
            adopted: dict[str, list[tuple[float, float]]] = {"old": [], "new": []}
            for number in range(options.rounds):
                order = ["old", "new"] if number % 2 == 0 else ["new", "old"]
                for name in order:
                    agent_dir, db_path = fresh(WORK_DIR / f"sync-old-vs-new-{name}", sessions)
                    results[name].append(timed_sync(trees[name], agent_dir, db_path, home))
                    if sessions is None:
                        for path in db_path.parent.glob("index.db*"):
                            path.unlink()
                        adopted[name].append(
                            timed_sync(trees[name], agent_dir, db_path, no_home, "verify")
                        )
            print(f"\n{label} ({size / 1e6:,.0f} MB), {options.rounds} rounds")
            _report(results)
            best = min(wall for wall, _cpu in results["new"])
            print(f"  new throughput: {size / 1e6 / best:.1f} MB/s (best wall)")
            if adopted["new"]:
                print("  the index made again from the archive, then verified:")
                _report(adopted)
        print(f"load average: {os.getloadavg()}")
    finally:
        shutil.rmtree(temporary, ignore_errors=True)
        for name in ("old", "new"):
            shutil.rmtree(WORK_DIR / f"sync-old-vs-new-{name}", ignore_errors=True)


def _report(results: dict[str, list[tuple[float, float]]]) -> None:
    """Each build's runs, and the ratios old / new of each round with their median."""
    for name in ("old", "new"):
        runs = results[name]
        walls = ", ".join(f"{wall:.2f}" for wall, _cpu in runs)
        cpus = ", ".join(f"{cpu:.2f}" for _wall, cpu in runs)
        print(f"  {name}: wall s {walls}; CPU s {cpus}")
    for index, what in ((0, "wall"), (1, "CPU")):
        ratios = [
            old[index] / new[index] for old, new in zip(results["old"], results["new"], strict=True)
        ]
        text = ", ".join(f"{ratio:.2f}" for ratio in ratios)
        print(f"  old/new {what}: {text} (median {statistics.median(ratios):.2f}×)")


if __name__ == "__main__":
    main()
