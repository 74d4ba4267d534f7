"""Worker processes for the concurrency and crash tests: ``python tests/workers.py VERB ...``."""

from __future__ import annotations

import os
import random
import sys
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from xcsh_store.blobs import BlobStore
from xcsh_store.index import SessionIndex
from xcsh_store.jsonl import dumps
from xcsh_store.storage import FileSessionStorage


def writer(agent_dir: str, name: str, seconds: float, seed: int, pool: str) -> None:
    """Append messages (some with images, new or from a shared pool) and fsync each one."""
    rng = random.Random(seed)
    store = BlobStore(os.path.join(agent_dir, "blobs"))
    pool_blobs = [bytes.fromhex(line) for line in Path(pool).read_text().split()]
    path = os.path.join(agent_dir, "sessions", "--concurrency--", f"{name}.jsonl")
    header = {"type": "session", "version": 3, "id": name, "timestamp": "2026-01-01T00:00:00.000Z",
              "cwd": "/concurrency"}  # fmt: skip
    out = FileSessionStorage().open_writer(path, "w")
    out.write_line(dumps(header) + b"\n")
    parent = None
    count = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        entry_id = f"{seed:02x}{count:06x}"
        content: list[dict] = [{"type": "text", "text": f"{name} message {count}"}]
        if rng.random() < 0.3:
            data = rng.choice(pool_blobs) if rng.random() < 0.5 else os.urandom(64)
            content.append({"type": "image", "data": store.put(data).ref})
        entry = {"type": "message", "id": entry_id, "parentId": parent,
                 "timestamp": "2026-01-01T00:00:00.000Z",
                 "message": {"role": "user", "content": content}}  # fmt: skip
        out.write_line(dumps(entry) + b"\n")
        out.fsync()
        parent = entry_id
        count += 1
    out.close()
    print(count)


def sync_loop(agent_dir: str, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    runs = 0
    with SessionIndex.open(agent_dir) as index:
        while time.monotonic() < deadline:
            index.sync()
            runs += 1
    print(runs)


def gc_loop(agent_dir: str, seconds: float, grace: float) -> None:
    deadline = time.monotonic() + seconds
    deleted = 0
    with SessionIndex.open(agent_dir) as index:
        while time.monotonic() < deadline:
            deleted += len(index.blob_gc(apply=True, grace=timedelta(seconds=grace)).deleted)
    print(deleted)


if __name__ == "__main__":
    verb, *arguments = sys.argv[1:]
    if verb == "writer":
        writer(arguments[0], arguments[1], float(arguments[2]), int(arguments[3]), arguments[4])
    elif verb == "sync-loop":
        sync_loop(arguments[0], float(arguments[1]))
    elif verb == "gc-loop":
        gc_loop(arguments[0], float(arguments[1]), float(arguments[2]))
    else:
        raise SystemExit(f"unknown verb {verb}")
