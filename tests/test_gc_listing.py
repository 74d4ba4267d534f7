"""The blob folder as the GC knows it (index/upkeep/blob_folder.py) stays current: after blobs are
added, removed or renamed, after a blob is written while a collection runs, after the folder
is replaced, in the process that collected before and in a new one; and a listing that is
stale anyway only ever keeps a blob."""

from __future__ import annotations

import os
import shutil
import threading
from datetime import timedelta
from pathlib import Path

import pytest
from session_builder import header, message, sessions_dir, write_session

from xcsh_store.format.blobs import BLOB_REF_PREFIX, BlobStore
from xcsh_store.index import GcReport, SessionIndex
from xcsh_store.index.db import get_meta, set_meta, transaction
from xcsh_store.index.upkeep import blob_folder as blob_folder_module
from xcsh_store.index.upkeep.blob_folder import is_blob_name

EVERYTHING = timedelta(0)  # no grace period: every unreferenced blob is a candidate


def blobs_dir(agent_dir: Path) -> Path:
    return agent_dir / "blobs"


def on_disk(agent_dir: Path) -> set[str]:
    """The blob files really in the folder (regular files under a blob's name)."""
    folder = blobs_dir(agent_dir)
    return {
        name
        for name in os.listdir(folder)
        if is_blob_name(name) and (folder / name).is_file() and not (folder / name).is_symlink()
    }


def reference(agent_dir: Path, name: str, *digests: str) -> None:
    """A session whose messages reference ``digests``."""
    records = [header(name)]
    parent = None
    for number, digest in enumerate(digests):
        records.append(message(f"u{number}", parent, "user", BLOB_REF_PREFIX + digest))
        parent = f"u{number}"
    write_session(sessions_dir(agent_dir) / f"{name}.jsonl", records)


def assert_current(report: GcReport, agent_dir: Path, referenced: set[str]) -> None:
    """The dry run's answer is what a listing of the folder right now gives."""
    present = on_disk(agent_dir)
    assert report.refused is None, report.refused
    assert report.blobs_on_disk == len(present)
    assert sorted(report.candidates) == sorted(present - referenced)
    assert sorted(report.dangling) == sorted(referenced - present)


class Collector:
    """Dry-run collections, each in the same index (``kept``) or in a newly opened one, as a
    new process would run it."""

    def __init__(self, agent_dir: Path, kept: bool) -> None:
        self.agent_dir = agent_dir
        self.kept = SessionIndex.open(str(agent_dir)) if kept else None

    def collect(self) -> GcReport:
        if self.kept is not None:
            return self.kept.blob_gc(grace=EVERYTHING)
        with SessionIndex.open(str(self.agent_dir)) as index:
            return index.blob_gc(grace=EVERYTHING)

    def close(self) -> None:
        if self.kept is not None:
            self.kept.close()


@pytest.fixture(params=["same index", "new index each time"])
def collector(request, agent_dir):
    made = Collector(agent_dir, kept=request.param == "same index")
    yield made
    made.close()


def test_added_removed_and_renamed_blobs_are_seen(agent_dir, collector):
    store = BlobStore(str(blobs_dir(agent_dir)))
    kept = store.put(b"kept by a session").hash
    reference(agent_dir, "s", kept)
    loose = [store.put(f"loose {number}".encode()).hash for number in range(5)]
    assert_current(collector.collect(), agent_dir, {kept})

    added = store.put(b"a new blob").hash
    assert_current(collector.collect(), agent_dir, {kept})
    os.remove(store.path_for(loose[0]))
    assert_current(collector.collect(), agent_dir, {kept})
    renamed = "f" * 64
    os.rename(store.path_for(loose[1]), store.path_for(renamed))
    assert_current(collector.collect(), agent_dir, {kept})
    os.remove(store.path_for(added))
    os.mkdir(store.path_for(added))  # a folder under a blob's name is no blob
    report = collector.collect()
    # Never a candidate; a listing (of names only) may still count it among the blobs.
    assert sorted(report.candidates) == sorted(on_disk(agent_dir) - {kept})
    assert added in report.skipped
    os.rmdir(store.path_for(added))
    reference(agent_dir, "t", loose[2])  # referenced now: no longer a candidate
    assert_current(collector.collect(), agent_dir, {kept, loose[2]})


