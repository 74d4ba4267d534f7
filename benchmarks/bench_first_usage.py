"""The first ``usage`` on a machine never indexed, beside ccusage, on a Claude Code home made of
the real fixture files (benchmarks/claude_tree.py), in one run (issue 28, item 4):

    python -m benchmarks.bench_first_usage [--size 326MB] [--rounds 3] [--agent claude|codex]
        [--cache ~/.cache/xcsh-store-bench/ccusage]

(``--agent codex``: a Codex home made the same way from the Codex fixtures, beside ccusage
``codex daily``.)

Each round, in turns (the machine's load falls on both alike): ccusage 20.0.24 (npm, as
compare_ccusage.py installs it) ``claude daily --offline --json``; then, each a fresh process
on a fresh agent dir with $HOME the tree's, xcsh-store's first ``usage`` (open, usage-first
sync ``sync(entries=False)``: only the lines with usage, usage_first.py; usage by day: what
``usage`` does on a machine never indexed), the same with the search text too (``sync()``,
for comparison), the pass that completes the first with the entries and the search text
(``index_pending_text``), and ``usage`` after one entry appended to the largest session
with the index warm (open, sync, usage). Wall times of whole processes, interpreter start
included; medians over the rounds, ratios against ccusage's median in the same run.

Token totals: ours (by day) against ccusage's ``claude daily`` and ``claude session`` totals
(input, output, cache read, cache write).

CPU seconds of each run too (getrusage of the children: a process and those it waited for).

Targets (issue 40): the first usage at most 0.7x ccusage (wall and CPU), usage after an append
at most 0.3x.
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
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.claude_tree import claude_home, codex_home, tree_bytes
from benchmarks.compare_ccusage import install_ccusage
from benchmarks.harness import compare, print_table
from benchmarks.index_common import WORK_DIR

ROOT = Path(__file__).resolve().parents[1]

# The child's steps: argv[1] the step, argv[2] the agent dir.
_CHILD = """
import json, sys
from xcsh_store.index import SessionIndex

step, agent_dir = sys.argv[1], sys.argv[2]
with SessionIndex.open(agent_dir) as index:
    if step == "text":
        report = index.index_pending_text()
        print(json.dumps({"text_files": report}))
        raise SystemExit
    # "usage" (and "append"): what the usage verb does (usage alone: sync(entries=False)).
    report = index.sync(text=step == "full", entries=step == "full")
    rows = index.usage(by="day")
    totals = [sum(getattr(row, name) for row in rows) for name in
              ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")]
    print(json.dumps({"totals": totals, "text_pending": report.text_pending}))
"""


# The user's cache folder (the price table: agents/prices/price_cache.py), emptied before each
# first run.
FIRST_USAGE_CACHE = WORK_DIR / "first-usage-cache"


def _environment(home: Path, agent: str) -> dict[str, str]:
    """$HOME the tree's (the other agent's folder one that does not exist); bytecode cached as
    on a user's machine (a shell that turns the cache off would have every process, and every
    sync worker, compile the package again)."""
    environment = dict(os.environ)
    environment.pop("PYTHONDONTWRITEBYTECODE", None)
    claude = home / ".claude" if agent == "claude" else WORK_DIR / "no-claude"
    codex = home / ".codex" if agent == "codex" else WORK_DIR / "no-codex"
    return {
        **environment,
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(claude),
        "XDG_CONFIG_HOME": str(WORK_DIR / "first-usage-config"),
        "XDG_DATA_HOME": str(WORK_DIR / "first-usage-data"),
        "XDG_CACHE_HOME": str(FIRST_USAGE_CACHE),
        "CODEX_HOME": str(codex),
        "PYTHONPATH": str(ROOT),
    }


# The CPU seconds (user and system) of each run, by step: its process and every process it
# waited for (sync workers, node's threads).
CPU: dict[str, list[float]] = {}


def timed(argv: list[str], environment: dict[str, str], step: str = "") -> tuple[float, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv, env=environment, capture_output=True, text=True, check=True)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if step:
        cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
        CPU.setdefault(step, []).append(cpu)
    return seconds, done.stdout


def ours(step: str, agent_dir: Path, environment: dict[str, str]) -> tuple[float, dict[str, Any]]:
    argv = [sys.executable, "-c", _CHILD, step, str(agent_dir)]
    seconds, output = timed(argv, environment, step)
    return seconds, json.loads(output)


def ccusage_totals(report: dict[str, Any]) -> list[int]:
    """(input, output, cache read, cache write) of a ccusage report (Codex's: its input
    includes the cached tokens, which it calls cachedInputTokens)."""
    totals = report["totals"]
    cached = totals.get("cachedInputTokens")
    if cached is not None:
        return [totals["inputTokens"] - cached, totals["outputTokens"], cached, 0]
    return [
        totals["inputTokens"],
        totals["outputTokens"],
        totals["cacheReadTokens"],
        totals["cacheCreationTokens"],
    ]


def largest_session(home: Path) -> Path:
    return max(home.rglob("*.jsonl"), key=lambda p: p.stat().st_size)


def append_entry(path: Path, serial: int) -> None:
    """One more line with usage, a copy of the file's last one, under new ids (Claude Code's
    uuid, message and request ids; Codex's running total, one token more)."""
    lines = path.read_bytes().splitlines()
    needle = b'"usage"' if b'"token_count"' not in path.read_bytes() else b'"token_count"'
    last = next(
        value
        for line in reversed(lines)
        if needle in line and (value := json.loads(line)).get("type") != "user"
        and (needle == b'"usage"' or (value["payload"].get("info") or {}).get("total_token_usage"))
    )  # fmt: skip
    if needle == b'"usage"':
        last["uuid"] = f"00000000-0000-4000-8000-{serial:012d}"
        last["message"]["id"] = f"msg_appended_{serial}"
        last["requestId"] = f"req_appended_{serial}"
    else:
        info = last["payload"]["info"]
        info["total_token_usage"]["output_tokens"] += 1
        info["last_token_usage"]["output_tokens"] += 1
    with path.open("ab") as stream:
        stream.write(json.dumps(last, separators=(",", ":")).encode() + b"\n")


