"""serve's session page as the conversation, and search as you type: server times, each beside
a baseline of the same run (issue 30).

    python benchmarks/bench_web_render.py [--work DIR] [--entries 50000] [--size 1GB]
                                          [--sessions 2000] [--requests 60]

* Page render (p95): the session page of one session of ``--entries`` entries written as real
  conversations are (user questions; assistant answers in markdown with a code block and a tool
  call; tool results of 30 lines, folded), at ``--requests`` windows spread over its branch,
  requested in process through the ASGI test client, each beside its baseline (interleaved,
  so that the machine's load moves both alike). Baseline: the same window read by the
  library (``pages.session_page``: the tree, the branch, the window's lines) without the HTML,
  so the ratio is what markdown, highlighting, sanitising and the template add.
* Search as you type (p95 ≤ 100 ms): over the ``--size`` corpus (agent-1gb-2000 of
  index_common.agent_corpus, indexed once), each of its common and rare words typed a letter
  at a time from the third, each prefix one request for the search page as the page's script
  asks it (all filters empty). Baseline: ``SessionIndex.search`` for the same text, 50 hits.

The 50,000-entry session and the corpus copy are written once under ``--work``.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness import compare, percentile, print_table
from benchmarks.index_common import WORK_DIR, agent_corpus
from xcsh_store.index import SessionIndex
from xcsh_store.js import stringify

ANSWER = (
    "## Step {number}\n\nThe **flux** value is `{number}`; see the table:\n\n"
    "| part | state |\n|---|---|\n| clock | ok |\n\n"
    "```python\ndef charge(gigawatts: float) -> float:\n    return gigawatts * {number}\n```\n"
)
OUTPUT = "\n".join(f"{number:>4}  src/module_{number}.py: ok" for number in range(30))


def record(entry_id: str, parent: str | None, message: dict[str, Any], minute: int) -> bytes:
    stamp = f"2026-01-{1 + minute // 1440 % 28:02d}T{minute // 60 % 24:02d}:{minute % 60:02d}:00Z"
    value = {"type": "message", "id": entry_id, "parentId": parent, "timestamp": stamp,
             "message": message}  # fmt: skip
    return stringify(value) + b"\n"


def conversation_agent_dir(work: Path, entries: int) -> Path:
    """An agent dir with the one session of ``entries`` entries, indexed (written once)."""
    agent = work / f"render-agent-{entries}"
    if (agent / "index.db").exists():
        return agent
    shutil.rmtree(agent, ignore_errors=True)
    folder = agent / "sessions" / "--home-dev-src--"
    folder.mkdir(parents=True)
    header = {"type": "session", "version": 3, "id": "sess-50k", "cwd": "/home/dev/src",
              "timestamp": "2026-01-01T00:00:00Z"}  # fmt: skip
    with open(folder / "long.jsonl", "wb") as handle:
        handle.write(stringify(header) + b"\n")
        parent = None
        for number in range(entries):
            entry_id = f"e{number:05d}"
            kind = number % 3
            if kind == 0:
                message = {"role": "user", "content": [
                    {"type": "text", "text": f"What does step {number} change?"}]}  # fmt: skip
            elif kind == 1:
                message = {"role": "assistant", "provider": "anthropic", "model": "claude-x",
                           "content": [
                               {"type": "text", "text": ANSWER.format(number=number)},
                               {"type": "toolCall", "id": f"c{number}", "name": "bash",
                                "arguments": {"command": f"pytest -q tests/test_{number}.py"}},
                           ]}  # fmt: skip
            else:
                message = {"role": "toolResult", "toolCallId": f"c{number - 1}",
                           "toolName": "bash",
                           "content": [{"type": "text", "text": OUTPUT}]}  # fmt: skip
            handle.write(record(entry_id, parent, message, number))
            parent = entry_id
    with SessionIndex.open(str(agent)) as index:
        index.sync()
    return agent


def timed(call: Callable[[], Any]) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def render_times(agent: Path, entries: int, requests: int) -> tuple[list[float], list[float]]:
    from starlette.testclient import TestClient

    from xcsh_store.web import create_app, pages

    client = TestClient(create_app(str(agent)), base_url="http://127.0.0.1")
    starts = [number * (entries // requests) for number in range(requests)]
    client.get("/session/sess-50k").raise_for_status()  # the templates compiled, the file cached

    def library(start: int) -> None:
        with SessionIndex.open(str(agent), read_only=True) as index:
            pages.session_page(index, index.find_session("sess-50k"), start=start)

    # Interleaved, so that the machine's load moves both alike.
    page, baseline = [], []
    for start in starts:
        page.append(timed(lambda start=start: client.get(
            "/session/sess-50k", params={"start": start}).raise_for_status()))  # fmt: skip
        baseline.append(timed(lambda start=start: library(start)))
    return page, baseline


def typing_times(agent_dir: str, words: list[str]) -> tuple[list[float], list[float], int]:
    """Each word typed from its third letter: (page times, library times, requests)."""
    from starlette.testclient import TestClient

    from xcsh_store.web import create_app

    client = TestClient(create_app(agent_dir), base_url="http://127.0.0.1")
    typed = [word[:length] for word in words for length in range(3, len(word) + 1)]
    filters = {"project": "", "agent": "", "role": "", "model": "", "since": ""}
    client.get("/search", params={"q": "warm", **filters}).raise_for_status()

    def library(text: str) -> None:
        with SessionIndex.open(agent_dir, read_only=True) as index:
            index.search(text, limit=50)

    page, baseline = [], []
    for text in typed:
        page.append(timed(lambda text=text: client.get(
            "/search", params={"q": text, **filters}).raise_for_status()))  # fmt: skip
        baseline.append(timed(lambda text=text: library(text)))
    return page, baseline, len(typed)


def copied(source: str, work: Path) -> str:
    """A copy of the corpus's agent dir under ``work``, indexed (made once)."""
    target = work / f"typing-{Path(source).name}"
    if not (target / "index.db").exists():
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(source, target)
        with SessionIndex.open(str(target)) as index:
            index.sync()
    return str(target)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", default=str(WORK_DIR / "web-render"))
    parser.add_argument("--entries", type=int, default=50_000)
    parser.add_argument("--size", default="1GB")
    parser.add_argument("--sessions", type=int, default=2000)
    parser.add_argument("--requests", type=int, default=60)
    options = parser.parse_args()
    work = Path(options.work)
    work.mkdir(parents=True, exist_ok=True)
    print("load before:", os.getloadavg())
    agent = conversation_agent_dir(work, options.entries)
    page, baseline = render_times(agent, options.entries, options.requests)
    corpus = agent_corpus(options.size, options.sessions)
    words = list(corpus.common_words[:6]) + list(corpus.rare_words)[:6]
    random.Random(30).shuffle(words)
    typing, typing_baseline, typed = typing_times(copied(corpus.agent_dir, work), words)
    print("load after:", os.getloadavg())
    rows = [
        compare(f"session page p95, {options.entries:,} entries ({options.requests} windows)",
                percentile(page, 95), percentile(baseline, 95)),
        compare("session page p50", percentile(page, 50), percentile(baseline, 50)),
        compare(f"search as you type p95 ({typed} prefixes of {len(words)} words,"
                f" {options.size})", percentile(typing, 95), percentile(typing_baseline, 95),
                limit=0.1),
        compare("search as you type p50", percentile(typing, 50),
                percentile(typing_baseline, 50)),
    ]  # fmt: skip
    print_table(rows, title="session page and search as you type (bench_web_render.py)")


if __name__ == "__main__":
    main()
