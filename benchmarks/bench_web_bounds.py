"""serve over hostile and huge sessions: page sizes and the server's peak memory, this tree
beside an older one in the same run (issue 26).

    python benchmarks/bench_web_bounds.py [REF] [--work DIR] [--requests 40]

``REF`` (default ``9a06a57``, main before issue 26) is extracted with ``git archive`` into a
temporary folder, as bench_old_vs_new.py does. Both trees serve the same agent dir (read-only:
``xcsh-store serve`` as a process, ``PYTHONPATH`` at the tree), written once under ``--work``:

* 20 untitled sessions whose first message is 8 MB (a pasted log);
* 100 entries of 100 KB each in one session;
* one session of 50,000 entries.

Page sizes are the bytes of one answer. Peak memory is the server's VmHWM after ``--requests``
requests made at once for one of the session and context pages, each in a fresh server (so each
peak is its own; the old code's list pages are not asked 40 at once: that would take the old
server to tens of GB). Targets: every page at most 8 MiB (PAGE_BYTES), every peak at most 300
MB.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_old_vs_new import current_label, extract
from benchmarks.harness import Row, compare, print_table
from benchmarks.index_common import WORK_DIR
from benchmarks.index_compare import ROOT
from xcsh_store.index import SessionIndex
from xcsh_store.js import stringify

DEFAULT_REF = "9a06a57"
PROJECT = "--home-dev-src--"
TIMEOUT = 600.0


def message(entry_id: str, parent: str | None, text: str) -> bytes:
    record = {
        "type": "message", "id": entry_id, "parentId": parent,
        "timestamp": "2026-01-01T00:00:00.000Z",
        "message": {"role": "user", "content": [{"type": "text", "text": text}]},
    }  # fmt: skip
    return stringify(record) + b"\n"


def session_file(path: Path, session_id: str, lines: Iterator[bytes]) -> None:
    header = {"type": "session", "version": 3, "id": session_id, "cwd": "/home/dev/src",
              "timestamp": "2026-01-01T00:00:00.000Z"}  # fmt: skip
    with open(path, "wb") as handle:
        handle.write(stringify(header) + b"\n")
        handle.writelines(lines)


def linear(count: int, size: int) -> Iterator[bytes]:
    for number in range(count):
        parent = f"e{number - 1:05d}" if number else None
        yield message(f"e{number:05d}", parent, f"{number} " + "w" * size)


def hostile_agent_dir(work: Path) -> Path:
    """The agent dir of the module docstring, written and indexed once."""
    agent = work / "agent"
    if (agent / "index.db").exists():
        return agent
    shutil.rmtree(agent, ignore_errors=True)
    folder = agent / "sessions" / PROJECT
    folder.mkdir(parents=True)
    for number in range(20):
        session_file(folder / f"log{number:02d}.jsonl", f"log{number:02d}", linear(1, 8_000_000))
    session_file(folder / "wide.jsonl", "wide", linear(100, 100_000))
    session_file(folder / "long.jsonl", "long", linear(50_000, 10))
    with SessionIndex.open(str(agent)) as index:
        index.sync()
    return agent


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def served(tree: str, agent: Path) -> Iterator[tuple[int, int]]:
    """(port, pid) of ``xcsh-store serve`` run with the code of ``tree``."""
    port = free_port()
    environment = {**os.environ, "PYTHONPATH": tree}
    process = subprocess.Popen(
        [sys.executable, "-m", "xcsh_store", "--agent-dir", str(agent), "serve", "--json",
         "--port", str(port)], cwd=tree, env=environment, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    assert process.stdout is not None and json.loads(process.stdout.readline())["url"]
    try:
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=5).close()
                break
            except OSError:
                time.sleep(0.1)
        yield port, process.pid
    finally:
        process.terminate()
        process.wait(timeout=TIMEOUT)


def get(port: int, path: str) -> tuple[int, int]:
    """(status, bytes) of one GET."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        return response.status, len(response.read())
    finally:
        connection.close()


def peak_rss(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(status.split("VmHWM:")[1].split()[0]) * 1024


def pages(agent: Path) -> dict[str, str]:
    folder = agent / "sessions" / PROJECT
    return {
        "sessions list (20 × 8 MB first messages)": "/",
        "sessions list sorted by messages": "/?sort=messages",
        "session of an 8 MB message": f"/session?path={folder / 'log00.jsonl'}",
        "session of 100 × 100 KB entries": f"/session?path={folder / 'wide.jsonl'}",
        "session of 50,000 entries": f"/session?path={folder / 'long.jsonl'}",
        "context of 50,000 entries": f"/context?path={folder / 'long.jsonl'}",
    }


# The pages asked for many times at once.
AT_ONCE = (
    "session of 100 × 100 KB entries",
    "session of 50,000 entries",
    "context of 50,000 entries",
)


def measure(tree: str, agent: Path, requests: int) -> dict[str, dict[str, int]]:
    """Bytes of each page; the peak memory of ``requests`` requests at once for AT_ONCE."""
    figures: dict[str, dict[str, int]] = {"bytes": {}, "rss": {}}
    with served(tree, agent) as (port, _pid):
        for name, path in pages(agent).items():
            status, size = get(port, path)
            figures["bytes"][name] = size if status == 200 else -status
    for name in AT_ONCE:
        path = pages(agent)[name]
        with served(tree, agent) as (port, pid), ThreadPoolExecutor(requests) as pool:
            list(pool.map(get, [port] * requests, [path] * requests))
            figures["rss"][name] = peak_rss(pid)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("ref", nargs="?", default=DEFAULT_REF, help="the old code's git ref")
    parser.add_argument("--work", default=str(WORK_DIR / "web-bounds"))
    parser.add_argument("--requests", type=int, default=40)
    options = parser.parse_args()
    agent = hostile_agent_dir(Path(options.work))
    print("load before:", os.getloadavg())
    with tempfile.TemporaryDirectory(prefix="xcsh-old-") as folder:
        commit = extract(options.ref, folder)
        new = measure(ROOT, agent, options.requests)
        old = measure(folder, agent, options.requests)
    print("load after:", os.getloadavg())
    rows: list[Row] = []
    for name in pages(agent):
        rows.append(compare(f"bytes: {name}", new["bytes"][name], old["bytes"][name], unit="B",
                            limit=8 << 20))  # fmt: skip
    for name in AT_ONCE:
        rows.append(compare(f"peak RSS, {options.requests} at once: {name}", new["rss"][name],
                            old["rss"][name], unit="B", limit=300e6))  # fmt: skip
    title = f"serve bounds (bench_web_bounds.py): {current_label()} vs {options.ref} ({commit[:7]})"
    print_table(rows, title=title)


if __name__ == "__main__":
    main()
