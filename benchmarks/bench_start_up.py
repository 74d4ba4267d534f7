"""Start-up and the read verbs' costs, an older tree and this one side by side (issue 40,
items 2 and 3), beside ccusage:

    python -m benchmarks.bench_start_up [REF] [--size 100MB] [--rounds 5]
        [--cache ~/.cache/xcsh-store-bench/ccusage]

``REF`` (default ``24ec430``, the tree before issue 40's work) is extracted with ``git
archive`` into a temporary folder; each step runs once with that code (``PYTHONPATH`` at the
extracted tree) and once with this checkout's, each a fresh process, the two taking turns
(which goes first alternates by round). Each tree keeps its own index of the same Claude Code
home (benchmarks/claude_tree.py, ``--size``), synced before the rounds. Steps:

* ``--version``: CPU seconds (user + sys) against ``python -c pass``, and the modules loaded
  beyond those of a bare interpreter;
* ``usage --by day`` on an unchanged tree;
* ``usage --by day`` after one line with usage was appended to the largest session (the same
  line for both trees, of a model the dataset prices: the sync before the answer reads and
  prices it), and ccusage 20.0.24
  ``claude daily --offline --json`` on the same tree, when ccusage is installed;
* ``ls -n 20`` on an unchanged tree, and a script that stats every file the index knows and
  reads 20 sessions from it (the floor the issue compares ``ls`` with).

Medians over the rounds; ratios old / new (more is better for the new tree) and new / ccusage.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_first_usage import largest_session
from benchmarks.bench_old_vs_new import extract
from benchmarks.claude_tree import claude_home, tree_bytes
from benchmarks.compare_ccusage import install_ccusage
from benchmarks.harness import print_table
from benchmarks.index_common import WORK_DIR

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_REF = "24ec430"
_COUNT = (
    "import sys\nbefore = len(sys.modules)\nfrom xcsh_store.cli import cli\n"
    "try:\n    cli(['--version'])\nexcept SystemExit:\n    pass\n"
    "print(len(sys.modules) - before)"
)


# The floor of `ls -n 20` on an unchanged tree (issue 40): stat every file the index knows,
# read 20 sessions.
_STAT_AND_READ = """
import os, sys, apsw
connection = apsw.Connection(sys.argv[1], flags=apsw.SQLITE_OPEN_READONLY)
for (path,) in connection.execute("SELECT path FROM files"):
    try:
        os.stat(path)
    except OSError:
        pass
