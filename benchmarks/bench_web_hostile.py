"""serve while hostile pages are being requested: how long a plain page takes, this tree beside
an older one in the same run (issue 39 item 3).

    python -m benchmarks.bench_web_hostile [REF] [--work DIR] [--hostile 10] [--asks 20]

``REF`` (default ``a24a449``, main before issue 39) is extracted with ``git archive``, as
bench_web_bounds.py does; both trees serve the same agent dir (``xcsh-store serve`` as a
process, ``PYTHONPATH`` at the tree):

* one plain session (a prompt and an answer);
* ``--hostile`` sessions whose code blocks backtrack in Pygments, each a few small messages as
  the review found them: ``urbiscript`` on a quote and 48 backslashes (exponential: days),
  ``c`` on 19,000 blank lines (quadratic: a minute), and, at the cap the new tree's lexers.txt
  gives each lexer (the largest block it highlights), the inputs that capped ``c``, ``python``,
  ``javascript`` and ``csharp`` (quadratic: a quarter of a second of CPU each at the cap) and
  those the checker found slowest for Ruby and Lua (``a,``, ``<a``: linear); each entry within
  the 20,000 characters the session page shows of it (a longer one is shown cut, as plain
  text).

The plain page is asked ``--asks`` times, one after the other, first alone (the baseline), then
while ``--hostile`` clients each ask for their hostile page again as soon as it answers (or,
for the old tree, never answers). Each ask waits at most ASK_SECONDS (one not answered in time
counts as ASK_SECONDS, and the asks after it are not made). Target: every plain page in at most
a second under that load. Then the server gets SIGINT, and the seconds it takes to
exit are measured (the old one is killed after STOP_SECONDS).
"""

from __future__ import annotations

import argparse
import hashlib
import http.client
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_old_vs_new import current_label, extract
from benchmarks.bench_web_bounds import free_port, message, session_file
from benchmarks.harness import Row, compare, print_table
from benchmarks.index_common import WORK_DIR
from benchmarks.index_compare import ROOT
from xcsh_store.index import SessionIndex
from xcsh_store.web.highlight import checked_lexers

DEFAULT_REF = "a24a449"
PROJECT = "--home-dev-src--"
ASK_SECONDS = 30.0
STOP_SECONDS = 30.0
# The hostile blocks, in turn over the sessions: (fence, comment, code, whether the code is
# cut to the lexer's cap). Each begins with a comment line of its own: no two blocks are alike,
# so none is answered from what the server keeps of a page made before.
BLOCKS = (
    ("urbiscript", "//", '"' + "\\" * 48, False),
    ("c", "//", "\n" * 19_000, False),
    ("c", "//", '"' + "\n" * 20_000, True),
    ("python", "#", " \n" * 10_000, True),
    ("javascript", "//", '\\"' * 10_000, True),
    ("csharp", "//", "a\n" * 10_000, True),
    ("ruby", "#", "a," * 10_000, True),
    ("lua", "--", "<a" * 10_000, True),
)


def block(number: int, mark: str) -> str:
    """The fenced block of hostile session ``number``, marked ``mark``."""
    alias, comment, code, to_cap = BLOCKS[number % len(BLOCKS)]
    code = f"{comment} {mark}\n{code}"
    if to_cap:
        code = code[: checked_lexers()[alias].max_chars]
    return f"```{alias}\n{code}\n```"


def agent_dir(work: Path, hostile: int) -> Path:
    """The agent dir of the module docstring, written and indexed once."""
    blocks = "".join(block(number, f"{number}") for number in range(hostile))
    agent = work / f"agent-{hostile}-{hashlib.blake2b(blocks.encode()).hexdigest()[:8]}"
    if (agent / "index.db").exists():
        return agent
    folder = agent / "sessions" / PROJECT
    folder.mkdir(parents=True)
    session_file(
        folder / "plain.jsonl",
        "plain",
        iter([message("p1", None, "what is a dependency graph?"),
              message("p2", "p1", "nodes and the edges between them")]),
    )  # fmt: skip
    for number in range(hostile):
        lines = (
            message(f"h{turn}", f"h{turn - 1}" if turn else None,
                    "look at this\n\n" + block(number, f"{number}-{turn}"))
            for turn in range(3)
        )  # fmt: skip
        session_file(folder / f"hostile{number:02d}.jsonl", f"hostile{number:02d}", lines)
    with SessionIndex.open(str(agent)) as index:
        index.sync()
    return agent


