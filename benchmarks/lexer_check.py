"""Which Pygments lexers may highlight a session's code: each lexer run on hostile inputs at two
sizes, kept only when its time grows linearly and stays short (issue 39 item 3).

    python -m benchmarks.lexer_check [--jobs 2] [--progress FILE] [--write] [--only ALIAS...]

A fence names any of Pygments' ~600 lexers, and session text comes from READMEs and web pages
an agent read. Dozens of lexers backtrack: exponentially (``urbiscript`` on a quote and 48
backslashes: days) or quadratically (``c`` on blank lines: 4,000 take seconds, 100,000 take
minutes). This runs every lexer of the installed Pygments, in the web app's own worker process
(xcsh_store/web/highlight_worker.py, killed when it runs over), on each hostile input below at
SMALL and LARGE units, and measures the worker's CPU time (not wall time: the verdict does not
depend on the machine's load). A lexer is kept when, on every input:

* no run takes RUN_SECONDS;
* the time grows at most SUPERLINEAR times faster than the size (a linear lexer: ×8 for ×8);
  an input that looks superlinear is measured again at LARGE and 4×LARGE, best of three, and
  decides;
* at BLOCK_CHARACTERS (extrapolated linearly) it would take at most SLOWEST_BLOCK.

The inputs are the shapes that make regular expressions backtrack: a long run of one character;
an opening (a quote, a comment, a bracket, a tag) never closed, followed by a long run of an
escape, spaces, a word or newlines; a long run of a two-character pattern.

``--write`` writes xcsh_store/web/lexers.txt: the kept lexers with their aliases, the version of
Pygments checked (the web app refuses a list checked with another), and each lexer left out with
the input and figure that put it out. ``--progress FILE`` keeps each lexer's result as it is
found, so that a run stopped half-way goes on where it stopped.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

import pygments
from pygments.lexers import find_lexer_class_by_name, get_all_lexers

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from xcsh_store.web.highlight import (
    BLOCK_CHARACTERS,
    BLOCK_SECONDS,
    LEXERS_FILE,
    START_SECONDS,
    Worker,
    WorkerGoneError,
)

ROOT = Path(__file__).resolve().parents[1]
SMALL, LARGE = 125, 1000
# Wall seconds one run may take (the lexer is left out then): far more than any linear lexer
# takes for LARGE, however loaded the machine.
RUN_SECONDS = 10.0
# A time that grows this many times faster than the size is superlinear (a quadratic lexer
# grows 8 times faster for 8 times the size; noise and start-up costs stay well under 2).
SUPERLINEAR = 2.0
# CPU seconds a block of BLOCK_CHARACTERS may take (extrapolated linearly), at most: its time
# in a worker (a slower lexer, even if linear, would have its longest blocks shown plain).
SLOWEST_BLOCK = BLOCK_SECONDS
# CPU seconds under which a run is too short to compare (timer and cache noise).
NOISE_SECONDS = 0.002

SINGLES = " \n\t\r\\\"'`/*#<>()[]{}-=.,:;$@%&|!?+~^_a0A"
OPENINGS = [
    '"', "'", "`", "/*", "<", "(", "[", "{", "#", "<!--", "$(", "${", "@", "%", '"""', "--",
    "//", "/", "\\", "0x", "a(", "=", ":", "<?", "[[", 'r"', "{{", "<%",
]  # fmt: skip
RUNS = ["\\", " ", "a", "\n"]
PAIRS = [
    "a ", "a\n", " \n", '\\"', "\\'", "a.", "0.", "a,", "a:", "a=", "a(", "a-", "-a", "<a",
    "a>", "/*", "*/", "{}", "()", "[]", "\\\n", "# ", "''", '""', "<>", "a;", "1e",
]  # fmt: skip


@dataclass(frozen=True)
class Hostile:
    """An input: ``opening`` then ``units`` times ``unit``."""

    opening: str
    unit: str

    def text(self, units: int) -> str:
        return self.opening + self.unit * units

    def __str__(self) -> str:
        return json.dumps(self.opening) + " + " + json.dumps(self.unit) + "×n"