def measure(size: str, rounds: int, cache: Path, agent: str = "claude") -> dict[str, Any]:
    """Every step, ``rounds`` times in turns, on the Claude Code (or Codex) home of ``size``:
    the times of each run (s), their medians and the token totals of each tool."""
    binary = install_ccusage(cache)
    source = claude_home(size) if agent == "claude" else codex_home(size)
    # A copy, since the rounds append to it.
    home = WORK_DIR / f"first-usage-home-{agent}-{size.lower()}"
    shutil.rmtree(home, ignore_errors=True)
    shutil.copytree(source, home)
    environment = _environment(home, agent)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "xcsh_store")], check=True)
    agent_dir = WORK_DIR / f"first-usage-agent-{size.lower()}"
    times: dict[str, list[float]] = {}
    totals: dict[str, list[int]] = {}
    ccusage = [str(binary), agent, "daily", "--offline", "--json"]
    try:
        for round_number in range(rounds):
            seconds, output = timed(ccusage, environment, "ccusage")
            times.setdefault("ccusage", []).append(seconds)
            totals.setdefault("ccusage daily, first round", ccusage_totals(json.loads(output)))
            for step in ("full", "usage"):
                # A first run on this machine: no index, no price table in the cache folder.
                shutil.rmtree(agent_dir, ignore_errors=True)
                shutil.rmtree(FIRST_USAGE_CACHE, ignore_errors=True)
                seconds, found = ours(step, agent_dir, environment)
                times.setdefault(step, []).append(seconds)
                totals.setdefault(f"{step}, first round", found["totals"])
            seconds, _found = ours("text", agent_dir, environment)
            times.setdefault("text", []).append(seconds)
            append_entry(largest_session(home), round_number)
            seconds, found = ours("append", agent_dir, environment)
            times.setdefault("append", []).append(seconds)
            totals["usage, after the appends"] = found["totals"]
            # ccusage after the append: the same tree for both.
            seconds, output = timed(ccusage, environment, "ccusage")
            times["ccusage"].append(seconds)
            totals["ccusage daily, after the appends"] = ccusage_totals(json.loads(output))
        session_report = subprocess.run(
            [str(binary), agent, "session", "--offline", "--json"],
            env=environment, capture_output=True, text=True, check=True,
        )  # fmt: skip
        totals["ccusage session, after the appends"] = ccusage_totals(
            json.loads(session_report.stdout)
        )
    finally:
        shutil.rmtree(home, ignore_errors=True)
        shutil.rmtree(agent_dir, ignore_errors=True)
    return {
        "bytes": tree_bytes(source),
        "times": times,
        "median": {step: statistics.median(values) for step, values in times.items()},
        "cpu": {step: statistics.median(values) for step, values in CPU.items()},
        "totals": totals,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="326MB")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--agent", choices=("claude", "codex"), default="claude")
    default_cache = Path.home() / ".cache" / "xcsh-store-bench" / "ccusage"
    parser.add_argument("--cache", type=Path, default=default_cache)
    options = parser.parse_args()
    figures = measure(options.size, options.rounds, options.cache, options.agent)
    median = figures["median"]
    megabytes = figures["bytes"] / 1e6
    cpu = figures["cpu"]
    rows = [
        compare(
            f"first usage, usage first ({megabytes:.0f} MB, fresh index)",
            median["usage"], median["ccusage"], min_ratio=1 / 0.7,
        ),
        compare(
            "  the same, CPU seconds (process and children)", cpu["usage"], cpu["ccusage"],
            min_ratio=1 / 0.7,
        ),
        compare("first usage with search text (a full sync)", median["full"], median["ccusage"]),
        compare("the text pass that completes it", median["text"], median["ccusage"]),
        compare(
            "usage after one appended entry, index warm", median["append"], median["ccusage"],
            min_ratio=1 / 0.3,
        ),
        compare(
            "  the same, CPU seconds (process and children)", cpu["append"], cpu["ccusage"],
            min_ratio=1 / 0.3,
        ),
    ]  # fmt: skip
    title = f"First usage beside ccusage {options.agent} daily (median of {options.rounds})"
    print_table(rows, title=title)
    print("\nAll times (s):")
    for step, values in figures["times"].items():
        print(f"  {step}: {', '.join(f'{value:.2f}' for value in values)}")
    print("\nCPU seconds:")
    for step, values in CPU.items():
        print(f"  {step}: {', '.join(f'{value:.2f}' for value in values)}")
    print("\nToken totals (input, output, cache read, cache write):")
    for label, values in figures["totals"].items():
        print(f"  {label}: {', '.join(f'{value:,}' for value in values)}")


if __name__ == "__main__":
    main()
