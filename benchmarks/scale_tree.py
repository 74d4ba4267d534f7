"""Claude Code homes of several sizes for the scale point (issue 40, item 6), generated once.

    python -m benchmarks.scale_tree --sizes 1GB,3GB,10GB [--data /work/scale-data] [--jobs 2]

One pool of sessions is written for the largest size, in a fixed order (or an existing larger
pool is used: it starts with the same sessions); a home of a smaller size holds the first
sessions of the pool up to that many bytes, as hard links (no disk of its own), so the 1 GB home
is the start of the 3 GB one and of the 10 GB one. Each home is
``<data>/scale-home-<size>-v<N>/.claude/projects/<project>/<session id>.jsonl``.

The sessions (deterministic: each is made from a generator seeded by its number):

* nine in ten are generated Claude Code transcripts (``bench_agents.claude_session``: user
  prompts, responses streamed as several assistant lines sharing a message id with thinking,
  text and tool_use blocks, tool results, progress, file-history snapshots and titles), of a
  log-normal size (median 300 kB, a few of tens of MB, as real homes have), in 40 projects,
  their prose drawn from ``words.txt`` by Zipf's law over its ranks (``zipf_text``);
* one in ten is a real Claude Code fixture file (``tests/fixtures/claude``) with its ids made
  the copy's own (``claude_tree._renamed``), so the real files' shapes are in every home.

The pool is built under ``$XCSH_BENCH_DATA`` (default ``benchmarks/.data``) or ``--data``:
a 10 GB home needs 10 GB free there. Homes are read-only for the benchmark (it never appends).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import multiprocessing
import os
import random
import shutil
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_agents import claude_session
from benchmarks.claude_tree import FIXTURES, _renamed
from benchmarks.corpus import DATA_DIR, parse_size

# Bump when the bytes written change, so that an older cached pool is built again.
TREE_VERSION = 1
PROJECTS = 40
MEDIAN_BYTES = 300_000
SIGMA = 1.1
LARGEST_BYTES = 40_000_000
SMALLEST_BYTES = 4_000
FIXTURE_EVERY = 10


@dataclass(frozen=True)
class Planned:
    """One session of the pool: its place in the order, its file and the bytes it aims at."""

    number: int
    relative: str
    target: int


def data_folder(data: Path | None = None) -> Path:
    return data or Path(os.environ.get("XCSH_BENCH_DATA", DATA_DIR))


def _plan(total: int) -> list[Planned]:
    """Sessions enough for ``total`` bytes, in pool order (sizes from one seeded generator)."""
    rng = random.Random(f"scale-tree:{TREE_VERSION}")
    planned: list[Planned] = []
    aimed = 0
    number = 0
    while aimed < total:
        size = int(min(LARGEST_BYTES, max(SMALLEST_BYTES, rng.lognormvariate(
            math.log(MEDIAN_BYTES), SIGMA))))  # fmt: skip
        session_id = str(uuid.UUID(int=rng.getrandbits(128)))
        project = f"-work-project-{rng.randrange(PROJECTS)}"
        planned.append(Planned(number, f"{project}/{session_id}.jsonl", size))
        # A fixture copy's size is the fixture's, about 0.3 MB on average.
        aimed += size if number % FIXTURE_EVERY else MEDIAN_BYTES
        number += 1
    return planned


_FIXTURE_DATA: list[bytes] = []
_PROSE: list[str] = []
_PROSE_WORDS = 1_000_000


def _prose() -> list[str]:
    """A million words of ``words.txt`` drawn by Zipf's law over their rank (the fixtures'
    own frequencies: a few words everywhere, most of them rare), made once per process."""
    if not _PROSE:
        words = (Path(__file__).parent / "words.txt").read_text().split()
        weights = list(itertools.accumulate(1 / rank for rank in range(1, len(words) + 1)))
        rng = random.Random(f"scale-prose:{TREE_VERSION}")
        _PROSE.extend(rng.choices(words, cum_weights=weights, k=_PROSE_WORDS))
    return _PROSE


def zipf_text(rng: random.Random, words: int) -> str:
    """``words`` consecutive words from a random place in the prose: Zipf-distributed words at
    a tenth of the cost of drawing each (generating 10 GB is then minutes, not an hour)."""
    prose = _prose()
    start = rng.randrange(len(prose) - words)
    return " ".join(prose[start : start + words])


def _write(job: tuple[str, Planned]) -> tuple[int, int]:
    """Write one planned session under ``projects``; (its number, its bytes)."""
    projects, item = job
    if item.number % FIXTURE_EVERY == 0:
        if not _FIXTURE_DATA:
            _FIXTURE_DATA.extend(sorted(path.read_bytes() for path in FIXTURES.glob("*.jsonl")))
        source = _FIXTURE_DATA[(item.number // FIXTURE_EVERY) % len(_FIXTURE_DATA)]
        content, _session = _renamed(source, item.number)
    else:
        rng = random.Random(f"scale-session:{item.number}")
        session_id = Path(item.relative).stem
        content = claude_session(rng, session_id, item.target, item.number * 1800, zipf_text)
    path = Path(projects) / item.relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    return item.number, len(content)


def _pool(total: int, data: Path, jobs: int) -> tuple[Path, list[tuple[str, int]]]:
    """The pool's home (built when missing) and its sessions in order: (relative path, bytes)."""
    home = data / f"scale-pool-{total // 1_000_000}mb-v{TREE_VERSION}"
    done = home / "sessions.json"
    if done.exists():
        return home, [(path, size) for path, size in json.loads(done.read_text())]
    # A larger pool starts with the same sessions (one plan, each session seeded by its number).
    for larger in sorted(data.glob(f"scale-pool-*mb-v{TREE_VERSION}/sessions.json")):
        megabytes = int(larger.parent.name.split("-")[2][: -len("mb")])
        if megabytes * 1_000_000 >= total:
            return larger.parent, [(path, size) for path, size in json.loads(larger.read_text())]
    shutil.rmtree(home, ignore_errors=True)
    projects = home / ".claude" / "projects"
    planned = _plan(total)
    sizes: dict[int, int] = {}
    started = time.perf_counter()
    arguments = [(str(projects), item) for item in planned]
    with multiprocessing.get_context("fork").Pool(jobs) as workers:
        for number, size in workers.imap_unordered(_write, arguments, chunksize=8):
            sizes[number] = size
            if len(sizes) % 2000 == 0:
                written = sum(sizes.values())
                print(f"  {len(sizes):,} sessions, {written / 1e9:.2f} GB,"
                      f" {written / 1e6 / (time.perf_counter() - started):.0f} MB/s",
                      file=sys.stderr, flush=True)  # fmt: skip
    order = [(item.relative, sizes[item.number]) for item in planned]
    done.write_text(json.dumps(order))
    return home, order


