"""Kill points: a child process repeats one whole-file operation, the parent SIGKILLs it.

Run as a script it is the child: ``python kill_points.py POINT AGENT_DIR SEED``. It sets up
what it needs, prints ``READY``, then loops, reporting on stdout ``A <id>`` after each append,
``F <n>`` once the first ``n`` appends are flushed, ``BEGIN <point> <k>`` before its k-th
operation and ``DONE <point> <k> [<path>]`` after it. :func:`kill_once` and the ``check_*``
functions are the parent side, shared by ``tests/test_reliability_crash.py`` and
``benchmarks/stress.py``.

Kill points (each one a loop of that operation, with appends in between):

* ``rewrite``: ``rewrite_entries()`` of a 3 MB session after changing every entry in place;
* ``rename``: ``set_session_name()`` (a whole atomic rewrite);
* ``move``: ``move_to()`` back and forth between two project folders, artifacts included;
* ``fork``: ``fork()`` (a new file written whole, the artifact folder copied);
* ``sync``: ``SessionIndex.sync()`` of a corpus, full and incremental, while files grow;
* ``sync-writer``: a full sync that reads in two worker processes, the writer (the child)
  killed: its workers must exit on their own;
* ``sync-worker``: the same sync with one of its workers killed instead: the sync must stop
  with an error (``DIED <point> <k>``) and the child's next sync must complete;
* ``stale``: ``SessionIndex.sync()`` after a quarter of the files lost their last line or got it
  back: the rows of the ones read whole again go stale, and the sync deletes them
  (index/write/stale_search.py; here whatever their share);
* ``gc``: ``blob_gc(apply=True)`` deleting hundreds of unreferenced blobs.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from session_builder import copy_fixtures, random_tree_session, sessions_dir
from store_checks import blob_files_are_whole

from xcsh_store import BlobStore, SessionManager, load_entries_from_file
from xcsh_store.index import SessionIndex
from xcsh_store.index.upkeep.gc import QUARANTINE_PREFIX
from xcsh_store.index.write import pipeline, stale_search
from xcsh_store.index.write.pipeline import SyncWorkerError
from xcsh_store.js import stringify as dumps

MANAGER_POINTS = ("rewrite", "rename", "move", "fork")
PARALLEL_SYNC_POINTS = ("sync-writer", "sync-worker")
INDEX_POINTS = ("sync", *PARALLEL_SYNC_POINTS, "stale", "gc")
POINTS = MANAGER_POINTS + INDEX_POINTS
# About how long one operation takes here (seconds): the kill comes at a random moment within
# that much time after the child says it begins one (for a parallel sync: after its workers
# are seen).
OPERATION_SECONDS = {
    "rewrite": 0.03, "rename": 0.005, "move": 0.006, "fork": 0.008, "sync": 0.08,
    "sync-writer": 0.3, "sync-worker": 0.3, "stale": 0.04, "gc": 0.08,
}  # fmt: skip
# How long the parent waits for something that should happen at once (a bound for a hang,
# never a measurement): a killed writer's workers to exit, a writer to notice a dead worker.
HANG_SECONDS = 120.0
LEFT, RIGHT = "/work/left", "/work/right"
GC_BLOBS_PER_ROUND = 1000
OLD = 7200  # seconds: older than every grace period and temp-file age
BLOB_REF = re.compile(r"blob:sha256:([0-9a-f]{64})")


# --------------------------------------------------------------------------------------------
# The child


class _Reporter:
    def __init__(self) -> None:
        self.appended = 0

    @staticmethod
    def say(line: str) -> None:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()  # every report made before the kill must reach the parent

    def appended_entry(self, entry_id: str) -> None:
        self.appended += 1
        self.say(f"A {entry_id}")

    def flushed(self) -> None:
        self.say(f"F {self.appended}")


def _run_folder(agent_dir: str, point: str, seed: int) -> str:
    return os.path.join(agent_dir, "sessions", f"--{point}-{seed}--")


def _manager_child(point: str, agent_dir: str, seed: int) -> None:
    rng = random.Random(seed)
    report = _Reporter()
    if point == "move":
        manager = SessionManager.create(LEFT)  # in the default folders, to move between them
    else:
        manager = SessionManager.create(f"/work/{point}", _run_folder(agent_dir, point, seed))
    report.appended_entry(manager.append_message({"role": "user", "content": "start"}))
    report.appended_entry(manager.append_message({"role": "assistant", "content": []}))
    size = 150 if point == "rewrite" else 20
    for number in range(size):
        report.appended_entry(
            manager.append_custom_entry("bulk", {"n": number, "pad": "p" * 20_000})
        )
    manager.save_artifact("an artifact that must survive", "bash")
    manager.flush()
    report.flushed()
    report.say(f"READY {manager.get_session_file()}")
    round_number = 0
    while True:
        round_number += 1
        for _ in range(rng.randint(1, 3)):
            report.appended_entry(manager.append_custom_entry("tick", {"round": round_number}))
        manager.flush()
        report.flushed()
        report.say(f"BEGIN {point} {round_number}")
        if point == "rewrite":
            for entry in manager.get_entries():
                entry["rev"] = round_number
            manager.rewrite_entries()
        elif point == "rename":
            manager.set_session_name(f"name {round_number}", "user")
        elif point == "move":
            manager.move_to(RIGHT if round_number % 2 else LEFT)
        else:
            manager.fork()
        report.say(f"DONE {point} {round_number} {manager.get_session_file()}")


def _sync_child(agent_dir: str, seed: int, point: str) -> None:
    rng = random.Random(seed)
    files = sorted(Path(agent_dir, "sessions").rglob("*.jsonl"))
    parallel = point in PARALLEL_SYNC_POINTS
    if parallel:
        # Workers for however little there is, in small chunks: many moments to be killed in.
        pipeline.PARALLEL_MIN_BYTES = 0
        pipeline.WORKER_CHUNK_BYTES = 64 << 10
        pipeline.OUTBOX_BYTES = 64 << 10
    with SessionIndex.open(agent_dir) as index:
        _Reporter.say("READY")
        round_number = 0
        while True:
            round_number += 1
            for path in rng.sample(files, 3):
                entry = {"type": "custom", "customType": "grow", "id": f"{seed:x}{round_number:x}",
                         "parentId": None, "data": {"seed": seed}}  # fmt: skip
                with open(path, "ab") as handle:
                    handle.write(dumps(entry) + b"\n")
            _Reporter.say(f"BEGIN {point} {round_number}")
            try:
                index.sync(full=parallel or round_number % 2 == 0, workers=2 if parallel else 1)
            except SyncWorkerError:
                _Reporter.say(f"DIED {point} {round_number}")
                continue
            _Reporter.say(f"DONE {point} {round_number}")


def _stale_child(agent_dir: str, seed: int) -> None:
    rng = random.Random(seed)
    files = sorted(Path(agent_dir, "sessions").rglob("*.jsonl"))
    stale_search.STALE_SHARE = 0.0  # every sync that left rows behind deletes them
    cut: dict[Path, bytes] = {}
    with SessionIndex.open(agent_dir) as index:
        _Reporter.say("READY")
        round_number = 0
        while True:
            round_number += 1
            for path in rng.sample(files, max(1, len(files) // 4)):
                if path in cut:
                    with open(path, "ab") as handle:
                        handle.write(cut.pop(path))
                    continue
                data = path.read_bytes()
                start = data.rstrip(b"\n").rfind(b"\n") + 1
                if start:
                    path.write_bytes(data[:start])
                    cut[path] = data[start:]
            _Reporter.say(f"BEGIN stale {round_number}")
            index.sync()
            _Reporter.say(f"DONE stale {round_number}")


def _gc_child(agent_dir: str, seed: int) -> None:
    rng = random.Random(seed)
    blobs = os.path.join(agent_dir, "blobs")
    with SessionIndex.open(agent_dir) as index:
        _Reporter.say("READY")
        round_number = 0
        while True:
            round_number += 1
            # Unreferenced, old blobs for the collection to delete, written like BlobStore.put
            # but without its fsync: a thousand fsyncs would leave the kill little chance to
            # land in the collection itself.
            for _ in range(GC_BLOBS_PER_ROUND):
                data = rng.randbytes(rng.randint(1, 2048))
                digest = hashlib.sha256(data).hexdigest()
                temp = os.path.join(blobs, f".{digest}.{rng.getrandbits(64):016x}.tmp")
                with open(temp, "wb") as handle:
                    handle.write(data)
                moment = time.time() - OLD
                os.utime(temp, (moment, moment))
                os.replace(temp, os.path.join(blobs, digest))
            _Reporter.say(f"BEGIN gc {round_number}")
            index.blob_gc(apply=True, grace=timedelta(hours=1))
            _Reporter.say(f"DONE gc {round_number}")


def child(point: str, agent_dir: str, seed: int) -> None:
    if point in MANAGER_POINTS:
        _manager_child(point, agent_dir, seed)
    elif point == "sync" or point in PARALLEL_SYNC_POINTS:
        _sync_child(agent_dir, seed, point)
    elif point == "stale":
        _stale_child(agent_dir, seed)
    elif point == "gc":
        _gc_child(agent_dir, seed)
    else:
        raise SystemExit(f"unknown kill point {point}")


# --------------------------------------------------------------------------------------------
# The parent


@dataclass
class Reports:
    """What a killed child acknowledged before it died."""

    point: str
    seed: int
    ready: str = ""
    appended: list[str] = field(default_factory=list)
    flushed: int = 0
    begun: int = 0
    done: int = 0
    last_path: str = ""
    # Syncs that stopped because a worker was killed (sync-worker).
    died: int = 0
    # Workers of a killed writer still running long after it died (sync-writer).
    workers_left: list[int] = field(default_factory=list)

    @property
    def interrupted(self) -> bool:
        """Whether the kill hit the operation itself."""
        return self.died > 0 if self.point == "sync-worker" else self.begun > self.done


def kill_once(point: str, agent_dir: Path, seed: int) -> Reports:
    """Start a child, SIGKILL it at a random moment of its first few operations (from the
    moment it says it begins one), and return what it reported. At ``sync-worker`` one of
    the child's workers is killed first, and the child once its sync has ended."""
    rng = random.Random(seed)
    kill_in_round = rng.randint(1, 3)
    environment = {**os.environ, "XCSH_AGENT_DIR": str(agent_dir)}
    environment.setdefault("XCSH_TERMINAL_ID", "kill-points")
    process = subprocess.Popen(
        [sys.executable, __file__, point, str(agent_dir), str(seed)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=environment,
    )
    assert process.stdout is not None and process.stderr is not None
    before: list[str] = []
    while True:
        line = process.stdout.readline().decode()
        if not line or line.startswith("READY"):
            break
        before.append(line)
    if not line:
        process.kill()
        process.wait()
        raise AssertionError(f"{point} child did not start: {process.stderr.read().decode()}")
    ready = line
    begin = f"BEGIN {point} {kill_in_round}\n"
    while line and line != begin:
        line = process.stdout.readline().decode()
        before.append(line)
    if point in PARALLEL_SYNC_POINTS:
        _wait_for_workers(process.pid)
    time.sleep(rng.uniform(0, OPERATION_SECONDS[point]))
    orphans: list[int] = []
    if point == "sync-worker":
        workers = worker_pids(process.pid)
        # A worker may end between the listing and the kill: as if none had been found.
        with contextlib.suppress(ProcessLookupError):
            if workers:
                os.kill(rng.choice(workers), signal.SIGKILL)
        before += _until_the_sync_ends(process, point, kill_in_round)
    elif point == "sync-writer":
        orphans = worker_pids(process.pid)
    process.send_signal(signal.SIGKILL)
    rest = process.stdout.read().decode()
    process.wait()
    reports = Reports(point, seed, ready=ready.split(" ", 1)[1].strip() if " " in ready else "")
    reports.workers_left = wait_until_gone(orphans)
    lines = "".join(before).split("\n")[:-1] + rest.split("\n")
    for line in lines[:-1]:  # the last piece may be a line cut by the kill
        tag, _, value = line.partition(" ")
        if tag == "A":
            reports.appended.append(value)
        elif tag == "F":
            reports.flushed = int(value)
        elif tag == "BEGIN":
            reports.begun = int(value.split()[1])
        elif tag == "DONE":
            parts = value.split(maxsplit=2)
            reports.done = int(parts[1])
            reports.last_path = parts[2] if len(parts) > 2 else ""
        elif tag == "DIED":
            reports.died += 1
    return reports


def worker_pids(parent: int) -> list[int]:
    """The sync worker processes (alive, not zombies) whose parent is ``parent``."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{name}/stat").read_text()
            command = Path(f"/proc/{name}/cmdline").read_bytes()
        except OSError:
            continue
        state, ppid = stat.rsplit(")", 1)[1].split()[:2]
        if int(ppid) == parent and state != "Z" and b"worker_main" in command:
            found.append(int(name))
    return found


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def wait_until_gone(pids: list[int]) -> list[int]:
    """The processes of ``pids`` still running after up to HANG_SECONDS."""
    deadline = time.monotonic() + HANG_SECONDS
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.02)
    return [pid for pid in pids if alive(pid)]


def _wait_for_workers(parent: int) -> None:
    """Until the sync that just began has started its workers (or it ended first)."""
    deadline = time.monotonic() + 10
    while not worker_pids(parent) and time.monotonic() < deadline:
        time.sleep(0.005)


def _until_the_sync_ends(
    process: subprocess.Popen[bytes], point: str, round_number: int
) -> list[str]:
    """The child's reports up to the end (done, or died) of the sync of ``round_number``."""
    assert process.stdout is not None
    ends = (f"DONE {point} {round_number}\n", f"DIED {point} {round_number}\n")
    hang = threading.Timer(HANG_SECONDS, process.kill)
    hang.start()
    lines = []
    try:
        line = "?"
        while line and line not in ends:
            line = process.stdout.readline().decode()
            lines.append(line)
    finally:
        hang.cancel()
    assert line, f"the sync never ended after its worker was killed: {lines[-3:]}"
    return lines


def _entry_ids(records: list[dict]) -> list[str]:
    return [record["id"] for record in records if record.get("type") != "session"]


def _check_prefix(path: Path, reports: Reports) -> list[dict]:
    """The file loads, starts with its header, and holds the first appends, in order.

    The child reports an append after it returns, so one entry on disk may be unreported.
    """
    records = load_entries_from_file(str(path))
    assert records, f"{path} does not load after the kill"
    assert records[0]["type"] == "session", f"{path}: the header is not the first line"
    ids = _entry_ids(records)
    appended = reports.appended
    assert len(ids) <= len(appended) + 1, f"{path} holds entries that were never appended"
    assert ids[: len(appended)] == appended[: len(ids)], f"{path}: entries lost or reordered"
    return records


def check_manager_kill(agent_dir: Path, reports: Reports) -> Path:
    """Every file of the run loads and holds a prefix of the appends; the newest holds every
    flushed one; a rewrite or rename is all old or all new. Returns the newest file."""
    folders = [Path(_run_folder(str(agent_dir), reports.point, reports.seed))]
    if reports.point == "move":
        folders = [agent_dir / "sessions" / name for name in ("--work-left--", "--work-right--")]
        session_id = Path(reports.ready).stem.rsplit("_", 1)[1]
        files = [path for folder in folders for path in folder.glob(f"*_{session_id}.jsonl")]
        assert len(files) == 1, f"the moved session is in {len(files)} places: {files}"
        artifacts = [
            path for folder in folders for path in folder.glob(f"*_{session_id}/0.bash.log")
        ]
        assert len(artifacts) == 1, f"the artifact folder is in {len(artifacts)} places"
    else:
        files = sorted(folders[0].glob("*.jsonl"))
    on_disk, newest = -1, files[0]
    for path in files:
        records = _check_prefix(path, reports)
        if len(_entry_ids(records)) > on_disk:
            on_disk, newest = len(_entry_ids(records)), path
        if reports.point == "rewrite":
            _check_revisions(path, records, reports)
        elif reports.point == "rename":
            title = records[0].get("title")
            allowed = {f"name {number}" for number in (reports.done, reports.begun) if number}
            assert title in allowed or (title is None and not reports.done), (path, title)
    assert on_disk >= reports.flushed, f"flushed entries lost: {on_disk} < {reports.flushed}"
    return newest


def _check_revisions(path: Path, records: list[dict], reports: Reports) -> None:
    """All entries carry the revision of one rewrite (the last done or the one begun), except
    the ones appended after it, which carry none: never a mix of two rewrites."""
    revisions = [record.get("rev") for record in records[1:]]
    marked = [revision for revision in revisions if revision is not None]
    assert len(set(marked)) <= 1, f"{path}: entries from two rewrites {sorted(set(marked))}"
    assert revisions[: len(marked)] == marked, f"{path}: a rewritten entry after a new one"
    if marked:
        assert marked[0] in (reports.done, reports.begun), (path, marked[0], reports.done)
    else:
        assert reports.done == 0, f"{path}: rewrite {reports.done} was acknowledged but is lost"


def prepare_index_corpus(agent_dir: Path, copies: int = 1, max_bytes: int | None = None) -> None:
    """Sessions for the sync and GC kill points: the real fixtures (``copies`` times, those up
    to ``max_bytes``) and branched sessions whose images live in the blob store; then a sync."""
    store = BlobStore(str(agent_dir / "blobs"))
    for copy in range(copies):
        for path in copy_fixtures(agent_dir, max_bytes):
            path.rename(path.with_name(f"{copy}-{path.name}"))
    for number in range(8):
        random_tree_session(sessions_dir(agent_dir) / f"images-{number}.jsonl", number, 80, store)
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync()


def referenced_blobs(agent_dir: Path) -> set[str]:
    """Every well-formed blob ref in any session file."""
    found: set[str] = set()
    for path in (agent_dir / "sessions").rglob("*.jsonl"):
        found.update(BLOB_REF.findall(path.read_text(errors="replace")))
    return found


def _lost_blobs(agent_dir: Path, quarantine_counts: bool) -> list[str]:
    """Referenced blobs that are nowhere (a quarantined one is still somewhere, if allowed)."""
    blobs = agent_dir / "blobs"
    return sorted(
        digest
        for digest in referenced_blobs(agent_dir)
        if not (blobs / digest).exists()
        and not (quarantine_counts and any(blobs.glob(f"{QUARANTINE_PREFIX}{digest}.*")))
    )


def check_index_kill(agent_dir: Path, reports: Reports | None = None) -> None:
    """No blob is partial or lost, and after one sync the index verifies clean; a GC puts back
    what a killed GC left in quarantine; a killed writer's workers exited."""
    if reports is not None:
        assert reports.workers_left == [], f"workers outlived their writer: {reports.workers_left}"
    blobs = agent_dir / "blobs"
    assert blob_files_are_whole(blobs) == [], "a blob file is partial"
    assert _lost_blobs(agent_dir, quarantine_counts=True) == [], "a referenced blob was deleted"
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync()
        report = index.verify()
        assert report.clean, report.differences or report.refcount_errors or report.damaged
        index.blob_gc()
    assert not any(blobs.glob(f"{QUARANTINE_PREFIX}*")), "a blob was left in quarantine"
    assert _lost_blobs(agent_dir, quarantine_counts=False) == [], "a referenced blob is gone"


def check_litter_is_cleaned(agent_dir: Path) -> int:
    """Temp files of killed writes are never sessions; once old, sync and GC remove them all.
    Returns how many there were."""
    sessions, blobs = agent_dir / "sessions", agent_dir / "blobs"
    litter = [*sessions.rglob(".*.tmp"), *blobs.glob(".*.tmp")]
    listed = {info.path for info in SessionManager.list_all()}
    assert not any(str(path) in listed for path in litter), "a temp file was listed as a session"
    moment = time.time() - OLD
    for path in litter:
        os.utime(path, (moment, moment))
    with SessionIndex.open(str(agent_dir)) as index:
        indexed = {session.path for session in index.list_sessions()}
        assert not any(str(path) in indexed for path in litter), "a temp file was indexed"
        index.sync()
        index.blob_gc(apply=True)
    left = [*sessions.rglob(".*.tmp"), *blobs.glob(".*.tmp")]
    assert left == [], f"temp files left after sync and GC: {left}"
    return len(litter)


def check_continues_after_kill(path: str) -> None:
    """A session opened after the kill takes appends, and keeps everything it had."""
    before = _entry_ids(load_entries_from_file(path))
    with SessionManager.open(path) as manager:
        added = manager.append_custom_entry("after-the-kill", {})
    after = _entry_ids(load_entries_from_file(path))
    assert after[: len(before)] == before and after[-1] == added, path


if __name__ == "__main__":
    child(sys.argv[1], sys.argv[2], int(sys.argv[3]))
