"""Fresh reads: the sync every read verb runs first, and the whole `xcsh-store ls -n 20` process.

    python -m benchmarks.bench_fresh_reads [--size 100MB] [--sessions 200] [--repeat 21]
        [--base main]

The agent dir is a copy of the generated corpus (``SIZE``, ``SESSIONS``), synced once. Processes
are run in rounds, one run of each command per round, so that a load that comes and goes
weighs on all of them alike; each is given as its median wall time and its median CPU time
(user + system, from ``wait4``: what the process itself spent, whatever else the machine was
doing), with the interpreter's own start (``python -c pass``) as the baseline:

* ``xcsh-store --version``, ``xcsh-store --no-sync ls -n 20`` (the index as it is) and
  ``xcsh-store ls -n 20`` (a sync first, of the unchanged tree: the 80 ms target, issue 28);
* ``xcsh-store usage --json`` right after one entry was appended to a session (the sync first
  reads the new line), against ``xcsh-store --no-sync usage --json``;
* with ``--base REF`` (default ``main``), the same ``ls -n 20`` and ``--version`` of that
  commit's code (extracted with ``git archive``, run with ``PYTHONPATH`` at it), which answers
  from the index as it is: what the current tree's start costs beside it, sync included.

Then, in this process: the refresh of an unchanged tree (what a read verb adds) against the
bare walk (``os.scandir`` + ``stat`` of every file), and the price sources' key a sync compares
(a few stats) against building the price table it stands for (TOML parsed, the dataset's
version asked of the installed packages).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_old_vs_new import extract
from benchmarks.harness import Row, compare, print_table, time_call
from benchmarks.index_common import WORK_DIR, agent_corpus
from xcsh_store.agents.prices import pricing
from xcsh_store.index import SessionIndex

LS_LIMIT = 0.080


def copied_agent_dir(corpus_dir: str) -> Path:
    """A writable copy of the corpus, synced once (appends go to its files)."""
    agent = WORK_DIR / "fresh-reads-agent"
    shutil.rmtree(agent, ignore_errors=True)
    shutil.copytree(Path(corpus_dir) / "sessions", agent / "sessions")
    with SessionIndex.open(str(agent)) as index:
        index.sync()
    return agent


def append_entry(path: Path, number: int) -> None:
    """One user message appended to a session file, child of its last entry."""
    with open(path, "rb") as stream:
        stream.seek(max(0, os.path.getsize(path) - 65536))
        last = orjson.loads(stream.read().rstrip(b"\n").rsplit(b"\n", 1)[-1])
    entry = {
        "type": "message",
        "id": f"f{number:07x}",
        "parentId": last.get("id"),
        "timestamp": "2026-12-01T12:00:00.000Z",
        "message": {"role": "user", "content": [{"type": "text", "text": f"appended {number}"}]},
    }
    with open(path, "ab") as stream:
        stream.write(orjson.dumps(entry) + b"\n")


def run_once(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the process) of one run."""
    started = time.perf_counter()
    process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise subprocess.CalledProcessError(os.waitstatus_to_exitcode(status), argv)
    return elapsed, usage.ru_utime + usage.ru_stime


