"""SIGKILL at random moments of every whole-file operation; and what cleans up after a kill."""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from kill_points import (
    INDEX_POINTS,
    MANAGER_POINTS,
    check_continues_after_kill,
    check_index_kill,
    check_litter_is_cleaned,
    check_manager_kill,
    kill_once,
    prepare_index_corpus,
)
from session_builder import header, message, sessions_dir, write_session
from store_checks import age, assert_index_matches_files, blob_files_are_whole

from xcsh_store import SessionManager
from xcsh_store.format.blobs import BlobStore
from xcsh_store.index import SessionIndex
from xcsh_store.index.upkeep.gc import QUARANTINE_PREFIX
from xcsh_store.index.write import indexer
from xcsh_store.index.write.indexer import drop_file_rows
from xcsh_store.paths import new_session_id

HOUR = 3600
# Kills per kill point in CI; benchmarks/stress.py runs the same kill points over a thousand times.
MANAGER_KILLS = 6
INDEX_KILLS = 4


def _dead_pid() -> int:
    """The pid of a process that has exited (a GC that was killed)."""
    process = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], check=True,
                             capture_output=True, text=True)  # fmt: skip
    return int(process.stdout)


def _image_session(agent_dir: Path, name: str, ref: str) -> Path:
    body = message("u1", None, "user", "look")
    body["message"]["content"].append({"type": "image", "data": ref, "mimeType": "image/png"})
    return write_session(sessions_dir(agent_dir) / f"{name}.jsonl", [header(name), body])


# --------------------------------------------------------------------------------------------
# Litter a kill leaves behind, and who removes it


def test_temp_files_of_killed_rewrites_are_never_sessions_and_sync_removes_old_ones(agent_dir):
    session = write_session(sessions_dir(agent_dir) / "s.jsonl", [header("s")])
    folder = session.parent
    old = folder / f".s.jsonl.{new_session_id()}.tmp"
    fresh = folder / f".s.jsonl.{new_session_id()}.tmp"
    for temp in (old, fresh):
        temp.write_bytes(session.read_bytes() + b'{"type":"custom","id":"half')
    age(old, 2 * HOUR)
    assert [info.path for info in SessionManager.list_all()] == [str(session)]
    with SessionIndex.open(str(agent_dir)) as index:
        report = index.sync()
        assert [item.path for item in index.list_sessions()] == [str(session)]
        assert report.temp_files_removed == 1
    assert not old.exists(), "a temp file of a rewrite killed hours ago was left"
    assert fresh.exists(), "a temp file a rewrite may still be writing was removed"


def test_gc_puts_back_a_blob_a_killed_gc_left_in_quarantine(agent_dir):
    store = BlobStore(str(agent_dir / "blobs"))
    referenced = store.put(b"referenced by a session")
    unreferenced = store.put(b"referenced by nobody")
    _image_session(agent_dir, "img", referenced.ref)
    dead = _dead_pid()
    for blob in (referenced, unreferenced):
        age(Path(blob.path), 2 * HOUR)
        os.rename(blob.path, os.path.join(store.dir, f"{QUARANTINE_PREFIX}{blob.hash}.{dead}"))
    with SessionIndex.open(str(agent_dir)) as index:
        dry = index.blob_gc()
        assert sorted(dry.restored) == sorted([referenced.hash, unreferenced.hash])
        assert store.has(referenced.hash) and store.has(unreferenced.hash)
        applied = index.blob_gc(apply=True)
    assert applied.deleted == [unreferenced.hash]
    assert os.listdir(store.dir) == [referenced.hash]


def test_gc_leaves_the_quarantine_of_a_running_gc_alone(agent_dir):
    store = BlobStore(str(agent_dir / "blobs"))
    blob = store.put(b"being collected right now")
    quarantine = os.path.join(store.dir, f"{QUARANTINE_PREFIX}{blob.hash}.{os.getppid()}")
    os.rename(blob.path, quarantine)
    with SessionIndex.open(str(agent_dir)) as index:
        assert index.blob_gc(apply=True).restored == []
    assert os.path.exists(quarantine)


def test_gc_removes_temp_files_of_killed_blob_writes(agent_dir):
    store = BlobStore(str(agent_dir / "blobs"))
    kept = store.put(b"whole").hash
    old = Path(store.dir) / f".{'ab' * 32}.{new_session_id()}.tmp"
    fresh = Path(store.dir) / f".{'cd' * 32}.{new_session_id()}.tmp"
    for temp in (old, fresh):
        temp.write_bytes(b"half a bl")
    age(old, 2 * HOUR)
    with SessionIndex.open(str(agent_dir)) as index:
        assert index.blob_gc().blobs_on_disk == 1, "a temp file was counted as a blob"
        assert old.exists(), "a dry run deleted something"
        report = index.blob_gc(apply=True)
    assert report.temp_files_removed == 1
    assert sorted(os.listdir(store.dir)) == sorted([kept, fresh.name])
    assert blob_files_are_whole(Path(store.dir)) == []


# --------------------------------------------------------------------------------------------
# SIGKILL in the middle of whole-file operations


@pytest.mark.parametrize("point", MANAGER_POINTS)
def test_sigkill_in_a_whole_file_operation_loses_nothing(agent_dir, point):
    """rewrite_entries of a 3 MB session, set_session_name, move_to and fork: afterwards every
    file loads with old or new content (never a mix), every flushed entry is there, the session
    takes appends again, litter is never a session and is cleaned up, the index verifies."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = list(pool.map(lambda seed: kill_once(point, agent_dir, seed), range(MANAGER_KILLS)))
    for reports in runs:
        check_continues_after_kill(str(check_manager_kill(agent_dir, reports)))
    assert any(reports.begun > reports.done for reports in runs), "no kill hit the operation"
    check_litter_is_cleaned(agent_dir)
    assert_index_matches_files(agent_dir).close()


@pytest.mark.parametrize("point", INDEX_POINTS)
def test_sigkill_in_a_sync_or_gc_loses_nothing(agent_dir, point):
    """A sync of a corpus (full or incremental, files growing; in one process, or in worker
    processes with the writer or a worker killed) or a blob GC deleting a thousand blobs,
    killed: no blob partial or lost, no worker left running, one sync and the index verifies
    clean."""
    prepare_index_corpus(agent_dir, max_bytes=200_000)
    runs = []
    for seed in range(INDEX_KILLS):
        runs.append(kill_once(point, agent_dir, seed))
        check_index_kill(agent_dir, runs[-1])
    assert any(reports.interrupted for reports in runs), "no kill hit the operation"
    check_litter_is_cleaned(agent_dir)
    assert_index_matches_files(agent_dir).close()


def test_a_sync_that_dies_after_dropping_a_files_rows_is_completed_by_the_next(
    agent_dir, monkeypatch
):
    """A full re-index drops the file's rows, then writes the new ones: death in between must
    not leave the file looking indexed and up to date."""
    write_session(
        sessions_dir(agent_dir) / "s.jsonl", [header("s"), message("u1", None, "user", "hi")]
    )
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync()

    def die(connection: object, file_id: int, *more: object, **options: object) -> int:
        removed = drop_file_rows(connection, file_id, *more, **options)  # type: ignore[arg-type]
        raise KeyboardInterrupt(f"killed after {removed} rows were dropped")

    monkeypatch.setattr(indexer, "drop_file_rows", die)
    with SessionIndex.open(str(agent_dir)) as index, pytest.raises(KeyboardInterrupt):
        index.sync(full=True)
    monkeypatch.undo()
    assert_index_matches_files(agent_dir).close()
