"""A sync in its own process that reports each file it starts ("FILE") and, after ``held`` of
them, waits there (its workers running) until it is killed: a signal sent once the test has read
``held`` reports always lands mid-sync, however far the writer got meanwhile."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

_SCRIPT = """
import sys, time
from xcsh_store.index import SessionIndex
{settings}
held = int(sys.argv[3])
started = 0

def progress(done, total, path):
    global started
    started += 1
    print("FILE", flush=True)
    if started == held:
        time.sleep(600)

with SessionIndex.open(sys.argv[1], db_path=sys.argv[2]) as index:
    index.sync(workers={workers}, progress=progress)
print("DONE", flush=True)
"""


def start_held_sync(
    agent_dir: Path, db_path: Path, held: int, settings: str, workers: int
) -> subprocess.Popen[str]:
    """Start the sync; ``settings``: Python run first (the module constants a test lowers)."""
    script = _SCRIPT.format(settings=settings, workers=workers)
    return subprocess.Popen(
        [sys.executable, "-c", script, str(agent_dir), str(db_path), str(held)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        start_new_session=True,
    )


def wait_for_files(writer: subprocess.Popen[str], count: int) -> None:
    """Wait until the sync has started on ``count`` files."""
    assert writer.stdout is not None
    for _ in range(count):
        line = writer.stdout.readline()
        assert line == "FILE\n", f"the writer stopped early: {line!r} {writer.stderr.read()}"
