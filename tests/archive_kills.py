"""SIGKILL during a sync that archives: a child syncs a home of real agent sessions again and
again while some of them grow, the parent kills it at a random moment of a sync.

Run as a script it is the child: ``python archive_kills.py HOME AGENT_DIR SEED`` (its
environment points every agent's folder into HOME). It prints ``READY``, then for each round
``BEGIN <k>`` before its sync and ``DONE <k>`` after it. The files it appends to are those
whose name :func:`grows` takes; the others it never touches. :func:`kill_during_sync` is the
parent side, :func:`archive_disagreements` what the parent checks afterwards.
"""

from __future__ import annotations

import hashlib
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from xcsh_store.index import SessionIndex
from xcsh_store.index.archive.folder import ArchiveFolder
from xcsh_store.index.archive.frames import piece_bytes
from xcsh_store.index.write import pipeline

# How long a sync of the home takes here, about (the kill comes within that much of its start).
SYNC_SECONDS = 1.5
HANG_SECONDS = 120.0


def grows(path: Path) -> bool:
    """Whether the child appends to this file (one in three, by the hash of its name)."""
    return path.suffix == ".jsonl" and hashlib.sha1(path.name.encode()).digest()[0] % 3 == 0


def _child(home: Path, agent_dir: str, seed: int) -> None:
    rng = random.Random(seed)
    growing = sorted(path for path in home.rglob("*.jsonl") if grows(path))
    # Workers for however little there is, in small chunks: many moments to be killed in.
    pipeline.PARALLEL_MIN_BYTES = 0
    pipeline.WORKER_CHUNK_BYTES = 64 << 10
    with SessionIndex.open(agent_dir) as index:
        print("READY", flush=True)
        round_number = 0
        while True:
            round_number += 1
            for path in rng.sample(growing, min(3, len(growing))):
                last = path.read_bytes().splitlines(keepends=True)[-1]
                with open(path, "ab") as stream:
                    stream.write(last if last.endswith(b"\n") else b"\n" + last)
            print(f"BEGIN {round_number}", flush=True)
            index.sync(full=round_number % 3 == 0, workers=2 if round_number % 2 else 1)
            print(f"DONE {round_number}", flush=True)


def kill_during_sync(home: Path, agent_dir: Path, seed: int) -> int:
    """Start a child, SIGKILL it at a random moment of one of its first syncs; returns the
    round it was killed in."""
    rng = random.Random(seed)
    kill_in_round = rng.randint(1, 3)
    process = subprocess.Popen(
        [sys.executable, __file__, str(home), str(agent_dir), str(seed)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "XCSH_AGENT_DIR": str(agent_dir)},
    )
    assert process.stdout is not None and process.stderr is not None
    begin = f"BEGIN {kill_in_round}\n"
    deadline = time.monotonic() + HANG_SECONDS
    line = ""
    while line != begin and time.monotonic() < deadline:
        line = process.stdout.readline().decode()
        if not line:
            process.wait()
            raise AssertionError(f"the child ended: {process.stderr.read().decode()}")
    time.sleep(rng.uniform(0, SYNC_SECONDS))
    process.send_signal(signal.SIGKILL)
    process.wait()
    for stream in (process.stdout, process.stderr):
        stream.close()
    return kill_in_round


def archive_disagreements(agent_dir: Path) -> list[str]:
    """Where the index and the archive disagree: each file's indexed bytes are its archive's,
    no more and no fewer, and they are the file's own first bytes (the files only grow)."""
    found = []
    folder = ArchiveFolder(str(agent_dir / "archive"))
    with SessionIndex.open(str(agent_dir), read_only=True) as index:
        rows = index.connection.execute(
            "SELECT f.path, f.indexed_bytes, f.status, a.name, a.version, a.source_bytes,"
            " a.archive_bytes, a.kind FROM files AS f LEFT JOIN archived AS a ON a.file_id = f.id"
            " WHERE f.root NOT LIKE ?",
            (f"{agent_dir}%",),
        ).fetchall()
    for path, indexed, status, name, version, held, size, kind in rows:
        if name is None:
            if status == "ok" and indexed:
                found.append(f"{path}: {indexed} bytes indexed, none archived")
            continue
        if kind != "append":
            continue
        if held != indexed:
            found.append(f"{path}: {indexed} bytes indexed, {held} archived")
            continue
        contents = folder.contents(name, version)
        pieces = [piece for piece in contents.pieces if piece.at + piece.size <= size]
        with folder.opened(name, version) as descriptor:
            data = b"".join(piece_bytes(descriptor, piece) for piece in pieces)
        if data != Path(path).read_bytes()[:held]:
            found.append(f"{path}: the archive is not the file's first {held} bytes")
    return found


if __name__ == "__main__":
    _child(Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]))