rows = list(connection.execute("SELECT * FROM sessions ORDER BY modified_at DESC LIMIT 20"))
"""


def run(argv: list[str], environment: dict[str, str]) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds of the process and its children, stdout)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    # Never in a tree: `python -m`/`-c` put the working folder first on sys.path.
    done = subprocess.run(
        argv, env=environment, capture_output=True, text=True, check=True, cwd=WORK_DIR
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu, done.stdout


def append_entry(path: Path, serial: int) -> None:
    """One more assistant line, a copy of the file's last one with usage under new ids, of a
    model the genai-prices dataset prices (the fixtures' largest session is of Claude Sonnet 4,
    which the shipped corrections price: pricing it never needed the dataset)."""
    lines = path.read_bytes().splitlines()
    last = next(json.loads(line) for line in reversed(lines) if b'"usage"' in line)
    last["uuid"] = f"00000000-0000-4000-8000-{serial:012d}"
    last["message"]["id"] = f"msg_appended_{serial}"
    last["message"]["model"] = "claude-opus-4-5-20251101"
    last["requestId"] = f"req_appended_{serial}"
    with path.open("ab") as stream:
        stream.write(json.dumps(last, separators=(",", ":")).encode() + b"\n")


def environment_of(tree: Path, home: Path) -> dict[str, str]:
    environment = dict(os.environ)
    environment.pop("PYTHONDONTWRITEBYTECODE", None)
    return {
        **environment,
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "XDG_CONFIG_HOME": str(WORK_DIR / "start-up-config"),
        "XDG_DATA_HOME": str(WORK_DIR / "start-up-data"),
        "CODEX_HOME": str(WORK_DIR / "no-codex"),
        "PYTHONPATH": str(tree),
    }


def measure(ref: str, size: str, rounds: int, cache: Path | None) -> dict[str, Any]:
    binary = install_ccusage(cache) if cache is not None else None
    WORK_DIR.mkdir(parents=True, exist_ok=True)
    source = claude_home(size)
    home = WORK_DIR / f"start-up-home-{size.lower()}"
    shutil.rmtree(home, ignore_errors=True)
    shutil.copytree(source, home)
    folder = Path(tempfile.mkdtemp(prefix="xcsh-start-up-"))
    trees = {"old": folder / "old", "new": ROOT}
    commit = extract(ref, str(trees["old"]))
    times: dict[str, list[float]] = {}
    modules: dict[str, int] = {}
    try:
        for name, tree in trees.items():
            subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "xcsh_store")],
                           check=True)  # fmt: skip
            environment = environment_of(tree, home)
            agent_dir = WORK_DIR / f"start-up-agent-{name}"
            shutil.rmtree(agent_dir, ignore_errors=True)
            xcsh = [sys.executable, "-m", "xcsh_store", "--agent-dir", str(agent_dir)]
            run([*xcsh, "sync", "--init"], environment)
            run([*xcsh, "usage"], environment)  # the price table built, where there is one
            modules[name] = int(run([sys.executable, "-c", _COUNT], environment)[2].split()[-1])
        for number in range(rounds):
            order = ["old", "new"] if number % 2 == 0 else ["new", "old"]

            def step(label: str, argv: list[str], environment: dict[str, str]) -> None:
                wall, cpu, _ = run(argv, environment)
                times.setdefault(f"{label} wall", []).append(wall)
                times.setdefault(f"{label} cpu", []).append(cpu)

            step("python -c pass", [sys.executable, "-c", "pass"], environment_of(ROOT, home))
            for name in order:
                environment = environment_of(trees[name], home)
                agent_dir = WORK_DIR / f"start-up-agent-{name}"
                xcsh = [sys.executable, "-m", "xcsh_store", "--agent-dir", str(agent_dir)]
                step(f"{name} --version", [*xcsh, "--version"], environment)
                step(f"{name} usage", [*xcsh, "usage", "--by", "day"], environment)
                step(f"{name} ls -n 20", [*xcsh, "ls", "-n", "20"], environment)
            index_db = str(WORK_DIR / "start-up-agent-new" / "index.db")
            step("stat and read 20", [sys.executable, "-c", _STAT_AND_READ, index_db], environment)
            append_entry(largest_session(home), 10_000 + number)
            for name in order:
                environment = environment_of(trees[name], home)
                agent_dir = WORK_DIR / f"start-up-agent-{name}"
                xcsh = [sys.executable, "-m", "xcsh_store", "--agent-dir", str(agent_dir)]
                step(f"{name} usage after append", [*xcsh, "usage", "--by", "day"], environment)
            if binary is not None:
                ccusage = [str(binary), "claude", "daily", "--offline", "--json"]
                step("ccusage daily", ccusage, environment_of(ROOT, home))
        totals = {}
        for name in trees:
            xcsh = [sys.executable, "-m", "xcsh_store", "--agent-dir",
                    str(WORK_DIR / f"start-up-agent-{name}"), "usage", "--json"]  # fmt: skip
            report = json.loads(run(xcsh, environment_of(trees[name], home))[2])
            totals[name] = report["total"]
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        shutil.rmtree(home, ignore_errors=True)
    return {
        "commit": commit,
        "bytes": tree_bytes(source),
        "modules": modules,
        "median": {label: statistics.median(values) for label, values in times.items()},
        "times": times,
        "totals": totals,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("ref", nargs="?", default=DEFAULT_REF)
    parser.add_argument("--size", default="100MB")
    parser.add_argument("--rounds", type=int, default=5)
    default_cache = Path.home() / ".cache" / "xcsh-store-bench" / "ccusage"
    parser.add_argument("--cache", type=Path, default=default_cache)
    parser.add_argument("--no-ccusage", action="store_true")
    options = parser.parse_args()
    load = os.getloadavg()
    figures = measure(
        options.ref, options.size, options.rounds, None if options.no_ccusage else options.cache
    )
    median = figures["median"]
    bare = median["python -c pass cpu"]
    rows = []
    for step in ("--version", "usage", "ls -n 20", "usage after append"):
        for kind in ("cpu", "wall"):
            old, new = median[f"old {step} {kind}"], median[f"new {step} {kind}"]
            rows.append(
                [f"{step} ({kind})", f"{old:.3f} s", f"{new:.3f} s", f"{old / new:.2f}×",
                 f"{new / bare:.1f}× python -c pass" if kind == "cpu" else ""]
            )  # fmt: skip
    for kind in ("cpu", "wall"):
        new, floor = median[f"new ls -n 20 {kind}"], median[f"stat and read 20 {kind}"]
        rows.append([f"ls -n 20 / stat every file, read 20 rows ({kind})", f"{floor:.3f} s",
                     f"{new:.3f} s", "", f"{new / floor:.2f}× the script"])  # fmt: skip
    ccusage = "ccusage daily cpu" in median
    if ccusage:
        for kind in ("cpu", "wall"):
            new, theirs = median[f"new usage after append {kind}"], median[f"ccusage daily {kind}"]
            rows.append([f"usage after append / ccusage ({kind})", f"{theirs:.3f} s (ccusage)",
                         f"{new:.3f} s", "", f"{new / theirs:.2f}× ccusage"])  # fmt: skip
    print_table(
        rows,
        ["step", figures["commit"][:7], "this tree", "old / new", "against"],
        title=(
            f"Start-up and reads, {figures['bytes'] / 1e6:.0f} MB Claude Code home, median of"
            f" {options.rounds} (load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} at the start)"
        ),
    )
    print(f"\n--version modules beyond a bare interpreter: {figures['modules']}")
    print(f"python -c pass: {bare:.3f} s CPU")
    print("\nAll times (s):")
    for label, values in figures["times"].items():
        print(f"  {label}: {', '.join(f'{value:.3f}' for value in values)}")
    print("\nTotals (usage --json), old and new:")
    for name, total in figures["totals"].items():
        print(f"  {name}: {json.dumps(total, sort_keys=True)}")
    print(f"load at the end: {' '.join(f'{value:.2f}' for value in os.getloadavg())}")


if __name__ == "__main__":
    main()