def test_a_blob_written_while_collections_run_is_seen_by_the_next(agent_dir, collector):
    store = BlobStore(str(blobs_dir(agent_dir)))
    reference(agent_dir, "s", store.put(b"referenced").hash)
    referenced = {store.put(b"referenced").hash}
    collector.collect()
    stop = threading.Event()
    written: list[str] = []

    def write_blobs() -> None:
        while not stop.is_set() or len(written) < 50:
            written.append(store.put(os.urandom(64)).hash)

    writer = threading.Thread(target=write_blobs)
    writer.start()
    try:
        for _ in range(5):
            collector.collect()
    finally:
        stop.set()
        writer.join()
    assert set(written) <= on_disk(agent_dir)
    assert_current(collector.collect(), agent_dir, referenced)


def test_a_replaced_blob_folder_is_listed_anew(agent_dir, collector):
    folder = blobs_dir(agent_dir)
    store = BlobStore(str(folder))
    old = store.put(b"in the old folder").hash
    reference(agent_dir, "s")
    assert_current(collector.collect(), agent_dir, set())
    os.rename(folder, agent_dir / "blobs-old")
    new = store.put(b"in the new folder").hash
    report = collector.collect()
    assert_current(report, agent_dir, set())
    assert report.candidates == [new] and old not in report.candidates


def test_a_blob_folder_link_pointed_elsewhere_is_listed_anew(agent_dir, tmp_path, collector):
    first, second = tmp_path / "first", tmp_path / "second"
    BlobStore(str(first)).put(b"first")
    in_second = BlobStore(str(second)).put(b"second").hash
    agent_dir.mkdir(exist_ok=True)
    blobs_dir(agent_dir).symlink_to(first)
    reference(agent_dir, "s")
    assert_current(collector.collect(), agent_dir, set())
    blobs_dir(agent_dir).unlink()
    blobs_dir(agent_dir).symlink_to(second)
    report = collector.collect()
    assert report.candidates == [in_second]
    assert report.blobs_on_disk == 1


def test_a_stale_listing_only_keeps_blobs(agent_dir, monkeypatch):
    """A listing the index wrongly believes current (its signature forged here) misses a new
    blob: that blob is kept, never deleted by a dry run's advice or anything else; a
    collection that deletes lists the folder itself, and finds it."""
    monkeypatch.setattr(blob_folder_module, "RACY_SECONDS", 0.0)  # trust a fresh signature
    store = BlobStore(str(blobs_dir(agent_dir)))
    old = store.put(b"old and unreferenced").hash
    reference(agent_dir, "s")
    with SessionIndex.open(str(agent_dir)) as index:
        assert index.blob_gc(grace=EVERYTHING).candidates == [old]
    new = store.put(b"new, unknown to the listing").hash
    referenced_late = store.put(b"referenced, unknown to the listing").hash
    reference(agent_dir, "t", referenced_late)
    with SessionIndex.open(str(agent_dir)) as index:
        info = os.stat(blobs_dir(agent_dir))
        forged = f"{info.st_dev}:{info.st_ino}:{info.st_mtime_ns}:{info.st_ctime_ns}"
        with transaction(index.connection):
            set_meta(index.connection, "blob_folder_signature", forged)
        stale = index.blob_gc(grace=EVERYTHING)
        assert get_meta(index.connection, "blob_folder_signature") == forged  # not listed
        assert stale.candidates == [old]  # the new blob is not offered for deletion
        assert referenced_late not in stale.candidates
        applied = index.blob_gc(apply=True, grace=EVERYTHING)
    assert sorted(applied.deleted) == sorted([old, new])
    assert on_disk(agent_dir) == {referenced_late}


def test_a_listing_that_names_a_vanished_blob_deletes_nothing_else(agent_dir, monkeypatch):
    monkeypatch.setattr(blob_folder_module, "RACY_SECONDS", 0.0)
    store = BlobStore(str(blobs_dir(agent_dir)))
    gone = store.put(b"about to vanish").hash
    kept = store.put(b"referenced").hash
    reference(agent_dir, "s", kept)
    with SessionIndex.open(str(agent_dir)) as index:
        index.blob_gc(grace=EVERYTHING)
    os.remove(store.path_for(gone))
    with SessionIndex.open(str(agent_dir)) as index:
        info = os.stat(blobs_dir(agent_dir))
        with transaction(index.connection):
            set_meta(
                index.connection,
                "blob_folder_signature",
                f"{info.st_dev}:{info.st_ino}:{info.st_mtime_ns}:{info.st_ctime_ns}",
            )
        report = index.blob_gc(grace=EVERYTHING)
    assert report.candidates == [] and report.refused is None
    assert on_disk(agent_dir) == {kept}


