"""Run every benchmark script and collect their Markdown tables into benchmarks/RESULTS.md.

    python benchmarks/run_all.py [--quick]

``--quick`` runs each script on small inputs (a smoke test of the scripts, not a measurement).
Corpora are generated on first use and cached under benchmarks/.data (several GB in all).
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import apsw

HERE = Path(__file__).resolve().parent

FULL = [
    ["bench_load.py"],
    ["bench_manager.py"],
    ["bench_history.py"],
    ["bench_index_sync.py"],
    ["bench_index_nochange.py"],
    ["bench_index_append.py"],
    ["bench_index_list.py"],
    ["bench_index_search.py"],
    ["bench_pick.py"],
    ["bench_web_render.py"],
    ["bench_index_context.py"],
    ["bench_index_gc.py"],
    ["bench_index_churn.py"],
    ["bench_cost_curve.py"],
    ["bench_old_vs_new.py", "--workers", "1,2"],
]
QUICK = {
    "bench_load.py": ["--size", "5MB", "--repeat", "1"],
    "bench_manager.py": [
        "--appends",
        "20000",
        "--flushed-appends",
        "500",
        "--naive-appends",
        "100",
        "--size-mb",
        "10",
        "--repeats",
        "1",
    ],
    "bench_history.py": ["--prompts", "20000"],
    "bench_index_sync.py": ["--size", "50MB", "--sessions", "100", "--single", "20MB"],
    "bench_index_nochange.py": ["--count", "500"],
    "bench_index_append.py": ["--size", "20MB"],
    "bench_index_list.py": ["--corpora", "20MB:500", "--repeat", "3"],
    "bench_index_search.py": ["--size", "50MB", "--sessions", "100", "--rg-queries", "3"],
    "bench_pick.py": ["--size", "50MB", "--sessions", "100", "--queries", "5"],
    "bench_web_render.py": [
        "--entries",
        "2000",
        "--size",
        "50MB",
        "--sessions",
        "100",
        "--requests",
        "10",
    ],
    "bench_index_context.py": ["--depth", "2000"],
    "bench_index_gc.py": ["--blobs", "2000", "--size", "20MB", "--sessions", "50"],
    "bench_index_churn.py": ["--size", "20MB", "--sessions", "50"],
    "bench_cost_curve.py": ["--quick"],
    "bench_old_vs_new.py": ["--size", "30MB", "--sessions", "60", "--repeat", "1", "--rounds", "1"],
}


def markdown_tables(output: str) -> str:
    """The Markdown tables a script printed, each with its bold title line."""
    kept: list[str] = []
    for line in output.splitlines():
        if line.startswith("**"):
            kept += ["", line, ""]
        elif line.startswith("|"):
            kept.append(line)
    return "\n".join(kept).strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    options = parser.parse_args()
    sections = [
        "# Benchmark results",
        "",
        f"Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} with"
        f" `python benchmarks/run_all.py{' --quick' if options.quick else ''}`"
        f" on {os.cpu_count()} CPUs, Python {platform.python_version()},"
        f" SQLite {apsw.sqlite_lib_version()} (apsw {apsw.apsw_version()}),"
        f" load average {os.getloadavg()[0]:.1f} at the start.",
    ]
    failures = 0
    for script, *extra in FULL:
        arguments = [*extra, *(QUICK[script] if options.quick else [])]
        print(f"== {script} {' '.join(arguments)}", flush=True)
        started = time.perf_counter()
        result = subprocess.run(
            [sys.executable, str(HERE / script), *arguments], capture_output=True, text=True
        )
        print(result.stdout, result.stderr[-2000:], sep="\n", flush=True)
        seconds = time.perf_counter() - started
        sections += ["", f"## {script} ({seconds:.0f} s)", ""]
        if result.returncode:
            failures += 1
            sections.append(f"failed with exit code {result.returncode}")
        else:
            # Scripts that print plain-text tables are kept as they printed them.
            tables = markdown_tables(result.stdout)
            sections.append(tables or "```text\n" + result.stdout.strip() + "\n```")
    target = HERE / ("RESULTS.quick.md" if options.quick else "RESULTS.md")
    target.write_text("\n".join(sections) + "\n")
    print(f"wrote {target}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
