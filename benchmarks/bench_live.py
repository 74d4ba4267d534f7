"""watch and serve: freshness, idle cost and page times, each beside a baseline of the same run.

    python benchmarks/bench_live.py [--work DIR] [--appends 200]
                                    [--idle 60] [--requests 40]

* Freshness (issue 19: p95 ≤ 250 ms): ``xcsh-store watch`` over a copy of the 10,000-file
  corpus (agent-200mb-10000 of index_common.agent_corpus) while one writer appends a
  message with a new word to a session every 50 ms; each append's time until a search (a
  read-only index in this process, polled every 2 ms) finds the word. Baseline: the same
  append made searchable by one incremental ``sync`` in this process (the work itself,
  without events and debounce).
* Idle cost (≤ 1 % of one core, no session bytes read, RSS ≤ 80 MB): the same watcher left alone
  for ``--idle`` seconds: CPU time from /proc/<pid>/stat, bytes read from /proc/<pid>/io
  (``rchar``: every read system call, cached or not), RSS. Baseline: a Python interpreter that
  imported the same modules and sleeps.
* Web (server time p95 ≤ 50 ms): the app's list, search and session pages over a copy of the
  1 GB corpus (agent-1gb-2000, indexed once), requested in process through the
  ASGI test client (no sockets); baseline: the library calls that answer the same question
  (list_sessions, search, branch rows) without the HTML.

The corpora are copied (never written in place) under ``--work``; a copy is made once.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import random
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness import compare, io_counters, percentile, print_table
from benchmarks.index_common import WORK_DIR, agent_corpus
from xcsh_store.index import SessionIndex

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def copied(source: str, work: Path, name: str) -> str:
    """A synced copy of the corpus at ``source`` (made and indexed once)."""
    target = work / name
    if not (target / "index.db").exists():
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(source, target)
        with SessionIndex.open(str(target)) as index:
            index.sync()
    return str(target)


# -- freshness and idle cost ------------------------------------------------------------------


class Watcher:
    """``xcsh-store watch --json`` as a process, and its lines."""

    def __init__(self, agent_dir: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "xcsh_store", "--agent-dir", agent_dir, "watch", "--json"],
            stdout=subprocess.PIPE,
        )
        self.lines: queue.Queue[dict[str, Any]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        while self.lines.get(timeout=600)["change"] != "synced":
            pass

    def _read(self) -> None:
        assert self.process.stdout is not None
        for raw in self.process.stdout:
            self.lines.put(json.loads(raw))

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime

    def rss(self) -> int:
        return rss_of(self.process.pid)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=60)


def rss_of(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def appended_line(entry_id: str, parent: str, word: str) -> bytes:
    return (
        json.dumps(
            {
                "type": "message",
                "id": entry_id,
                "parentId": parent,
                "timestamp": "2026-12-01T12:00:00.000Z",
                "message": {"role": "user", "content": [{"type": "text", "text": word}]},
            }
        ).encode()
        + b"\n"
    )


def session_to_grow(agent_dir: str) -> tuple[str, str]:
    with SessionIndex.open(agent_dir, read_only=True) as index:
        session = index.list_sessions(limit=1)[0]
        return session.path, session.last_entry_id or ""


def freshness(agent_dir: str, appends: int) -> tuple[list[float], list[float]]:
    """(watch latencies, baseline latencies) in seconds, one per append."""
    path, parent = session_to_grow(agent_dir)
    # New words and ids on every run: a copy benchmarked before holds those of earlier runs.
    run = os.urandom(4).hex()
    # Baseline first, with no watcher: append, then one incremental sync in this process.
    baseline = []
    with SessionIndex.open(agent_dir) as writer:
        for number in range(20):
            word, entry_id = f"basefresh{run}x{number}", f"b{run}x{number}"
            started = time.perf_counter()
            with open(path, "ab") as handle:
                handle.write(appended_line(entry_id, parent, word))
            writer.sync(workers=1)
            baseline.append(time.perf_counter() - started)
            parent = entry_id
            time.sleep(0.05)
    watcher = Watcher(agent_dir)
    appended: dict[str, float] = {}
    found: dict[str, float] = {}
    done = threading.Event()

    def write() -> None:
        nonlocal parent
        for number in range(appends):
            word, entry_id = f"watchfresh{run}x{number}", f"w{run}x{number}"
            with open(path, "ab") as handle:
                handle.write(appended_line(entry_id, parent, word))
            appended[word] = time.perf_counter()
            parent = entry_id
            time.sleep(0.05)
        done.set()

    writer = threading.Thread(target=write)
    with SessionIndex.open(agent_dir, read_only=True) as reader:
        writer.start()
        deadline = time.monotonic() + appends * 0.05 + 120
        while (not done.is_set() or len(found) < len(appended)) and time.monotonic() < deadline:
            for word in [word for word in list(appended) if word not in found]:
                if reader.search(word, limit=1):
                    found[word] = time.perf_counter()
            time.sleep(0.002)
        writer.join()
    watcher.stop()
    latencies = [found[word] - appended[word] for word in appended if word in found]
    missing = len(appended) - len(latencies)
    if missing:
        print(f"freshness: {missing} appends never became searchable", file=sys.stderr)
    return latencies, baseline


def idle_cost(agent_dir: str, seconds: float) -> dict[str, float]:
    watcher = Watcher(agent_dir)
    time.sleep(2)  # past the first sync's tail
    cpu, io = watcher.cpu_seconds(), io_counters(watcher.process.pid)
    time.sleep(seconds)
    cpu_after, io_after = watcher.cpu_seconds(), io_counters(watcher.process.pid)
    result = {
        "cpu_percent": 100 * (cpu_after - cpu) / seconds,
        "rchar": io_after["rchar"] - io["rchar"],
        "read_bytes": io_after["read_bytes"] - io["read_bytes"],
        "rss": watcher.rss(),
    }
    watcher.stop()
    sleeper = subprocess.Popen(
        [sys.executable, "-c",
         "import time, watchfiles, xcsh_store.index, xcsh_store.watch; time.sleep(600)"],
    )  # fmt: skip
    time.sleep(3)
    result["baseline_rss"] = rss_of(sleeper.pid)
    sleeper.terminate()
    sleeper.wait()
    return result


# -- web ----------------------------------------------------------------------------------------


def web_times(agent_dir: str, requests: int) -> list[tuple[str, list[float], list[float]]]:
    """(page, page times, library times) for the list, search and session pages."""
    from starlette.testclient import TestClient

    from xcsh_store.web import create_app

    client = TestClient(create_app(agent_dir), base_url="http://127.0.0.1")
    with SessionIndex.open(agent_dir, read_only=True) as index:
        sessions = index.list_sessions()
        chosen = random.Random(7).sample(sessions, min(requests, len(sessions)))
        paths = [session.path for session in chosen]
        words = []
        for session in chosen[:10]:
            words += re.findall(r"[a-z]{5,}", (session.title or "").lower())[:1]
        words = words or ["error"]

    def timed(call: Any) -> float:
        started = time.perf_counter()
        call()
        return time.perf_counter() - started

    def list_library() -> None:
        with SessionIndex.open(agent_dir, read_only=True) as index:
            [session.modified for session in index.list_sessions()[:50]]

    results = []
    page = [timed(lambda: client.get("/").raise_for_status()) for _ in range(requests)]
    library = [timed(list_library) for _ in range(requests)]
    results.append(("sessions list (page 1 of all)", page, library))

    def search_library(word: str) -> None:
        with SessionIndex.open(agent_dir, read_only=True) as index:
            index.search(word, limit=50)

    queries = [words[number % len(words)] for number in range(requests)]
    page = [timed(lambda q=q: client.get("/search", params={"q": q}).raise_for_status())
            for q in queries]  # fmt: skip
    library = [timed(lambda q=q: search_library(q)) for q in queries]
    results.append((f"search ({len(set(words))} words, 50 hits)", page, library))

    def session_library(path: str) -> None:
        with SessionIndex.open(agent_dir, read_only=True) as index:
            info = index.find_session(path)
            index.tree(info)
            index.branch(info)

    page = [timed(lambda p=p: client.get("/session", params={"path": p}).raise_for_status())
            for p in paths]  # fmt: skip
    library = [timed(lambda p=p: session_library(p)) for p in paths]
    results.append((f"session page ({len(paths)} sessions)", page, library))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", default=str(WORK_DIR / "live"))
    parser.add_argument("--appends", type=int, default=200)
    parser.add_argument("--idle", type=float, default=60.0)
    parser.add_argument("--requests", type=int, default=40)
    options = parser.parse_args()
    work = Path(options.work)
    work.mkdir(parents=True, exist_ok=True)
    print("load before:", os.getloadavg())

    small = copied(agent_corpus("200MB", 10_000).agent_dir, work, "w10k")
    latencies, baseline = freshness(small, options.appends)
    idle = idle_cost(small, options.idle)
    large = copied(agent_corpus("1GB", 2000).agent_dir, work, "w1gb")
    web = web_times(large, options.requests)
    print("load after:", os.getloadavg())

    rows = [
        compare("freshness p50 (append → searchable)", percentile(latencies, 50),
                percentile(baseline, 50)),
        compare("freshness p95, 10,000 files, a write every 50 ms", percentile(latencies, 95),
                percentile(baseline, 95), limit=0.25),
        compare(f"idle CPU over {options.idle:g} s (% of one core)", idle["cpu_percent"],
                unit="%", limit=1.0),
        compare(f"idle bytes read over {options.idle:g} s (rchar)", idle["rchar"], unit="B",
                limit=0),
        compare("idle RSS", idle["rss"], idle["baseline_rss"], unit="B", limit=80e6),
    ]  # fmt: skip
    for name, page, library in web:
        rows.append(
            compare(f"web p95: {name}", percentile(page, 95), percentile(library, 95),
                    limit=0.05)
        )  # fmt: skip
    print(f"freshness: {len(latencies)} appends, max {max(latencies) * 1e3:.0f} ms")
    print(f"idle: read_bytes {idle['read_bytes']}, rchar {idle['rchar']}")
    print_table(rows, title="watch and serve (bench_live.py)")


if __name__ == "__main__":
    main()
