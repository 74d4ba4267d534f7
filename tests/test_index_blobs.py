"""Blob references and the blob GC: counts at any depth, dry run, grace, refusals, blob
files that change behind the index's back."""

from __future__ import annotations

import json
import os
import time
from datetime import timedelta
from pathlib import Path

from session_builder import header, message, sessions_dir, write_session

from xcsh_store.format.blobs import BlobStore


def _image_session(path: Path, session_id: str, ref: str) -> None:
    record = message("u1", None, "user", "look")
    record["message"]["content"].append({"type": "image", "data": ref})
    record["message"]["details"] = {"nested": [{"deep": {"image_url": ref}}]}
    write_session(path, [header(session_id), record])


def test_blob_refs_are_counted_at_any_depth(agent_dir, index):
    store = BlobStore(str(agent_dir / "blobs"))
    ref = store.put(b"image bytes").ref
    _image_session(sessions_dir(agent_dir) / "img.jsonl", "img", ref)
    index.sync()
    rows = index.connection.execute("SELECT hash, refcount FROM blobs").fetchall()
    assert rows == [(ref[12:], 1)]


def test_gc_dry_run_apply_and_grace(agent_dir, index):
    store = BlobStore(str(agent_dir / "blobs"))
    kept = store.put(b"referenced").ref
    orphan = store.put(b"orphan").hash
    fresh = store.put(b"fresh orphan").hash
    old = time.time() - 7200
    for digest in (kept[12:], orphan):
        os.utime(store.path_for(digest), (old, old))
    _image_session(sessions_dir(agent_dir) / "img.jsonl", "img", kept)
    dangling = "blob:sha256:" + "e" * 64
    _image_session(sessions_dir(agent_dir) / "dangling.jsonl", "dangling", dangling)
    dry = index.blob_gc()
    assert dry.candidates == [orphan]
    assert dry.kept_recent == 1
    assert dry.dangling == ["e" * 64]
    assert not dry.applied and store.has(orphan)
    applied = index.blob_gc(apply=True)
    assert applied.deleted == [orphan]
    assert not store.has(orphan)
    assert store.has(kept[12:]) and store.has(fresh)
    assert index.blob_gc(apply=True, grace=timedelta(0)).deleted == [fresh]
    assert store.has(kept[12:])


def test_gc_grace_counts_from_its_sync_not_from_the_collection(agent_dir, index, monkeypatch):
    """A line written after the GC's sync read its file is missing from the counts; its blob,
    stored just before, must survive however long the GC then takes (a slow sync, a wait for
    the lock) to get to the deleting."""
    store = BlobStore(str(agent_dir / "blobs"))
    path = sessions_dir(agent_dir) / "late.jsonl"
    write_session(path, [header("late"), message("u1", None, "user", "look")])
    late = store.put(b"stored just before the line that references it")
    sync = index._sync_locked  # what blob_gc syncs with, under the lock it holds

    def sync_then_a_late_line(*args, **kwargs):
        report = sync(*args, **kwargs)
        record = message("u2", "u1", "user", "and this")
        record["message"]["content"].append({"type": "image", "data": late.ref})
        with open(path, "ab") as handle:
            handle.write(json.dumps(record).encode() + b"\n")
        time.sleep(0.4)
        return report

    monkeypatch.setattr(index, "_sync_locked", sync_then_a_late_line)
    report = index.blob_gc(apply=True, grace=timedelta(seconds=0.2))
    assert report.applied and report.kept_recent == 1 and report.deleted == []
    assert store.has(late.hash)
    monkeypatch.undo()
    assert index.blob_gc(apply=True, grace=timedelta(0)).deleted == []
    assert index.connection.execute("SELECT refcount FROM blobs").fetchall() == [(1,)]


def test_gc_refuses_while_a_session_file_is_unreadable(agent_dir, index):
    store = BlobStore(str(agent_dir / "blobs"))
    orphan = store.put(b"maybe referenced").hash
    os.utime(store.path_for(orphan), (0, 0))
    loop = sessions_dir(agent_dir) / "loop.jsonl"
    loop.symlink_to(loop)
    report = index.blob_gc(apply=True)
    assert report.refused and "could not be read" in report.refused
    assert report.deleted == [] and store.has(orphan)


def test_gc_refuses_while_a_known_root_is_missing(agent_dir, index, tmp_path):
    extra = tmp_path / "extra-root"
    extra.mkdir()
    index.add_root(str(extra))
    store = BlobStore(str(agent_dir / "blobs"))
    orphan = store.put(b"maybe referenced elsewhere").hash
    os.utime(store.path_for(orphan), (0, 0))
    extra.rmdir()
    report = index.blob_gc(apply=True)
    assert report.refused and "missing" in report.refused
    assert store.has(orphan)


def test_removing_a_session_releases_its_blob_refs(agent_dir, index):
    store = BlobStore(str(agent_dir / "blobs"))
    ref = store.put(b"only here").ref
    path = sessions_dir(agent_dir) / "img.jsonl"
    _image_session(path, "img", ref)
    index.sync()
    path.unlink()
    index.sync()
    assert index.connection.execute("SELECT refcount FROM blobs").fetchall() == [(0,)]


def test_gc_notices_blob_files_removed_or_added_behind_its_back(agent_dir, index):
    store = BlobStore(str(agent_dir / "blobs"))
    ref = store.put(b"referenced, then lost").ref
    _image_session(sessions_dir(agent_dir) / "img.jsonl", "img", ref)
    assert index.blob_gc().dangling == []
    os.unlink(store.path_for(ref[12:]))
    assert index.blob_gc().dangling == [ref[12:]]
    orphan = store.put(b"appeared later").hash
    os.utime(store.path_for(orphan), (0, 0))
    assert index.blob_gc().candidates == [orphan]
