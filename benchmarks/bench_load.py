"""Loading session files: the public loader side by side with bare orjson line loops.

    python benchmarks/bench_load.py [--size 100MB] [--repeat 3]

Files: the five largest real fixtures and a generated session of ``--size`` (cached under
benchmarks/.data). Every run of every step is a fresh child process (so its peak memory is its
own), and the steps take turns, so a machine that slows down for a while slows each alike
(the steps of a file of a few MB take turns many times within each child); each figure is the
best of ``--repeat`` children.

Target (issue 16): ``load_entries_from_file`` at least 0.9x a bare orjson line loop on the
same file. The loop that counts keeps the objects it parses, with the cyclic collector paused
as the loader pauses it: the same work without the loader's leniency and header check. Also
shown: the loop exactly as ``for line in f: orjson.loads(line)``, which drops each object as
soon as it is parsed (it never grows the heap, so no loader that returns the objects can
reach it: keeping them costs the page faults of a heap about twice the file), and
``load_session``-style load + migrate. Peak memory growth at most 3x the file (issue 2).
"""

from __future__ import annotations

import argparse
import functools
import gc
import os
import sys
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.corpus import cached_corpus, generate_session_file, parse_size
from benchmarks.harness import Measurement, measure_in_child, print_table, time_interleaved
from xcsh_store.format.loader import load_entries_from_file
from xcsh_store.format.versions import migrate_session_entries

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "pi"
TARGET = 0.9


def public_loader(path: str) -> int:
    """The public API: lenient parse and header check."""
    return len(load_entries_from_file(path))


def load_and_migrate(path: str) -> int:
    """What opening a session costs on top: the v1 -> v3 migration pass as well."""
    entries = load_entries_from_file(path)
    migrate_session_entries(entries)
    return len(entries)


def orjson_loop_keeping(path: str) -> int:
    """The baseline of the target: one orjson.loads per line, every object kept, lines that
    fail skipped (a try costs nothing until it catches), the collector paused."""
    entries = []
    gc.disable()
    try:
        with open(path, "rb") as handle:
            for line in handle:
                try:
                    entries.append(orjson.loads(line))
                except orjson.JSONDecodeError:
                    continue
    finally:
        gc.enable()
    return len(entries)


def orjson_loop_dropping(path: str) -> int:
    """``for line in f: orjson.loads(line)``: parsing alone, each object freed at once."""
    count = 0
    with open(path, "rb") as handle:
        for line in handle:
            try:
                orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            count += 1
    return count


STEPS = (public_loader, orjson_loop_keeping, orjson_loop_dropping, load_and_migrate)


# A file this small loads in milliseconds: too short for one run in one process to tell the
# steps apart on a busy machine, so its steps take turns many times in one process instead.
SMALL_FILE = 20e6


def interleaved_best(path: str, runs: int) -> dict[str, float]:
    """The best time of each step, the steps taking turns ``runs`` times in this process."""
    calls = [functools.partial(step, path) for step in STEPS]
    measured = time_interleaved(*calls, repeat=runs)
    return {step.__name__: run.best for step, run in zip(STEPS, measured, strict=True)}


def measure_file(path: str, repeat: int) -> dict[str, Measurement]:
    """Every step on one file, best of ``repeat`` children. A big file's steps each run in a
    child of their own (the first load of a process pays for growing the heap, as opening a
    session does), taking turns; a small file's steps take turns within each child."""
    size = os.path.getsize(path)
    results = {step.__name__: Measurement(step.__name__) for step in STEPS}
    for _ in range(repeat):
        if size < SMALL_FILE:
            best = measure_in_child(interleaved_best, path, int(SMALL_FILE / size)).result
        else:
            best = {step.__name__: measure_in_child(step, path).best for step in STEPS}
        for name, seconds in best.items():
            results[name].seconds.append(seconds)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="100MB", help="size of the generated session")
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()

    generated = cached_corpus(
        f"session-{options.size.lower()}",
        generate_session_file,
        target_bytes=parse_size(options.size),
        seed=7,
    )
    files = sorted(FIXTURES.glob("*.jsonl"), key=lambda path: path.stat().st_size)[-5:]
    files.append(Path(generated.session_paths()[0]))

    rows = []
    for path in files:
        megabytes = path.stat().st_size / 1e6
        runs = measure_file(str(path), options.repeat)
        speed = {name: megabytes / run.best for name, run in runs.items()}
        ratio = speed["public_loader"] / speed["orjson_loop_keeping"]
        # Memory from a child that loads the file once (repeated loads fragment the heap).
        once = measure_in_child(public_loader, str(path))
        growth = ((once.peak_rss or 0) - (once.base_rss or 0)) / path.stat().st_size
        label = path.name if len(path.name) < 40 else path.name[:37] + "..."
        rows.append([
            f"{label} ({megabytes:.1f} MB)",
            f"{speed['public_loader']:.0f}",
            f"{speed['orjson_loop_keeping']:.0f}",
            f"{ratio:.2f}× {'✔' if ratio >= TARGET else '✘'}",
            f"{speed['orjson_loop_dropping']:.0f}",
            f"{speed['public_loader'] / speed['orjson_loop_dropping']:.2f}×",
            f"{speed['load_and_migrate']:.0f}",
            f"{growth:.2f}× {'✔' if growth <= 3 else '✘'}",
        ])  # fmt: skip
    headers = [
        "file",
        "loader MB/s",
        "orjson loop keeping (gc paused) MB/s",
        f"ratio (≥ {TARGET}×)",
        "orjson loop dropping MB/s",
        "ratio",
        "load + migrate MB/s",
        "peak growth / file (≤ 3×)",
    ]
    print_table(
        rows,
        headers,
        title=f"Loading sessions: load_entries_from_file vs bare orjson line loops "
        f"(best of {options.repeat}, each run a fresh process)",
    )


if __name__ == "__main__":
    main()
