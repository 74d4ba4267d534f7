"""Worker processes for the concurrency and crash tests: ``python tests/workers.py VERB ...``."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import random
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import apsw
from store_checks import entry_ids

from xcsh_store import HistoryStorage, SessionManager
from xcsh_store.format.blobs import BlobStore
from xcsh_store.format.storage import FileSessionStorage
from xcsh_store.index import SessionIndex
from xcsh_store.js import stringify as dumps


@contextlib.contextmanager
def held_at_first_begin(
    connection: apsw.Connection, work: Callable[[], object]
) -> Iterator[list[object]]:
    """Run ``work`` (which uses ``connection``) in a thread, held at the connection's first
    BEGIN (it has read what is there and is about to take the write lock) while the block runs;
    then let it go on. The list holds its result after the block (its error is raised)."""
    reached, released = threading.Event(), threading.Event()

    def hold(cursor: apsw.Cursor, statement: str, bindings: object) -> bool:
        if statement.startswith("BEGIN") and not released.is_set():
            reached.set()
            released.wait(10)
        return True

    connection.exec_trace = hold
    outcome: list[object] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            outcome.append(work())
        except BaseException as error:
            errors.append(error)

    thread = threading.Thread(target=run)
    thread.start()
    try:
        assert reached.wait(10), "the held connection never reached its first BEGIN"
        yield outcome
    finally:
        released.set()
        thread.join(10)
        connection.exec_trace = None
    if errors:
        raise errors[0]


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


def manager_writer(agent_dir: str, name: str, seconds: float, seed: int, pool: str) -> None:
    """A session written through SessionManager: user prompts (some with images, new or from
    a shared pool of old blobs the GC wants to delete), answers, now and then a rename (a whole
    rewrite); every append flushed. Prints the file and the acknowledged entry ids as JSON."""
    os.environ["XCSH_AGENT_DIR"] = agent_dir  # the manager's blob store lives in the agent dir
    rng = random.Random(seed)
    images = [
        base64.b64encode(bytes.fromhex(line)).decode() for line in Path(pool).read_text().split()
    ]
    acknowledged = []
    deadline = time.monotonic() + seconds
    with SessionManager.create(f"/concurrency/{name}") as manager:
        count = 0
        while time.monotonic() < deadline:
            content: list[dict] = [{"type": "text", "text": f"{name} prompt {count}"}]
            if rng.random() < 0.3:
                fresh = base64.b64encode(os.urandom(1024)).decode()
                image = rng.choice(images) if rng.random() < 0.7 else fresh
                content.append({"type": "image", "data": image, "mimeType": "image/png"})
            acknowledged.append(manager.append_message({"role": "user", "content": content}))
            acknowledged.append(
                manager.append_message({"role": "assistant", "content": [], "model": name})
            )
            if rng.random() < 0.05:
                manager.set_session_name(f"{name} at {count}", "user")
            manager.flush()
            count += 1
        path = manager.get_session_file()
    print(json.dumps({"file": path, "acknowledged": acknowledged}))


def history_writer(agent_dir: str, seconds: float, seed: int) -> None:
    """Prompts added to history.db, flushed every ten; prints the acknowledged ones as JSON."""
    acknowledged: list[str] = []
    pending: list[str] = []
    deadline = time.monotonic() + seconds
    with HistoryStorage.open(os.path.join(agent_dir, "history.db")) as history:
        count = 0
        while time.monotonic() < deadline:
            prompt = f"history prompt {seed} {count}"
            history.add(prompt)
            pending.append(prompt)
            count += 1
            if count % 10 == 0:
                history.flush()
                acknowledged += pending
                pending = []
            time.sleep(0.001)
        history.flush()
        acknowledged += pending
    print(json.dumps({"acknowledged": acknowledged}))


def sync_loop(agent_dir: str, seconds: float) -> None:
    """Syncs, each followed by the reads people do meanwhile (search, recall, listing)."""
    deadline = time.monotonic() + seconds
    runs = 0
    with SessionIndex.open(agent_dir) as index:
        while time.monotonic() < deadline:
            index.sync()
            index.search("prompt")
            index.history_search("prompt")
            index.list_sessions()
            runs += 1
    print(runs)


def gc_loop(agent_dir: str, seconds: float, grace: float, count_runs: bool = False) -> None:
    """Collections back to back; prints the blobs deleted (and the collections run)."""
    deadline = time.monotonic() + seconds
    deleted = runs = 0
    with SessionIndex.open(agent_dir) as index:
        while time.monotonic() < deadline:
            deleted += len(index.blob_gc(apply=True, grace=timedelta(seconds=grace)).deleted)
            runs += 1
    print(f"{deleted} {runs}" if count_runs else deleted)


# --------------------------------------------------------------------------------------------
# The parent side of the concurrency run (tests/test_reliability_concurrency.py and
# benchmarks/stress.py)

POOL_BLOBS = 30
PLANTED_GARBAGE = 5
HOUR = 3600


@dataclass
class ConcurrencyRun:
    """What the processes did; ``operations`` counts appends, prompts, syncs and collections."""

    entries: int = 0
    prompts: int = 0
    syncs: int = 0
    collections: int = 0
    deleted_blobs: int = 0
    files: dict[str, list[str]] = field(default_factory=dict)
    prompt_texts: list[str] = field(default_factory=list)

    @property
    def operations(self) -> int:
        return self.entries + self.prompts + self.syncs + self.collections


def _start(*arguments: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, __file__, *arguments],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish(process: subprocess.Popen, seconds: float) -> str:
    """The worker's stdout; it must exit cleanly, with no lock error on its way out."""
    out, err = process.communicate(timeout=seconds + 120)
    assert process.returncode == 0, err
    assert "locked" not in err and "BusyError" not in err, err
    return out