def test_a_folder_changed_just_now_is_never_trusted_unlisted(agent_dir):
    """The signature of a folder that changed within RACY_SECONDS is not recorded, so the next
    collection lists it: a change in the same clock tick would not have moved its mtime."""
    store = BlobStore(str(blobs_dir(agent_dir)))
    store.put(b"just written")
    reference(agent_dir, "s")
    with SessionIndex.open(str(agent_dir)) as index:
        index.blob_gc(grace=EVERYTHING)
        assert get_meta(index.connection, "blob_folder_signature") == ""


def test_the_same_index_looks_only_at_the_names_that_changed(agent_dir):
    """From its second collection on, an index watches the blob folder: a new blob is found
    without listing the folder, and a name put behind the index's back into its record of the
    folder (a stand-in for the listing it did not make) stays."""
    store = BlobStore(str(blobs_dir(agent_dir)))
    store.put(b"first")
    reference(agent_dir, "s")
    with SessionIndex.open(str(agent_dir)) as index:
        index.blob_gc(grace=EVERYTHING)
        index.blob_gc(grace=EVERYTHING)  # starts watching
        phantom = "e" * 64
        with transaction(index.connection):
            index.connection.execute(
                "INSERT INTO blobs (hash, size, refcount, first_seen, last_seen)"
                " VALUES (?, 1, 0, '', '')",
                (phantom,),
            )
        new = store.put(b"second").hash
        report = index.blob_gc(grace=EVERYTHING)
        (recorded,) = index.connection.execute(
            "SELECT size FROM blobs WHERE hash = ?", (new,)
        ).fetchall()[0]
        assert recorded == len(b"second")
        assert report.blobs_on_disk == len(on_disk(agent_dir)) + 1  # the phantom: not listed
        assert new in report.candidates and phantom not in report.candidates


def test_gc_in_a_folder_that_does_not_exist_yet(agent_dir, collector):
    reference(agent_dir, "s", "a" * 64)
    report = collector.collect()
    assert report.blobs_on_disk == 0 and report.dangling == ["a" * 64]
    store = BlobStore(str(blobs_dir(agent_dir)))
    assert store.put(b"now there is one").hash in collector.collect().candidates
    shutil.rmtree(blobs_dir(agent_dir))
    assert collector.collect().blobs_on_disk == 0


def test_collections_of_one_index_follow_the_session_folders_as_they_change(agent_dir, tmp_path):
    """The watch on the session folders kept between the collections of an index is renewed
    when the tree changes: folders added, moved out of the tree and written to there, moved
    back in. Every collection sees every session and refuses nothing."""
    store = BlobStore(str(blobs_dir(agent_dir)))
    first = store.put(b"first").hash
    second = store.put(b"second").hash
    reference(agent_dir, "s", first)
    with SessionIndex.open(str(agent_dir)) as index:
        assert index.blob_gc(grace=EVERYTHING).candidates == [second]
        other = agent_dir / "sessions" / "--other--"
        write_session(
            other / "t.jsonl", [header("t"), message("u1", None, "user", BLOB_REF_PREFIX + second)]
        )
        report = index.blob_gc(grace=EVERYTHING)
        assert report.refused is None and report.candidates == []
        away = tmp_path / "away"
        os.rename(other, away)
        write_session(away / "u.jsonl", [header("u")])  # activity where a watch may be left
        report = index.blob_gc(grace=EVERYTHING)
        assert report.refused is None and report.candidates == [second]
        write_session(away / "v.jsonl", [header("v")])
        os.rename(away, other)
        report = index.blob_gc(grace=EVERYTHING)
        assert report.refused is None and report.candidates == []
        assert {session.session_id for session in index.list_sessions()} == {"s", "t", "u", "v"}
