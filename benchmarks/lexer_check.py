"""How many characters of a session's code each Pygments lexer may highlight: each lexer run on
hostile inputs at a ladder of sizes, and given the largest size at which every input stays
cheap and grows at most quadratically (issue 39 item 3).

    python -m benchmarks.lexer_check [--jobs 2] [--progress FILE] [--write] [--only ALIAS...]

A fence names any of Pygments' ~600 lexers, and session text comes from READMEs and web pages
an agent read. Dozens of lexers backtrack: exponentially (``urbiscript`` on a quote and 48
backslashes: days) or quadratically (``c`` on blank lines: 4,000 take a second, 100,000 take
minutes). This runs every lexer of the installed Pygments, in the web app's own worker process
(xcsh_store/web/highlight_worker.py, killed when it runs over), on each hostile input below at
the sizes of RUNGS, and measures the worker's CPU time (not wall time: the verdict does not
depend on the machine's load). A lexer's cap is the largest rung at which, on every input:

* the block takes at most RUNG_SECONDS of CPU;
* its time grew from the rung below (BASE for the lowest) at most as the square of the size
  (STEEPEST, an exponent of the size): a linear lexer's exponent is 1, a quadratic one's 2; a
  steeper one (cubic, exponential backtracking) could take far longer on an input a little
  different from the ones tried, so its figure at the rung bounds nothing. A time that looks
  too high or too steep is measured again, best of three: noise does not repeat, backtracking
  does.

Why not linear only: the lexers of the languages sessions are full of (Python, JavaScript,
TypeScript, C, Go, Java, C#, CSS) are quadratic on some input from the first kilobyte (``c`` on
blank lines: ×4.4 the time for ×2.1 the size between 1,200 and 2,500 characters), so a linear
rule would show them all plain; at their cap a quadratic lexer takes a known, small time.

The inputs are the shapes that make regular expressions backtrack: a long run of one character;
an opening (a quote, a comment, a bracket, a tag) never closed, followed by a long run of an
escape, spaces, a word or newlines; a long run of a two-character pattern.

``--write`` writes xcsh_store/web/lexers.txt: each lexer with a cap, its cap and its aliases,
the version of Pygments checked (the web app refuses a list checked with another), then each
lexer capped below the top rung or left out, with the input and figure that decided it.
``--progress FILE`` keeps each lexer's result as it is found, so that a run stopped half-way
goes on where it stopped; ``--only`` checks some lexers (those of a progress file count as
checked), and ``--write`` then leaves every lexer not checked out.
"""

from __future__ import annotations

import argparse
import json
import math
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
    LEXERS_FILE,
    START_SECONDS,
    Answer,
    Worker,
    WorkerGoneError,
    lexer_list_line,
)