def hostile_inputs() -> Iterator[Hostile]:
    """Every input, those that put most lexers out first (a lexer's check stops at the first
    input it fails)."""
    for run in RUNS:
        for opening in OPENINGS:
            yield Hostile(opening, run)
    for pair in PAIRS:
        yield Hostile("", pair)
    for character in SINGLES:
        yield Hostile("", character)


@dataclass
class Verdict:
    """What the check found for one lexer."""

    class_name: str
    aliases: list[str]
    kept: bool
    reason: str  # why it is left out, or its slowest input when kept
    seconds: float  # wall seconds the check took


class Runner:
    """A worker process for the check, started again after each kill."""

    def __init__(self) -> None:
        self.worker: Worker | None = None

    def cpu_seconds(self, alias: str, text: str) -> float | None:
        """CPU seconds ``alias`` took on ``text``; None when it ran over RUN_SECONDS."""
        for _attempt in range(2):
            if self.worker is None:
                self.worker = Worker()
                if not self.worker.wait_ready(START_SECONDS):
                    raise RuntimeError("the highlighting worker does not start")
            try:
                answer = self.worker.ask(alias, text, RUN_SECONDS)
            except WorkerGoneError:
                self.worker.close()
                self.worker = None
                continue
            if answer is None:
                if self.worker.process.poll() is not None:  # killed: it did not stop in time
                    self.worker.close()
                    self.worker = None
                return None
            return answer.cpu_seconds
        raise RuntimeError(f"the worker keeps dying on {alias}")

    def best(self, alias: str, text: str, times: int = 3) -> float | None:
        found = []
        for _time in range(times):
            seconds = self.cpu_seconds(alias, text)
            if seconds is None:
                return None
            found.append(seconds)
        return min(found)

    def close(self) -> None:
        if self.worker is not None:
            self.worker.close()


def _slow_or_superlinear(
    runner: Runner,
    alias: str,
    hostile: Hostile,
    small_units: int,
    large_units: int,
) -> tuple[str | None, float]:
    """(why ``alias`` fails ``hostile`` between ``small_units`` and ``large_units``, or None;
    its CPU seconds per character at the larger size). Growth that looks superlinear is
    measured again, best of three, at the larger size and four times it: noise does not
    repeat, backtracking does."""
    small_text, large_text = hostile.text(small_units), hostile.text(large_units)
    small = runner.cpu_seconds(alias, small_text)
    large = runner.cpu_seconds(alias, large_text) if small is not None else None
    if small is None or large is None:
        return f"{hostile}: over {RUN_SECONDS:g} s", 0.0
    growth = (large / max(small, NOISE_SECONDS)) / (len(large_text) / len(small_text))
    if large > NOISE_SECONDS and growth > SUPERLINEAR:
        small_text, large_text = large_text, hostile.text(4 * large_units)
        small = runner.best(alias, small_text)
        large = runner.best(alias, large_text) if small is not None else None
        if small is None or large is None:
            return f"{hostile}: over {RUN_SECONDS:g} s", 0.0
        scale = len(large_text) / len(small_text)
        growth = (large / max(small, NOISE_SECONDS)) / scale
        if growth > SUPERLINEAR:
            times = f"×{growth * scale:.0f} the time for ×{scale:.0f} the size ({large:.2f} s)"
            return f"{hostile}: {times}", 0.0
    rate = large / len(large_text)
    if rate * BLOCK_CHARACTERS > SLOWEST_BLOCK:
        # Slow once may be a busy machine: the best of three decides.
        rate = (runner.best(alias, large_text) or RUN_SECONDS) / len(large_text)
    if rate * BLOCK_CHARACTERS > SLOWEST_BLOCK:
        return (
            f"{hostile}: {rate * BLOCK_CHARACTERS:.2f} s for {BLOCK_CHARACTERS:,} characters",
            0.0,
        )
    return None, rate


