"""Real processes at once: writers appending, a sync loop and a GC loop; nothing may be lost."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

from xcsh_store.format.blobs import BlobStore
from xcsh_store.index import SessionIndex

WORKERS = Path(__file__).with_name("workers.py")
SECONDS = 4.0


def _start(*arguments: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(WORKERS), *arguments], stdout=subprocess.PIPE, text=True
    )


def test_writers_sync_and_gc_together_lose_nothing(agent_dir, tmp_path):
    store = BlobStore(str(agent_dir / "blobs"))
    pool = [os.urandom(48) for _ in range(20)]
    for data in pool:
        path = store.put(data).path
        os.utime(path, (time.time() - 3600, time.time() - 3600))  # old: GC candidates
    for _ in range(3):  # never referenced by anyone: the GC loop must delete these
        path = store.put(os.urandom(32)).path
        os.utime(path, (time.time() - 3600, time.time() - 3600))
    pool_file = tmp_path / "pool.txt"
    pool_file.write_text("\n".join(data.hex() for data in pool))
    (agent_dir / "sessions" / "--concurrency--").mkdir(parents=True)

    writers = [
        _start("writer", str(agent_dir), f"w{number}", str(SECONDS), str(number), str(pool_file))
        for number in range(3)
    ]
    syncer = _start("sync-loop", str(agent_dir), str(SECONDS))
    collector = _start("gc-loop", str(agent_dir), str(SECONDS), "1.0")
    written = {
        f"w{number}": int(process.communicate(timeout=60)[0])
        for number, process in enumerate(writers)
    }
    outputs = [process.communicate(timeout=60)[0] for process in (syncer, collector)]
    assert [process.returncode for process in (syncer, collector)] == [0, 0]
    sync_runs, gc_deleted = map(int, outputs)
    assert sync_runs > 1

    with SessionIndex.open(str(agent_dir)) as index:
        index.sync()
        # While files keep arriving gc may rightly refuse every time; once the writers are
        # done, a collection must get rid of the never-referenced blobs.
        final = index.blob_gc(apply=True, grace=timedelta(seconds=1))
        assert final.refused is None, final.refused
        assert gc_deleted + len(final.deleted) >= 3
        for name, count in written.items():
            assert count > 0
            session = index.find_session(name)
            assert session.message_count == count, name
        referenced = set()
        for path in (agent_dir / "sessions").rglob("*.jsonl"):
            referenced |= set(re.findall(r"blob:sha256:([0-9a-f]{64})", path.read_text()))
        missing = [digest for digest in referenced if not store.has(digest)]
        assert missing == [], "a referenced blob was deleted"
        assert index.verify().clean
