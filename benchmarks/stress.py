"""The reliability suite run far longer: kills, concurrency, fuzzing and hostile input.

    python benchmarks/stress.py --kills 1400 --concurrency-seconds 180 --fuzz-scale 40

* kill points (tests/kill_points.py and tests/crash_child.py): a child process SIGKILLed at a
  random moment of appends, rewrite_entries, set_session_name, move_to, fork, a sync, a sync
  with worker processes (``sync-writer``: the child, the writer, killed; ``sync-worker``: one
  of its workers killed, then the child) and a blob GC, each kill checked (every file loads,
  old or new content, every flushed entry there, no blob partial or lost, the session takes
  appends again, no worker outlives its writer), with the litter and index checks of the CI
  tests after every batch;
* concurrency (tests/workers.py): SessionManager writers, a history writer, a sync loop and a
  GC loop at once, then every acknowledged entry, prompt and blob checked;
* fuzzing: every property test of the suite with its example count multiplied;
* hostile input: tests/test_reliability_hostile.py and the URL traversal tests;
* user chaos (benchmarks/user_chaos.py, alone with ``--only chaos``): while a sync loop and a
  ``gc --apply --grace 0`` loop run, processes move sessions between project folders, rename
  project folders, break and restore symlinked ones, append in split writes and rewrite files;
  then every blob referenced by any session file must still exist.

Any loss fails the run with the check that caught it; the summary table is printed at the end.
"""

from __future__ import annotations

import argparse
import ast
import functools
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TESTS = REPO / "tests"
sys.path.insert(0, str(TESTS))
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from crash_child import kill_and_check
from kill_points import (
    INDEX_POINTS,
    MANAGER_POINTS,
    check_continues_after_kill,
    check_index_kill,
    check_litter_is_cleaned,
    check_manager_kill,
    kill_once,
    prepare_index_corpus,
)
from store_checks import assert_index_matches_files
from user_chaos import run_chaos
from workers import check_concurrent_run, run_concurrently

ALL_POINTS = ("append", *MANAGER_POINTS, *INDEX_POINTS)
# Kills between two rounds of the expensive checks (litter clean-up, index verify), after
# which the run's folders are removed so that every batch costs the same.
BATCH = 25
HOSTILE_TESTS = [
    "tests/test_reliability_hostile.py",
    "tests/test_urls.py::test_no_url_reads_outside_the_folder",
    "tests/test_urls.py::test_agent_ids_that_are_paths_are_refused",
]


@dataclass
class KillTally:
    kills: int = 0
    during_operation: int = 0  # the child had begun an operation it had not finished
    entries_checked: int = 0
    litter_cleaned: int = 0


@dataclass
class Summary:
    kills: dict[str, KillTally] = field(default_factory=dict)
    concurrency: str = "not run"
    fuzz_tests: int = 0
    fuzz_examples: int = 0
    hostile: int = 0
    chaos: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0


def _say(text: str) -> None:
    print(text, flush=True)


# --------------------------------------------------------------------------------------------
# Kills


def _fresh(work: Path, name: str) -> Path:
    agent = work / name
    shutil.rmtree(agent, ignore_errors=True)
    agent.mkdir(parents=True)
    os.environ["XCSH_AGENT_DIR"] = str(agent)
    return agent


def _kill_appends(agent: Path, seed: int) -> tuple[int, bool]:
    """The existing append kill (tests/crash_child.py), then the session must take appends."""
    folder = agent / "sessions" / f"--append-{seed}--"
    result = kill_and_check(folder, seed)
    (path,) = folder.glob("*.jsonl")
    check_continues_after_kill(str(path))
    return result.on_disk, result.flushed > 2


def _kill_manager(point: str, agent: Path, seed: int) -> tuple[int, bool]:
    reports = kill_once(point, agent, seed)
    newest = check_manager_kill(agent, reports)
    check_continues_after_kill(str(newest))
    return len(reports.appended), reports.interrupted


