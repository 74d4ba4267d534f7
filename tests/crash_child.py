"""SIGKILL crash check for SessionManager: a child appends and flushes, the parent kills it.

Run as a script it is the child: ``python crash_child.py <session_dir> <seed>``. It appends
entries in batches and reports on stdout ``A <id>`` after each append and ``F <n>`` once the
first ``n`` entries are flushed. :func:`kill_and_check` is the parent side, shared by
``tests/test_crash.py`` and ``benchmarks/bench_manager.py --kills``.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CHILD_CWD = "/work/crash"


def child(session_dir: str, seed: int) -> None:
    sys.path.insert(0, str(REPO))
    from xcsh_store import SessionManager

    rng = random.Random(seed)
    out = sys.stdout
    manager = SessionManager.create(CHILD_CWD, session_dir=session_dir)
    appended = 0

    def report(entry_id: str) -> None:
        nonlocal appended
        appended += 1
        out.write(f"A {entry_id}\n")
        out.flush()  # unbuffered, so that every report made before the kill reaches the parent

    report(manager.append_message({"role": "user", "content": "start", "timestamp": 0}))
    report(manager.append_message({"role": "assistant", "content": [], "timestamp": 1}))
    manager.flush()
    out.write(f"READY {manager.get_session_file()}\nF {appended}\n")
    out.flush()
    batch_number = 0
    while True:
        batch_number += 1
        for _ in range(rng.randint(1, 20)):
            kind = rng.random()
            if kind < 0.05:
                # Large entries make a kill in the middle of a write likely.
                text = "y" * rng.randint(50_000, 300_000)
                entry_id = manager.append_message({"role": "user", "content": text})
            elif kind < 0.1 and manager.get_leaf_id():
                entry_id = manager.append_label_change(manager.get_leaf_id(), f"l{batch_number}")
            else:
                entry_id = manager.append_custom_entry("tick", {"batch": batch_number})
            report(entry_id)
        manager.flush()
        out.write(f"F {appended}\n")
        out.flush()
        if batch_number % 7 == 0:
            # A full atomic rewrite, to be killed in the middle of now and then.
            manager.set_session_name(f"batch {batch_number}", "user")


@dataclass
class CrashResult:
    appended: int  # appends the child reported
    flushed: int  # entries the child reported as flushed before it died
    on_disk: int  # entries found in the file after the kill


def kill_and_check(session_dir: Path, seed: int, max_delay: float = 0.15) -> CrashResult:
    """Start a child, SIGKILL it at a random moment, and check the file it leaves behind.

    Raises AssertionError when the file does not load, an acknowledged (flushed) entry is
    missing, or the file's entries are not exactly the first entries the child appended.
    """
    session_dir.mkdir(parents=True, exist_ok=True)
    errors = session_dir / "child.stderr"
    with open(errors, "wb") as stderr:
        process = subprocess.Popen(
            [sys.executable, __file__, str(session_dir), str(seed)],
            stdout=subprocess.PIPE,
            stderr=stderr,
        )
    assert process.stdout is not None
    before_ready = []
    while True:
        line = process.stdout.readline().decode()
        if line.startswith("READY ") or not line:
            break
        before_ready.append(line)
    if not line:
        process.kill()
        process.wait()
        raise AssertionError(f"child did not start: {errors.read_text()}")
    session_file = line.split(" ", 1)[1].strip()
    time.sleep(random.Random(seed).uniform(0, max_delay))
    process.send_signal(signal.SIGKILL)
    # Read through the same buffered reader: readline() may already hold the next lines.
    rest = process.stdout.read()
    process.wait()
    appended: list[str] = []
    flushed = 0
    lines = "".join(before_ready).split("\n")[:-1] + rest.decode().split("\n")
    for line in lines[:-1]:  # the last piece may be a line cut by the kill
        tag, _, value = line.partition(" ")
        if tag == "A":
            appended.append(value)
        elif tag == "F":
            flushed = int(value)
    return _check_file(session_file, appended, flushed)


def _check_file(session_file: str, appended: list[str], flushed: int) -> CrashResult:
    sys.path.insert(0, str(REPO))
    from xcsh_store import load_entries_from_file

    records = load_entries_from_file(session_file)
    assert records, f"{session_file} does not load after the kill"
    assert records[0]["type"] == "session", "the header is not the first line"
    on_disk = [record["id"] for record in records[1:]]
    # The child reports an append after it returns, so at most one entry on disk is unreported.
    assert len(on_disk) <= len(appended) + 1, "the file holds entries that were never appended"
    assert on_disk[: len(appended)] == appended[: len(on_disk)], "entries lost or reordered"
    assert len(on_disk) >= flushed, f"flushed entries lost: {len(on_disk)} on disk < {flushed}"
    return CrashResult(len(appended), flushed, len(on_disk))


if __name__ == "__main__":
    os.environ.setdefault("XCSH_TERMINAL_ID", "crash-child")
    child(sys.argv[1], int(sys.argv[2]))