ROOT = Path(__file__).resolve().parents[1]
# The caps a lexer may get, largest first: the largest is the most a page highlights at all.
RUNGS = (BLOCK_CHARACTERS, 10_000, 5_000, 2_500, 1_200)
# The size the lowest rung's growth is measured from.
BASE = 600
# CPU seconds any hostile input may take at a lexer's cap: a page's two seconds of
# highlighting hold eight such blocks, and the worker's one second a block is four times it.
RUNG_SECONDS = 0.25
# The steepest growth kept, as the exponent of the size (time ∝ size ** STEEPEST): a quadratic
# lexer's is 2, noise adds a few tenths; a cubic one's is 3.
STEEPEST = 2.5
# Wall seconds one run is given before the worker stops it (see Runner.cpu_seconds).
RUN_SECONDS = 16 * RUNG_SECONDS
# CPU seconds under which a time is too short to compare (timer and cache noise).
NOISE_SECONDS = 0.005

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
    """An input: ``opening`` then as many ``unit`` as fit in a size."""

    opening: str
    unit: str

    def text(self, characters: int) -> str:
        """The input of at most ``characters`` (the largest whole number of units)."""
        return self.opening + self.unit * ((characters - len(self.opening)) // len(self.unit))

    def __str__(self) -> str:
        return json.dumps(self.opening) + " + " + json.dumps(self.unit) + "×n"


def hostile_inputs() -> Iterator[Hostile]:
    """Every input, those that cap most lexers first (a lexer's later inputs are tried from its
    cap so far down, so an early low cap saves the large sizes)."""
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
    max_chars: int  # the lexer's cap; 0: left out
    reason: str  # what kept it from the rung above (or out), or its slowest input at the top
    seconds: float  # wall seconds the check took


class Runner:
    """A worker process for the check, started again after each kill."""

    def __init__(self) -> None:
        self.worker: Worker | None = None
        # Whether the last cpu_seconds is of a run stopped over RUNG_SECONDS: the seconds it
        # had taken, not all it would take.
        self.stopped = False

    def cpu_seconds(self, alias: str, text: str) -> float | None:
        """CPU seconds ``alias`` took on ``text``. A run the worker stopped at its wall
        seconds counts with the CPU seconds it had taken when over RUNG_SECONDS (it is over
        the budget whatever the rest would have taken); one stopped short of that was starved
        by the machine's load, and is run again with four times the seconds, as is one whose
        worker had to be killed (C code that does not look for signals, or an answer late for
        the load). None when it ran over both times."""
        self.stopped = False
        for seconds in (RUN_SECONDS, 4 * RUN_SECONDS):
            answer = self._answer(alias, text, seconds)
            if answer is not None and (not answer.ran_over or answer.cpu_seconds > RUNG_SECONDS):
                self.stopped = answer.ran_over
                return answer.cpu_seconds
        return None

    def _answer(self, alias: str, text: str, seconds: float) -> Answer | None:
        for _attempt in range(2):
            if self.worker is None:
                self.worker = Worker()
                if not self.worker.wait_ready(START_SECONDS):
                    raise RuntimeError("the highlighting worker does not start")
            try:
                answer = self.worker.answer(alias, text, seconds)
            except WorkerGoneError:
                self.worker.close()
                self.worker = None
                continue
            if answer is None:  # killed: it did not stop in time
                self.worker.close()
                self.worker = None
            return answer
        raise RuntimeError(f"the worker keeps dying on {alias}")

    def best(self, alias: str, text: str, times: int = 3) -> float | None:
        """The least CPU seconds of ``times`` runs; None when one ran over."""
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


# The least time a size below is taken to have (a shorter one is timer noise).
FLOOR_SECONDS = NOISE_SECONDS / 4


def exponent(seconds: float, below: float, size: int, size_below: int) -> float:
    """How steeply the time grew from ``size_below`` to ``size``: the exponent of the size
    (1 linear, 2 quadratic); 0 when the time is too short to tell."""
    if seconds <= NOISE_SECONDS:
        return 0.0
    return math.log(seconds / max(below, FLOOR_SECONDS)) / math.log(size / size_below)


def never_steep(seconds: float, size: int, size_below: int) -> bool:
    """Whether ``seconds`` at ``size`` is too short to be STEEPEST over any time at
    ``size_below`` (which then need not be measured)."""
    return seconds <= NOISE_SECONDS or seconds <= FLOOR_SECONDS * (size / size_below) ** STEEPEST


class Ladder:
    """One lexer on one hostile input: its CPU seconds at each size, measured once (None: it
    ran over RUN_SECONDS)."""

    def __init__(self, runner: Runner, alias: str, hostile: Hostile) -> None:
        self.runner, self.alias, self.hostile = runner, alias, hostile
        self.times: dict[int, float | None] = {}
        self.confirmed: set[int] = set()
        self.stopped: set[int] = set()  # sizes of runs stopped over the budget

    def at(self, characters: int, confirm: bool = False) -> float | None:
        """CPU seconds at ``characters``; with ``confirm``, the best of three (once)."""
        if characters not in self.times:
            self.times[characters] = self.runner.cpu_seconds(
                self.alias, self.hostile.text(characters)
            )
            if self.runner.stopped:  # over, however it is measured again
                self.confirmed.add(characters)
                self.stopped.add(characters)
        if confirm and characters not in self.confirmed and self.times[characters] is not None:
            self.confirmed.add(characters)
            self.times[characters] = self.runner.best(self.alias, self.hostile.text(characters))
        return self.times[characters]

    def size(self, characters: int) -> int:
        return len(self.hostile.text(characters))

    def failure(self, rung: int, below: int) -> str | None:
        """Why this input keeps the lexer from ``rung`` (``below``: the size its growth is
        measured from), or None."""
        seconds = self.at(rung)
        if seconds is not None and RUNG_SECONDS < seconds <= 2 * RUNG_SECONDS:
            seconds = self.at(rung, confirm=True)  # noise is not twice the time
        if seconds is None:
            return f"{self.hostile} at {rung:,}: killed, or over {4 * RUN_SECONDS:g} s of wall time"
        if seconds > RUNG_SECONDS:
            over = "stopped at " if rung in self.stopped else ""
            return f"{self.hostile} at {rung:,}: {over}{seconds:.2f} s"
        steep = self._exponent(rung, below)
        if steep > STEEPEST:
            self.at(rung, confirm=True)
            self.at(below, confirm=True)
            steep = self._exponent(rung, below)
        if steep > STEEPEST:
            return (
                f"{self.hostile} at {rung:,}: time ∝ size^{steep:.1f}"
                f" ({self.times[below] or 0:.3f} s at {below:,}, {self.times[rung]:.3f} s)"
            )
        return None

    def _exponent(self, rung: int, below: int) -> float:
        seconds = self.times[rung]
        assert seconds is not None
        if never_steep(seconds, self.size(rung), self.size(below)):
            return 0.0
        seconds_below = self.at(below)
        if seconds_below is None:  # faster at the larger size: it ran over by chance
            return 0.0
        return exponent(seconds, seconds_below, self.size(rung), self.size(below))


def check(runner: Runner, class_name: str, aliases: list[str]) -> Verdict:
    """The largest rung every hostile input allows ``class_name``; each input is tried from
    the cap the inputs before it left, down."""
    alias = aliases[0]
    started = time.monotonic()
    cap = 0  # index in RUNGS of the largest rung still possible
    reason, slowest, slowest_seconds = "", "", -1.0
    for hostile in hostile_inputs():
        ladder = Ladder(runner, alias, hostile)
        while cap < len(RUNGS):
            rung = RUNGS[cap]
            below = RUNGS[cap + 1] if cap + 1 < len(RUNGS) else BASE
            failure = ladder.failure(rung, below)
            if failure is None:
                break
            reason = failure
            cap += 1
        if cap == len(RUNGS):
            return Verdict(class_name, aliases, 0, reason, time.monotonic() - started)
        seconds = ladder.times[RUNGS[cap]] or 0.0
        if seconds > slowest_seconds:
            slowest, slowest_seconds = f"{hostile}: {seconds * 1000:.0f} ms", seconds
    if cap == 0:
        reason = f"slowest {slowest} at {RUNGS[0]:,}"
    else:
        reason = f"{reason}; slowest at {RUNGS[cap]:,}: {slowest}"
    return Verdict(class_name, aliases, RUNGS[cap], reason, time.monotonic() - started)


def candidates(only: list[str]) -> list[tuple[str, list[str]]]:
    """(class name, aliases) of every lexer of the installed Pygments a fence can name."""
    found = []
    for _name, aliases, _files, _types in get_all_lexers(plugins=False):
        if aliases and (not only or set(only) & set(aliases)):
            found.append((find_lexer_class_by_name(aliases[0]).__name__, list(aliases)))
    return sorted(found)


def lexer_list(verdicts: list[Verdict], unchecked: list[str]) -> str:
    """lexers.txt for ``verdicts``; the ``unchecked`` lexers (class names) are left out."""
    kept = [verdict for verdict in verdicts if verdict.max_chars]
    capped = [verdict for verdict in kept if verdict.max_chars < RUNGS[0]]
    left_out = [verdict for verdict in verdicts if not verdict.max_chars]
    lines = [
        "# How many characters of a block each Pygments lexer the web app highlights with may",
        "# take: the largest size at which it stays cheap and at most quadratic on hostile input.",
        "# Written by `python -m benchmarks.lexer_check --write`; do not edit.",
        f"# pygments {pygments.__version__}",
        f"# {len(kept)} kept of {len(verdicts) + len(unchecked)}, {len(capped)} of them capped"
        f" below {RUNGS[0]:,}. Each line: class name,",
        "# cap (characters), the aliases a fence may name; tab-separated.",
        *(lexer_list_line(v.class_name, v.max_chars, v.aliases) for v in kept),
        f"# {len(capped)} capped below {RUNGS[0]:,}, each with the input that kept it from the"
        " next size:",
        *(f"#   {verdict.class_name}: {verdict.reason}" for verdict in capped),
        f"# {len(left_out)} left out, each with the input that put it out:",
        *(f"#   {verdict.class_name}: {verdict.reason}" for verdict in left_out),
    ]
    if unchecked:
        lines.append(f"# {len(unchecked)} not checked (--only), left out:")
        lines.extend(f"#   {name}" for name in unchecked)
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
                    progress.write(json.dumps(asdict(verdict), ensure_ascii=False) + "\n")
            cap = f"{verdict.max_chars:6,}" if verdict.max_chars else "   OUT"
            print(
                f"{len(done):4} {cap} {verdict.class_name} ({verdict.seconds:.0f} s):"
                f" {verdict.reason}",
                file=sys.stderr,
            )
        return verdict

    try:
        with ThreadPoolExecutor(options.jobs) as pool:
            list(pool.map(run, todo))
    finally:
        for runner in runners:
            runner.close()
    verdicts = sorted(done.values(), key=lambda verdict: verdict.class_name)
    kept = sum(bool(verdict.max_chars) for verdict in verdicts)
    print(f"{kept} of {len(verdicts)} lexers kept (Pygments {pygments.__version__})")
    if options.write:
        unchecked = [name for name, _aliases in candidates([]) if name not in done]
        (ROOT / "xcsh_store" / "web" / LEXERS_FILE).write_text(lexer_list(verdicts, unchecked))


if __name__ == "__main__":
    main()