def run_concurrently(
    agent_dir: Path, scratch: Path, seconds: float, writers: int = 3
) -> ConcurrencyRun:
    """Session writers (one per session, through SessionManager), a history writer, a sync loop
    with reads and a GC loop, all at once for ``seconds``; returns what they acknowledged."""
    store = BlobStore(str(agent_dir / "blobs"))
    pool = [os.urandom(1024) for _ in range(POOL_BLOBS)]
    for data in pool + [os.urandom(64) for _ in range(PLANTED_GARBAGE)]:
        path = store.put(data).path
        os.utime(path, (time.time() - HOUR, time.time() - HOUR))  # old: GC candidates
    pool_file = scratch / "pool.txt"
    pool_file.write_text("\n".join(data.hex() for data in pool))
    duration = str(seconds)
    session_writers = [
        _start("manager-writer", str(agent_dir), f"w{n}", duration, str(n), str(pool_file))
        for n in range(writers)
    ]
    prompts = _start("history-writer", str(agent_dir), duration, "7")
    syncer = _start("sync-loop", str(agent_dir), duration)
    collector = _start("gc-loop", str(agent_dir), duration, "1.0", "runs")
    run = ConcurrencyRun()
    for process in session_writers:
        written = json.loads(_finish(process, seconds))
        run.files[written["file"]] = written["acknowledged"]
        run.entries += len(written["acknowledged"])
    run.prompt_texts = json.loads(_finish(prompts, seconds))["acknowledged"]
    run.prompts = len(run.prompt_texts)
    run.syncs = int(_finish(syncer, seconds))
    run.deleted_blobs, run.collections = map(int, _finish(collector, seconds).split())
    return run


def check_concurrent_run(agent_dir: Path, run: ConcurrencyRun) -> None:
    """Nothing acknowledged is lost: entries in their files and in the index, prompts in
    history.db and in the index mirror; no referenced blob deleted; the planted garbage
    deleted, at the latest by a collection once the writers are done (while files keep
    arriving gc may rightly refuse every time); the index verifies."""
    assert run.syncs > 1 and run.collections > 1 and run.entries > 100 and run.prompts > 100
    for path, acknowledged in run.files.items():
        assert entry_ids(path)[: len(acknowledged)] == acknowledged, path
    history = apsw.Connection(str(agent_dir / "history.db"), flags=apsw.SQLITE_OPEN_READONLY)
    stored = {row[0] for row in history.execute("SELECT prompt FROM history")}
    history.close()
    assert set(run.prompt_texts) <= stored, "a flushed prompt is not in history.db"
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync()
        for path, acknowledged in run.files.items():
            indexed = index.tree(index.find_session(path)).entries
            assert set(acknowledged) <= set(indexed), path
        mirrored = {row[0] for row in index.connection.execute("SELECT prompt FROM history")}
        assert set(run.prompt_texts) <= mirrored, "a flushed prompt is not in the index"
        final = index.blob_gc(apply=True, grace=timedelta(seconds=1))
        assert final.refused is None, final.refused
        assert run.deleted_blobs + len(final.deleted) >= PLANTED_GARBAGE
        assert index.blob_gc().dangling == [], "a referenced blob was deleted"
        assert index.verify().clean


if __name__ == "__main__":
    verb, *arguments = sys.argv[1:]
    if verb == "writer":
        writer(arguments[0], arguments[1], float(arguments[2]), int(arguments[3]), arguments[4])
    elif verb == "sync-loop":
        sync_loop(arguments[0], float(arguments[1]))
    elif verb == "manager-writer":
        manager_writer(
            arguments[0], arguments[1], float(arguments[2]), int(arguments[3]), arguments[4]
        )
    elif verb == "history-writer":
        history_writer(arguments[0], float(arguments[1]), int(arguments[2]))
    elif verb == "gc-loop":
        gc_loop(arguments[0], float(arguments[1]), float(arguments[2]), arguments[3:] == ["runs"])
    else:
        raise SystemExit(f"unknown verb {verb}")
