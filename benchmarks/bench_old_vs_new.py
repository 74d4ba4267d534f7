"""An older release and the current tree side by side, on the same corpus, in the same run.

    python benchmarks/bench_old_vs_new.py [REF] [--size 1GB] [--sessions 2000]
        [--workers 1,2] [--repeat 5]

``REF`` (default ``3430260``, the last commit before issue 16) is extracted with ``git
archive`` into a temporary folder (removed afterwards; no worktree is left behind), and every
step of the cost curve (benchmarks/index_steps.py: full sync, index size, no-change sync,
one-append sync, list_sessions, search p50/p95, context of the deepest leaf) runs once with
that code (``PYTHONPATH`` at the extracted tree) and once with this checkout's, each in a
fresh process, the two taking turns. Each tree builds its own index from a writable copy of
the same cached corpus. Search queries are chosen from the current tree's index and asked of
both. ``--workers 1,2`` adds full syncs with that many workers, "n/a" for a tree whose
``SessionIndex.sync`` has no such option.

Ratios are how many times better the current tree is (old / new for times and sizes, new / old
for MB/s). Targets
(issue 16) apply to the current tree on the 1 GB corpus. Figures from a busy 2-core machine
are indicative only.
"""

from __future__ import annotations

import argparse
import io
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness import Row, compare, format_seconds, print_table
from benchmarks.index_common import WORK_DIR, agent_corpus
from benchmarks.index_compare import ROOT, Subject, measure, remove_subject_files, subject

DEFAULT_REF = "3430260"


def git(*arguments: str) -> bytes:
    return subprocess.run(["git", "-C", ROOT, *arguments], check=True, capture_output=True).stdout


def extract(ref: str, folder: str) -> str:
    """The tree of ``ref`` in ``folder``; its full commit hash."""
    commit = git("rev-parse", "--verify", f"{ref}^{{commit}}").decode().strip()
    with tarfile.open(fileobj=io.BytesIO(git("archive", "--format=tar", commit))) as archive:
        # The "data" filter (Python 3.11.4+) refuses links and paths that leave the folder.
        if hasattr(tarfile, "data_filter"):
            archive.extractall(folder, filter="data")
        else:
            archive.extractall(folder)
    return commit


def current_label() -> str:
    head = git("rev-parse", "--short", "HEAD").decode().strip()
    dirty = git("status", "--porcelain", "--untracked-files=no").strip()
    return f"current tree ({head}{' + changes' if dirty else ''})"


def rows(old: Subject, new: Subject, workers: tuple[int, ...]) -> list[Row | list[str]]:
    """One row per figure: the current tree, the old one, how many times better, the target."""
    one_gb = 0.9e9 <= new.figures["corpus_bytes"] <= 1.1e9

    def target(**limit: Any) -> dict[str, Any]:
        return limit if one_gb else {}

    o, n = old.figures, new.figures
    table: list[Row | list[str]] = [
        compare("full sync (default workers)", n["sync"]["seconds"], o["sync"]["seconds"]),
        compare("full sync throughput", n["sync"]["mb_s"], o["sync"]["mb_s"], unit="MB/s",
                higher_is_better=True, **target(limit=50)),
        compare("full sync peak RSS (main process)", n["sync"]["peak_rss"],
                o["sync"]["peak_rss"], unit="B", **target(limit=300e6)),
    ]  # fmt: skip
    for count in workers:
        runs = [figures["sync_workers"][str(count)] for figures in (n, o)]
        label = f"full sync, {count} worker{'s' * (count > 1)}"
        if all("seconds" in run for run in runs):
            table.append(compare(label, runs[0]["seconds"], runs[1]["seconds"]))
        else:
            cells = [format_seconds(run["seconds"]) if "seconds" in run else "n/a" for run in runs]
            table.append([label, *cells, "–", "–"])
    table += [
        compare("index.db size", n["size"]["bytes"], o["size"]["bytes"], unit="B"),
        compare("index.db / session bytes", n["size"]["ratio"], o["size"]["ratio"], unit="×",
                **target(limit=0.40)),
        compare("no-change sync (open + sync)", n["nochange"], o["nochange"]),
        compare("one-append sync (open + sync)", n["append"]["median"], o["append"]["median"]),
        compare("  bytes read by it", n["append"]["bytes_read"], o["append"]["bytes_read"],
                unit="B"),
        compare(f"list_sessions ({n['list']['sessions']:,} sessions)", n["list"]["median"],
                o["list"]["median"]),
        compare("  first call of the process", n["list"]["first"], o["list"]["first"]),
    ]  # fmt: skip
    limits = {("middling", "p50"): 0.002, ("middling", "p95"): 0.010, ("stop", "p95"): 0.020}
    for kind in ("rare", "middling", "stop"):
        for quantile in ("p50", "p95"):
            limit = limits.get((kind, quantile))
            table.append(
                compare(
                    f"search {kind} ({n['search'][kind]['queries']} queries) {quantile}",
                    n["search"][kind][quantile],
                    o["search"][kind][quantile],
                    **(target(limit=limit) if limit else {}),
                )
            )
    table += [
        compare(f"context of the deepest leaf ({n['context']['depth']:,} deep)",
                n["context"]["median"], o["context"]["median"]),
        compare("  first call of the process", n["context"]["first"], o["context"]["first"]),
    ]  # fmt: skip
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("ref", nargs="?", default=DEFAULT_REF, help="the old code's git ref")
    parser.add_argument("--size", default="1GB")
    parser.add_argument("--sessions", type=int, default=2000)
    parser.add_argument("--workers", default="", help="extra full syncs, e.g. 1,2")
    parser.add_argument("--repeat", type=int, default=5, help="no-change and append syncs")
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds of the queries")
    options = parser.parse_args()
    workers = tuple(int(count) for count in options.workers.split(",") if count)
    manifest = agent_corpus(options.size, options.sessions)
    work = WORK_DIR / "old-vs-new"
    with tempfile.TemporaryDirectory(prefix="xcsh-old-") as folder:
        commit = extract(options.ref, folder)
        old = subject(f"{options.ref} ({commit[:7]})", folder, manifest, work / "old")
        new = subject(current_label(), ROOT, manifest, work / "new")
        try:
            # The current tree first: the queries come from its index.
            measure(
                [new, old], manifest, repeat=options.repeat, rounds=options.rounds,
                workers=workers,
            )  # fmt: skip
        finally:
            remove_subject_files(old)
            remove_subject_files(new)
    new.figures["corpus_bytes"] = manifest.total_bytes
    headers = ["step", f"new: {new.label}", f"old: {old.label}", "new is × better", "target"]
    print_table(
        rows(old, new, workers),
        headers,
        title=f"Old vs new on {manifest.total_bytes / 1e9:.2f} GB ({manifest.sessions:,}"
        f" sessions, {manifest.entries:,} entries)",
    )


if __name__ == "__main__":
    main()