def process_rows(agent: Path, repeat: int, base: str | None) -> list[Row]:
    env = {**os.environ, "COLUMNS": "120"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed package has its bytecode
    store = [sys.executable, "-m", "xcsh_store", "--agent-dir", str(agent)]
    commands = {
        "pass": [sys.executable, "-c", "pass"],
        "version": [sys.executable, "-m", "xcsh_store", "--version"],
        "ls, --no-sync": [*store, "--no-sync", "ls", "-n", "20"],
        "ls": [*store, "ls", "-n", "20"],
        "usage, --no-sync": [*store, "--no-sync", "usage", "--json"],
    }
    if base is not None:
        # The base's code first on the path (the editable install's finder comes after it).
        based = ["env", f"PYTHONPATH={base}", *store]
        commands["base ls"] = [*based, "ls", "-n", "20"]
        commands["base version"] = ["env", f"PYTHONPATH={base}", *store[:3], "--version"]
    target = sorted((agent / "sessions").rglob("*.jsonl"))[0]
    walls: dict[str, list[float]] = {name: [] for name in [*commands, "usage after an append"]}
    cpus: dict[str, list[float]] = {name: [] for name in walls}
    for argv in commands.values():
        run_once(argv, env)  # bytecode written, files in the page cache
    for number in range(repeat):
        for name, argv in commands.items():
            wall, cpu = run_once(argv, env)
            walls[name].append(wall)
            cpus[name].append(cpu)
        append_entry(target, number)
        wall, cpu = run_once([*store, "usage", "--json"], env)
        walls["usage after an append"].append(wall)
        cpus["usage after an append"].append(cpu)
    wall = {name: statistics.median(values) for name, values in walls.items()}
    cpu = {name: statistics.median(values) for name, values in cpus.items()}
    rows = []
    for name, label, baseline, limit in (
        ("version", "xcsh-store --version", "pass", None),
        ("ls, --no-sync", "xcsh-store --no-sync ls -n 20", "pass", None),
        ("ls", "xcsh-store ls -n 20 (a sync first, unchanged tree)", "pass", LS_LIMIT),
        ("usage after an append", "xcsh-store usage --json after one appended entry",
         "usage, --no-sync", None),
    ):  # fmt: skip
        rows.append(compare(f"{label}: wall", wall[name], wall[baseline], limit=limit))
        rows.append(compare(f"{label}: CPU", cpu[name], cpu[baseline], limit=limit))
    if base is not None:
        for name, label in (("ls", "ls -n 20 (the base: no sync)"), ("version", "--version")):
            base_name = f"base {name}"
            rows.append(compare(f"{label} against the base: wall", wall[name], wall[base_name]))
            rows.append(compare(f"{label} against the base: CPU", cpu[name], cpu[base_name]))
    rows.append(compare("python -c pass: wall / CPU", wall["pass"], cpu["pass"]))
    return rows


def walk(root: str) -> int:
    """Every file under ``root`` stat-ed: the floor of any sync that finds nothing changed."""
    count = 0
    folders = [root]
    while folders:
        with os.scandir(folders.pop()) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    folders.append(entry.path)
                else:
                    entry.stat()
                    count += 1
    return count


def in_process_rows(agent: Path, repeat: int) -> list[Row]:
    with SessionIndex.open(str(agent)) as index:
        refresh = time_call(index.refresh, repeat=repeat, label="refresh")
    bare = time_call(walk, str(agent / "sessions"), repeat=repeat, label="walk")

    def built_table() -> str:
        pricing._price_table.cache_clear()
        return pricing.price_table().fingerprint

    table = time_call(built_table, repeat=repeat, label="price table")
    sources = time_call(pricing.price_sources, repeat=repeat, label="price sources")
    return [
        compare("refresh of an unchanged tree (in process)", refresh, bare),
        compare("price sources' key (what a sync compares)", sources, table),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="100MB")
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=21)
    parser.add_argument("--base", default="main", help="a commit to compare with ('' for none)")
    options = parser.parse_args()
    corpus = agent_corpus(options.size, options.sessions)
    agent = copied_agent_dir(corpus.agent_dir)
    with tempfile.TemporaryDirectory(prefix="xcsh-fresh-base-") as folder:
        base = None
        if options.base:
            extract(options.base, folder)
            base = folder
        rows = process_rows(agent, options.repeat, base)
    rows += in_process_rows(agent, options.repeat)
    print_table(
        rows,
        title=f"Fresh reads over {options.sessions:,} sessions, {options.size} (baselines:"
        f" python -c pass; --no-sync; {options.base or 'no base'}; the bare walk; the price"
        " table built)",
    )
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