def run_kills(point: str, kills: int, work: Path, tally: KillTally) -> None:
    seeds = iter(range(1_000_000))
    agent = _fresh(work, point)
    if point in INDEX_POINTS:
        prepare_index_corpus(agent)
    while tally.kills < kills:
        batch = [next(seeds) for _ in range(min(BATCH, kills - tally.kills))]
        if point in INDEX_POINTS:
            for seed in batch:
                reports = kill_once(point, agent, seed)
                check_index_kill(agent, reports)
                tally.during_operation += reports.interrupted
        else:
            work_one: Callable[[int], tuple[int, bool]] = (
                functools.partial(_kill_appends, agent)
                if point == "append"
                else functools.partial(_kill_manager, point, agent)
            )
            with ThreadPoolExecutor(max_workers=2) as pool:
                for entries, during in pool.map(work_one, batch):
                    tally.entries_checked += entries
                    tally.during_operation += during
        tally.kills += len(batch)
        tally.litter_cleaned += check_litter_is_cleaned(agent)
        assert_index_matches_files(agent).close()
        if point not in INDEX_POINTS:
            agent = _fresh(work, point)
        _say(f"  {point}: {tally.kills}/{kills} kills")


# --------------------------------------------------------------------------------------------
# Fuzzing and hostile input, through pytest


def property_tests() -> list[str]:
    """Node ids of every hypothesis test in tests/ (decorated with @given)."""
    found = []
    for path in sorted(TESTS.glob("test_*.py")):
        tree = ast.parse(path.read_text())
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and any(
                isinstance(decorator, ast.Call) and getattr(decorator.func, "id", "") == "given"
                for decorator in node.decorator_list
            ):
                found.append(f"tests/{path.name}::{node.name}")
    return found


def _pytest(arguments: list[str], environment: dict[str, str]) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *arguments],
        cwd=REPO,
        env={**os.environ, **environment},
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        raise AssertionError(f"pytest {' '.join(arguments)} failed:\n{result.stdout[-6000:]}")
    return result.stdout


def run_fuzz(scale: float, deselect: list[str]) -> tuple[int, int]:
    """Every property test (but ``deselect``) with ``scale`` times its CI examples, new ones
    on every run (the stress profile, tests/fuzzing.py); returns (tests, examples run)."""
    tests = [test for test in property_tests() if test not in deselect]
    environment = {"HYPOTHESIS_PROFILE": "stress", "XCSH_FUZZ_SCALE": str(scale)}
    output = _pytest([*tests, "--hypothesis-show-statistics"], environment)
    examples = sum(int(count) for count in re.findall(r"- (\d+) passing", output))
    return len(tests), examples


def run_hostile() -> int:
    output = _pytest(HOSTILE_TESTS, {})
    return int(re.search(r"(\d+) passed", output).group(1))  # type: ignore[union-attr]


# --------------------------------------------------------------------------------------------
# The run and its summary


def table(summary: Summary, arguments: argparse.Namespace) -> str:
    kills = sum(tally.kills for tally in summary.kills.values())
    during = sum(tally.during_operation for tally in summary.kills.values())
    rows = [("what", "tried", "lost or failed")]
    for point, tally in summary.kills.items():
        rows.append(
            (f"kill point `{point}`", f"{tally.kills:,} kills ({tally.during_operation:,} "
             "inside the operation)", "0")
        )  # fmt: skip
    rows += [
        ("kills in total", f"{kills:,} at {len(summary.kills)} kill points ({during:,} inside)",
         "0 acknowledged entries, 0 referenced blobs"),
        ("concurrent operations", summary.concurrency, "0 entries, 0 prompts, 0 blobs"),
        ("fuzz examples", f"{summary.fuzz_examples:,} in {summary.fuzz_tests} property tests "
         f"(x{arguments.fuzz_scale:g} their CI counts)", "0 failures"),
        ("hostile inputs", f"{summary.hostile} tests", "0 failures"),
    ]  # fmt: skip
    if summary.chaos:
        rows.append(chaos_row(summary.chaos, arguments.chaos_seconds))
    widths = [max(len(row[column]) for row in rows) for column in range(3)]
    lines = ["| " + " | ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
             + " |" for row in rows]  # fmt: skip
    lines.insert(1, "|" + "|".join("-" * (width + 2) for width in widths) + "|")
    return "\n".join(lines)