def check(runner: Runner, class_name: str, aliases: list[str]) -> Verdict:
    alias = aliases[0]
    started = time.monotonic()
    slowest, slowest_rate = "", 0.0
    for hostile in hostile_inputs():
        failure, rate = _slow_or_superlinear(runner, alias, hostile, SMALL, LARGE)
        if failure is not None:
            return Verdict(class_name, aliases, False, failure, time.monotonic() - started)
        if rate > slowest_rate:
            slowest, slowest_rate = str(hostile), rate
    at_limit = slowest_rate * BLOCK_CHARACTERS
    reason = f"slowest {slowest}: {at_limit * 1000:.0f} ms for {BLOCK_CHARACTERS:,} characters"
    return Verdict(class_name, aliases, True, reason, time.monotonic() - started)


def candidates(only: list[str]) -> list[tuple[str, list[str]]]:
    """(class name, aliases) of every lexer of the installed Pygments a fence can name."""
    found = []
    for _name, aliases, _files, _types in get_all_lexers(plugins=False):
        if aliases and (not only or set(only) & set(aliases)):
            found.append((find_lexer_class_by_name(aliases[0]).__name__, list(aliases)))
    return sorted(found)


def lexer_list(verdicts: list[Verdict]) -> str:
    kept = [verdict for verdict in verdicts if verdict.kept]
    left_out = [verdict for verdict in verdicts if not verdict.kept]
    lines = [
        "# The Pygments lexers the web app highlights with: those that stay linear and fast on",
        "# hostile input. Written by `python -m benchmarks.lexer_check --write`; do not edit.",
        f"# pygments {pygments.__version__}",
        f"# {len(kept)} kept of {len(verdicts)}: class name, then the aliases a fence may name.",
        *(f"{verdict.class_name} {' '.join(verdict.aliases)}" for verdict in kept),
        f"# {len(left_out)} left out, each with the input that put it out:",
        *(f"#   {verdict.class_name}: {verdict.reason}" for verdict in left_out),
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--progress", type=Path, help="a JSON-lines file of the lexers done")
    parser.add_argument("--write", action="store_true", help=f"write xcsh_store/web/{LEXERS_FILE}")
    parser.add_argument("--only", nargs="*", default=[], help="check these aliases only")
    options = parser.parse_args()

    done: dict[str, Verdict] = {}
    if options.progress is not None and options.progress.exists():
        for line in options.progress.read_text().splitlines():
            verdict = Verdict(**json.loads(line))
            done[verdict.class_name] = verdict
    todo = [(name, aliases) for name, aliases in candidates(options.only) if name not in done]
    print(f"{len(done)} lexers checked before, {len(todo)} to check", file=sys.stderr)
    lock = threading.Lock()
    local = threading.local()
    runners: list[Runner] = []

    def run(candidate: tuple[str, list[str]]) -> Verdict:
        if not hasattr(local, "runner"):
            local.runner = Runner()
            with lock:
                runners.append(local.runner)
        verdict = check(local.runner, *candidate)
        with lock:
            done[verdict.class_name] = verdict
            if options.progress is not None:
                with options.progress.open("a") as progress:
                    progress.write(json.dumps(asdict(verdict)) + "\n")
            mark = "kept" if verdict.kept else "OUT "
            print(f"{len(done):4} {mark} {verdict.class_name}: {verdict.reason}", file=sys.stderr)
        return verdict

    try:
        with ThreadPoolExecutor(options.jobs) as pool:
            list(pool.map(run, todo))
    finally:
        for runner in runners:
            runner.close()
    verdicts = sorted(done.values(), key=lambda verdict: verdict.class_name)
    kept = sum(verdict.kept for verdict in verdicts)
    print(f"{kept} of {len(verdicts)} lexers kept (Pygments {pygments.__version__})")
    if options.write:
        (ROOT / "xcsh_store" / "web" / LEXERS_FILE).write_text(lexer_list(verdicts))


if __name__ == "__main__":
    main()