def scale_homes(sizes: list[str], data: Path | None = None, jobs: int = 2) -> dict[str, Path]:
    """A home of each size (the largest is the pool itself; the others hard links of its
    first sessions), built when missing. Every link is made before any home is returned, so no
    index built on one of them sees its files' times change later on."""
    folder = data_folder(data)
    folder.mkdir(parents=True, exist_ok=True)
    largest = max(sizes, key=parse_size)
    pool, order = _pool(parse_size(largest), folder, jobs)
    homes: dict[str, Path] = {}
    for size in sizes:
        if pool.name == f"scale-pool-{parse_size(size) // 1_000_000}mb-v{TREE_VERSION}":
            homes[size] = pool
            continue
        home = folder / f"scale-home-{size.lower()}-of-{pool.name}"
        done = home / "sessions.json"
        if not done.exists():
            shutil.rmtree(home, ignore_errors=True)
            target, written, chosen = parse_size(size), 0, []
            for relative, count in order:
                if written >= target:
                    break
                source = pool / ".claude" / "projects" / relative
                link = home / ".claude" / "projects" / relative
                link.parent.mkdir(parents=True, exist_ok=True)
                os.link(source, link)
                written += count
                chosen.append((relative, count))
            done.write_text(json.dumps(chosen))
        homes[size] = home
    return homes


def home_sessions(home: Path) -> list[tuple[str, int]]:
    """A home's sessions in pool order: (path under ``.claude/projects``, bytes)."""
    return [(path, size) for path, size in json.loads((home / "sessions.json").read_text())]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1GB,3GB,10GB")
    parser.add_argument("--data", type=Path, default=None)
    parser.add_argument("--jobs", type=int, default=2)
    options = parser.parse_args()
    sizes = [size.strip() for size in options.sizes.split(",") if size.strip()]
    for size, home in scale_homes(sizes, options.data, options.jobs).items():
        sessions = home_sessions(home)
        total = sum(count for _path, count in sessions)
        print(f"{size}: {home} ({len(sessions):,} sessions, {total / 1e9:.2f} GB)")


if __name__ == "__main__":
    main()