@contextmanager
def served(tree: str, agent: Path) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """``xcsh-store serve`` of ``tree`` and its port, killed (with its workers) at the end if
    it has not stopped."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "xcsh_store", "--agent-dir", str(agent), "--no-sync", "serve",
         "--json", "--port", str(port)], cwd=tree, env={**os.environ, "PYTHONPATH": tree},
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    assert process.stdout is not None and json.loads(process.stdout.readline())["url"]
    try:
        while True:  # the URL is printed just before the server listens
            try:
                socket.create_connection(("127.0.0.1", port), timeout=5).close()
                break
            except OSError:
                time.sleep(0.1)
        yield process, port
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def ask(port: int, path: str) -> float | None:
    """Seconds until ``path`` answered 200; None when it did not within ASK_SECONDS."""
    started = time.monotonic()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=ASK_SECONDS)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        response.read()
        return time.monotonic() - started if response.status == 200 else None
    except OSError:
        return None
    finally:
        connection.close()


def plain_pages(port: int, asks: int) -> list[float | None]:
    """The seconds of ``asks`` plain pages, one after the other; once one is not answered the
    server is taken as stuck, and the rest count as not answered (not waited for)."""
    found: list[float | None] = []
    while len(found) < asks:
        found.append(ask(port, "/session/plain"))
        if found[-1] is None:
            found += [None] * (asks - len(found))
    return found


@dataclass
class Figures:
    """Seconds of each plain page alone and under the hostile load (None: no answer within
    ASK_SECONDS), of each hostile page, and of the exit after SIGINT (None: not within
    STOP_SECONDS)."""

    alone: list[float | None]
    loaded: list[float | None]
    hostile: list[float | None]
    stopped: float | None


def measure(tree: str, agent: Path, hostile: int, asks: int) -> Figures:
    with served(tree, agent) as (process, port):
        ask(port, "/session/plain")  # warm: the first page loads the templates
        alone = plain_pages(port, asks)
        stop = threading.Event()
        hostile_answers: list[float | None] = []

        def keep_asking(number: int) -> None:
            while not stop.is_set():
                hostile_answers.append(ask(port, f"/session/hostile{number:02d}"))

        clients = [
            threading.Thread(target=keep_asking, args=(number,), daemon=True)
            for number in range(hostile)
        ]
        for client in clients:
            client.start()
        time.sleep(1.0)  # every hostile client has asked
        loaded = plain_pages(port, asks)
        stop.set()
        process.send_signal(signal.SIGINT)
        started = time.monotonic()
        try:
            process.wait(timeout=STOP_SECONDS)
            stopped: float | None = time.monotonic() - started
        except subprocess.TimeoutExpired:
            stopped = None
        for client in clients:
            client.join(ASK_SECONDS + 1)
    return Figures(alone, loaded, hostile_answers, stopped)


def seconds(times: list[float | None]) -> list[float]:
    """Each answer's seconds; ASK_SECONDS for one that never came."""
    return [ASK_SECONDS if taken is None else taken for taken in times]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("ref", nargs="?", default=DEFAULT_REF, help="the old code's git ref")
    parser.add_argument("--work", default=str(WORK_DIR / "web-hostile"))
    parser.add_argument("--hostile", type=int, default=10)
    parser.add_argument("--asks", type=int, default=20)
    options = parser.parse_args()
    agent = agent_dir(Path(options.work), options.hostile)
    print("load before:", os.getloadavg())
    with tempfile.TemporaryDirectory(prefix="xcsh-old-") as folder:
        commit = extract(options.ref, folder)
        new = measure(ROOT, agent, options.hostile, options.asks)
        old = measure(folder, agent, options.hostile, options.asks)
    print("load after:", os.getloadavg())
    rows: list[Row] = []
    for name, figure in (("median", statistics.median), ("slowest", max)):
        rows.append(
            compare(f"plain page alone, {name}", figure(seconds(new.alone)),
                    figure(seconds(old.alone)))
        )  # fmt: skip
        rows.append(
            compare(f"plain page, {options.hostile} hostile pages asked, {name}",
                    figure(seconds(new.loaded)), figure(seconds(old.loaded)),
                    limit=1.0 if name == "slowest" else None)
        )  # fmt: skip
    rows.append(
        compare("exit after SIGINT, under that load",
                STOP_SECONDS if new.stopped is None else new.stopped,
                STOP_SECONDS if old.stopped is None else old.stopped)
    )  # fmt: skip
    for label, found in (("new", new), ("old", old)):
        unanswered = sum(taken is None for taken in found.hostile)
        print(
            f"{label}: hostile pages answered {len(found.hostile) - unanswered}, unanswered"
            f" {unanswered}; plain pages unanswered under load"
            f" {sum(taken is None for taken in found.loaded)}; exit after SIGINT:"
            f" {'killed' if found.stopped is None else f'{found.stopped:.2f} s'}"
        )
    title = f"serve under hostile pages (bench_web_hostile.py): {current_label()} vs {options.ref}"
    print_table(rows, title=f"{title} ({commit[:7]})")


if __name__ == "__main__":
    main()
