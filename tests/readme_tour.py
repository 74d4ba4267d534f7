"""The tours of the README and of docs/tour.md, run for real, so neither can drift from the
program.

Each document in :data:`TOURS` has a tour section: every ``$ xcsh-store …`` line in its text
blocks, and the script of its Python API section (docs/tour.md has one), run in the document's
order on a fresh demo in a temporary folder, each in a real terminal (a pty) of :data:`COLUMNS`
columns. A tour that does not begin with ``xcsh-store demo`` (the README's shows it) runs on the
demo written first. ``tests/test_readme_tour.py`` compares what they print with the documents;
``python tests/readme_tour.py --write`` writes it into them instead (after a change of output,
then review the diff).

In a text block a ``$ xcsh-store`` line starts a command and its output runs to the blank line
before the next one, except for ``xcsh-store demo``, whose output (it runs and prints commands
itself) is the rest of its block. The only differences allowed are in :func:`normalise`.
"""

from __future__ import annotations

import argparse
import difflib
import errno
import fcntl
import itertools
import os
import re
import shlex
import struct
import subprocess
import sys
import tempfile
import termios
from dataclasses import dataclass
from pathlib import Path

from isolation import isolated_environment

from xcsh_store.demo.build import DEMO_NOW

ROOT = Path(__file__).resolve().parent.parent
DEMO_COMMAND = "xcsh-store demo"
DEMO_FOLDER = "xcsh-store-demo"
COLUMNS = 100
ROWS = 50
COMMAND_TIMEOUT = 120

_BLOCK = re.compile(r"^```(text|python)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


@dataclass(frozen=True)
class Tour:
    """A document with a tour: the ``## `` section whose text blocks hold the commands, and the
    one whose Python script runs after them (when it has one)."""

    path: Path
    heading: str
    api_heading: str | None = None

    @property
    def name(self) -> str:
        return self.path.relative_to(ROOT).as_posix()


TOURS = (
    Tour(ROOT / "README.md", "## A short tour"),
    Tour(ROOT / "docs" / "tour.md", "## More of the command line", "## The Python API in brief"),
)


@dataclass
class Step:
    """One command (or the API script) and the document's text of its output.

    ``start``/``end`` are the output's offsets in the document's text.
    """

    command: str
    expected: str
    start: int
    end: int
    script: str | None = None


def section(text: str, heading: str) -> tuple[int, int]:
    """Offsets of a ``## `` section's body in a document."""
    start = text.index("\n" + heading + "\n") + len(heading) + 2
    following = text.find("\n## ", start)
    return start, len(text) if following < 0 else following


def tour_steps(text: str, tour: Tour) -> list[Step]:
    """The tour's commands and the API script, in the document's order."""
    steps: list[Step] = []
    start, end = section(text, tour.heading)
    for block in _BLOCK.finditer(text, start, end):
        if block.group(1) == "text":
            steps.extend(_block_steps(block.group(2), block.start(2)))
    if tour.api_heading is None:
        return steps
    start, end = section(text, tour.api_heading)
    blocks = list(_BLOCK.finditer(text, start, end))
    for script, output in itertools.pairwise(blocks):
        if script.group(1) == "python" and output.group(1) == "text":
            steps.append(
                Step("python", output.group(2), output.start(2), output.end(2), script.group(2))
            )
    return steps


def _block_steps(body: str, offset: int) -> list[Step]:
    lines = body.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if line.startswith("$ xcsh-store")]
    if not starts or starts[0] != 0:
        return []
    steps = []
    for number, first in enumerate(starts):
        command = lines[first][2:].rstrip("\n")
        last = len(lines) if number + 1 == len(starts) else starts[number + 1]
        if shlex.split(command)[1:2] == ["demo"]:
            last = len(lines)
        output_lines = lines[first + 1 : last]
        if last < len(lines) and output_lines and output_lines[-1] == "\n":
            output_lines = output_lines[:-1]  # the blank line between two commands
        begin = offset + sum(len(line) for line in lines[: first + 1])
        expected = "".join(output_lines)
        steps.append(Step(command, expected, begin, begin + len(expected)))
        if last == len(lines):
            break
    return steps


def environment(root: Path) -> dict[str, str]:
    """The terminal the tours' outputs come from: its width, UTC, no colour, the demo's
    "now" as the current year (``SOURCE_DATE_EPOCH``), ``$HOME`` above the demo folder (so
    paths read ``~/xcsh-store-demo``) and the agent dir the tour exports."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        **isolated_environment(root),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TZ": "UTC",
        "COLUMNS": str(COLUMNS),
        "LINES": str(ROWS),
        "TERM": "xterm-256color",
        "NO_COLOR": "1",
        "SOURCE_DATE_EPOCH": str(int(DEMO_NOW.timestamp())),
        "XCSH_AGENT_DIR": str(root / DEMO_FOLDER),
        "PYTHONPATH": os.pathsep.join(sys.path),
    }


def run_in_terminal(argv: list[str], root: Path) -> str:
    """What ``argv`` shows in a terminal of :data:`COLUMNS` columns (stdout and stderr)."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
    attributes = termios.tcgetattr(slave)
    attributes[1] &= ~termios.OPOST  # keep "\n" as it was written (no "\r\n")
    termios.tcsetattr(slave, termios.TCSANOW, attributes)
    try:
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=slave,
            stderr=slave,
            cwd=root,
            env=environment(root),
            start_new_session=True,
        )
    finally:
        os.close(slave)
    chunks = []
    try:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError as error:
                if error.errno == errno.EIO:  # every writer closed the terminal
                    break
                raise
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(master)
        process.wait(timeout=COMMAND_TIMEOUT)
    return b"".join(chunks).decode("utf-8")