def chaos_row(chaos: dict[str, int], seconds: float) -> tuple[str, str, str]:
    return (
        "user chaos",
        f"{chaos['operations']:,} operations in {seconds:g} s: {chaos['moves']:,} moves, "
        f"{chaos['renames']:,} folder renames, {chaos['symlink_flips']:,} symlink breaks, "
        f"{chaos['appends']:,} split appends, {chaos['rewrites']:,} rewrites, "
        f"{chaos['syncs']:,} syncs, {chaos['gc_runs']:,} `gc --apply --grace 0` "
        f"({chaos['gc_applied']:,} deleted, {chaos['gc_refused_moving']:,} refused: files "
        f"moving, {chaos['gc_refused_unreachable']:,} refused: a folder out of reach), "
        f"{chaos['blobs_deleted']:,} blobs deleted, {chaos['refs_checked']:,} refs checked",
        f"{chaos['referenced_lost']} referenced blobs",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--kills", type=int, default=1400, help="kills over all kill points")
    parser.add_argument("--concurrency-seconds", type=float, default=120.0)
    parser.add_argument("--fuzz-scale", type=float, default=40.0, help="times the CI examples")
    parser.add_argument("--work-dir", type=Path, help="where agent dirs go (default: a temp dir)")
    parser.add_argument("--chaos-seconds", type=float, default=600.0)
    parser.add_argument(
        "--only", choices=["kills", "concurrency", "fuzz", "hostile", "chaos"], nargs="*"
    )
    parser.add_argument(
        "--deselect", action="append", default=[], metavar="NODE_ID",
        help="leave out a property test that fails for a known reason (say why in the README)",
    )  # fmt: skip
    arguments = parser.parse_args()
    only = set(arguments.only or ["kills", "concurrency", "fuzz", "hostile", "chaos"])
    work = arguments.work_dir or Path(tempfile.mkdtemp(prefix="xcsh-stress-"))
    os.environ.setdefault("XCSH_TERMINAL_ID", "stress")
    summary = Summary()
    started = time.perf_counter()
    if "kills" in only:
        per_point = -(-arguments.kills // len(ALL_POINTS))
        for point in ALL_POINTS:
            _say(f"kill point {point}: {per_point} kills")
            summary.kills[point] = KillTally()
            run_kills(point, per_point, work, summary.kills[point])
    if "concurrency" in only:
        _say(f"concurrency: {arguments.concurrency_seconds:g} s")
        agent = _fresh(work, "concurrency")
        scratch = work / "concurrency-scratch"
        scratch.mkdir(exist_ok=True)
        run = run_concurrently(agent, scratch, arguments.concurrency_seconds)
        check_concurrent_run(agent, run)
        summary.concurrency = (
            f"{run.operations:,} in {arguments.concurrency_seconds:g} s ({run.entries:,} "
            f"appends by 3 SessionManager processes, {run.prompts:,} prompts, {run.syncs:,} "
            f"syncs, {run.collections:,} GCs deleting {run.deleted_blobs:,} blobs)"
        )
    if "fuzz" in only:
        _say(f"fuzzing: x{arguments.fuzz_scale:g}")
        summary.fuzz_tests, summary.fuzz_examples = run_fuzz(
            arguments.fuzz_scale, arguments.deselect
        )
    if "hostile" in only:
        _say("hostile input")
        summary.hostile = run_hostile()
    if "chaos" in only:
        _say(f"user chaos: {arguments.chaos_seconds:g} s")
        agent = _fresh(work, "chaos")
        summary.chaos = run_chaos(agent, work / "chaos-disks", arguments.chaos_seconds)
        _say(f"  {summary.chaos}")
    summary.seconds = time.perf_counter() - started
    if arguments.work_dir is None:
        shutil.rmtree(work, ignore_errors=True)
    _say("")
    _say(table(summary, arguments))
    _say(f"\nNothing was lost. {summary.seconds / 60:.1f} minutes; reproduce with:")
    deselected = "".join(f" --deselect {node}" for node in arguments.deselect)
    _say(
        f"python benchmarks/stress.py --kills {arguments.kills} --concurrency-seconds "
        f"{arguments.concurrency_seconds:g} --fuzz-scale {arguments.fuzz_scale:g}"
        f" --chaos-seconds {arguments.chaos_seconds:g}{deselected}"
    )


if __name__ == "__main__":
    main()