def run_step(step: Step, root: Path) -> str:
    if step.script is not None:
        script = root / "api_example.py"
        script.write_text(step.script, encoding="utf-8")
        return run_in_terminal([sys.executable, str(script)], root)
    return run_command(step.command, root)


def run_command(command: str, root: Path) -> str:
    """What an ``xcsh-store …`` command line prints in the tours' terminal."""
    argv = shlex.split(command)
    assert argv[0] == "xcsh-store", command
    return run_in_terminal([sys.executable, "-m", "xcsh_store", *argv[1:]], root)


# What may differ between a run and the document, and why; each is taken over from the document.
_SAME_AS_README = (
    # The demo's own timing.
    re.compile(r"\(\d+(?:\.\d+)?s in all\)"),
    # doctor: the versions of Python, SQLite and the libraries installed.
    re.compile(r"^Versions\n(?:  .*\n)+", re.MULTILINE),
    # doctor: the SQLite readers on the machine and their versions, Datasette's if installed.
    re.compile(r"^Outside readers of index\.db\n(?:  .*\n)+", re.MULTILINE),
    # doctor: when the index was last synced (the clock).
    re.compile(r"last sync \d{4}-\d\d-\d\d \d\d:\d\d"),
)
# The session the API script writes gets its file name and id from the clock and its entry ids
# from a random generator, as any new session does.
_NEW_SESSION_FILE = re.compile(r"\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z_([0-9a-f]{16})\.jsonl")


def normalise(actual: str, expected: str) -> str:
    """``actual`` with the parts that must differ from run to run taken from ``expected``."""
    for pattern in _SAME_AS_README:
        actual = _take_over(pattern, actual, expected)
    new, shown = _NEW_SESSION_FILE.search(actual), _NEW_SESSION_FILE.search(expected)
    if new and shown:
        actual = actual.replace(new.group(0), shown.group(0)).replace(new.group(1), shown.group(1))
        entry = re.compile(rf"^{shown.group(1)} ([0-9a-f]{{8}}) ", re.MULTILINE)
        actual = _take_over(entry, actual, expected)
    return actual


def _take_over(pattern: re.Pattern[str], actual: str, expected: str) -> str:
    """Replace the n-th match of ``pattern`` in ``actual`` by the n-th in ``expected`` (when
    both have as many)."""
    shown = [match.group(0) for match in pattern.finditer(expected)]
    if len(shown) != len(pattern.findall(actual)):
        return actual
    replacements = iter(shown)
    return pattern.sub(lambda _: next(replacements), actual)


def run_tour(text: str, tour: Tour, root: Path) -> list[tuple[Step, str]]:
    """Every step of the document's tour run in ``root`` (which should be empty), in order,
    with what it printed; after the demo when the tour does not show it."""
    steps = tour_steps(text, tour)
    if steps and steps[0].command != DEMO_COMMAND:
        run_command(DEMO_COMMAND, root)
    return [(step, run_step(step, root)) for step in steps]


def differences(text: str, tour: Tour, root: Path) -> list[str]:
    """A unified diff per step whose output is not the document's (after :func:`normalise`)."""
    problems = []
    for step, actual in run_tour(text, tour, root):
        actual = normalise(actual, step.expected)
        if actual != step.expected:
            diff = difflib.unified_diff(
                step.expected.splitlines(keepends=True),
                actual.splitlines(keepends=True),
                tour.name,
                "the program",
            )
            problems.append(f"$ {step.command}\n{''.join(diff)}")
    return problems


def rewrite(text: str, tour: Tour, root: Path) -> str:
    """The document with every output of its tour replaced by what the program prints now."""
    pieces = []
    position = 0
    for step, actual in run_tour(text, tour, root):
        pieces += [text[position : step.start], actual]
        position = step.end
    return "".join(pieces) + text[position:]


def wide_lines(text: str, tour: Tour) -> list[str]:
    """Output lines of the tour wider than the terminal the tour is run in (a table or a line
    that does not fit it yet)."""
    return [
        f"{tour.name}: {len(line)} columns, after `$ {step.command}`: {line[:60]}…"
        for step in tour_steps(text, tour)
        for line in step.expected.splitlines()
        if len(line) > COLUMNS
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--write", action="store_true", help="write the outputs into the documents (else compare)"
    )
    parser.add_argument(
        "--wide", action="store_true", help=f"list output lines wider than {COLUMNS} columns"
    )
    arguments = parser.parse_args()
    failed = 0
    for tour in TOURS:
        text = tour.path.read_text(encoding="utf-8")
        if arguments.wide:
            print(
                "\n".join(wide_lines(text, tour))
                or f"{tour.name}: every line fits {COLUMNS} columns"
            )
            continue
        with tempfile.TemporaryDirectory(prefix="readme-tour-") as folder:
            if arguments.write:
                tour.path.write_text(rewrite(text, tour, Path(folder)), encoding="utf-8")
                print(f"rewrote the tour's outputs in {tour.name}")
                continue
            problems = differences(text, tour, Path(folder))
        for problem in problems:
            print(problem)
        print(f"{len(problems)} of {len(tour_steps(text, tour))} outputs differ from {tour.name}")
        failed += bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
