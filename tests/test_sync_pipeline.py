"""The parallel sync: worker processes read files whole, the writer applies their rows in file
order. The same rows as a sync in one process; a killed worker, a killed writer and Ctrl-C lose
nothing; files that vanish under a worker; the --workers option."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import apsw
import pytest
from click.testing import CliRunner
from helpers.held_sync import start_held_sync, wait_for_files
from kill_points import wait_until_gone, worker_pids
from session_builder import (
    append,
    copy_fixtures,
    header,
    message,
    random_tree_session,
    sessions_dir,
    write_session,
)

from xcsh_store.cli import cli
from xcsh_store.format.blobs import BlobStore
from xcsh_store.index import SessionIndex
from xcsh_store.index.write import pipeline
from xcsh_store.index.write.pipeline import SyncWorkerError
from xcsh_store.js import stringify

# Rows as the index holds them, keys included: two syncs of the same files must agree on each.
# The search rows are those of entries: the stale rows that replaced entries leave behind
# (index/write/stale_search.py) depend on where the file was cut into chunks, which nothing reads.
EXACT = {
    "files": "SELECT id, path, root, project_dir, size, mtime_ns, inode, ctime_ns,"
    " indexed_bytes, head_hash, tail_hash, status, error, next_seq, last_id, legacy, chained,"
    " lines, skipped_count, skipped_lines FROM files ORDER BY id",
    "sessions": "SELECT * FROM sessions ORDER BY file_id",
    "entries": "SELECT * FROM entries ORDER BY pk",
    "postings": "SELECT doc, term, col, offset FROM temp.postings"
    " WHERE doc IN (SELECT pk FROM entries) ORDER BY doc, term, offset",
    "search sizes": "SELECT id, sz FROM entries_fts_docsize WHERE id IN (SELECT pk FROM entries)"
    " ORDER BY id",
    "blob refs": "SELECT entry, hash FROM blob_refs ORDER BY entry, hash",
    "blobs": "SELECT hash, size, refcount FROM blobs ORDER BY hash",
}
# The same, with every key replaced by what it stands for (file path, line seq): a sync that
# carries on after a kill may number its files and entries otherwise than one clean sync.
_ENTRY = "(SELECT f.path FROM files AS f WHERE f.id = e.session), e.seq"
BY_CONTENT = {
    "files": "SELECT path, root, project_dir, size, mtime_ns, inode, ctime_ns, indexed_bytes,"
    " head_hash, tail_hash, status, error, next_seq, last_id, legacy, chained, lines,"
    " skipped_count, skipped_lines FROM files ORDER BY path",
    "sessions": "SELECT session_id, path, cwd, project_dir, title, title_source, parent_session,"
    " version, created_at, modified_at, entry_count, message_count, first_message,"
    " last_entry_id, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens,"
    " premium_requests, cost, compaction_title FROM sessions ORDER BY path",
    "entries": f"SELECT {_ENTRY}, e.id, e.parent_id, e.type, e.timestamp, e.role, e.provider,"
    " e.model, e.tool_name, e.custom_type, e.offset, e.length, e.part, e.input_tokens,"
    " e.output_tokens, e.cache_read_tokens, e.cache_write_tokens, e.premium_requests, e.cost,"
    " e.prompt_hash, (SELECT c.seq FROM entries AS c WHERE c.pk = e.chain)"
    " FROM entries AS e ORDER BY 1, 2",
    "postings": f"SELECT {_ENTRY}, p.term, p.offset FROM temp.postings AS p"
    " JOIN entries AS e ON e.pk = p.doc ORDER BY 1, 2, 3, 4",
    "blob refs": f"SELECT {_ENTRY}, r.hash FROM blob_refs AS r JOIN entries AS e ON e.pk = r.entry"
    " ORDER BY 1, 2, 3",
    "blobs": "SELECT hash, size, refcount FROM blobs ORDER BY hash",
}


def tables(db_path: Path, queries: dict[str, str]) -> dict[str, list[Any]]:
    connection = apsw.Connection(str(db_path))
    try:
        connection.execute(
            "CREATE VIRTUAL TABLE temp.postings USING fts5vocab(main, entries_fts, instance)"
        )
        return {name: connection.execute(sql).fetchall() for name, sql in queries.items()}
    finally:
        connection.close()


def assert_same_tables(one: Path, other: Path, queries: dict[str, str] = EXACT) -> None:
    mine, theirs = tables(one, queries), tables(other, queries)
    for name in queries:
        assert mine[name] == theirs[name], f"{name} differ"
    assert mine["entries"], "nothing was indexed"


def sync(agent_dir: Path, db_path: Path, **options: Any) -> Any:
    with SessionIndex.open(str(agent_dir), db_path=str(db_path)) as index:
        return index.sync(**options)


@pytest.fixture
def parallel(monkeypatch: pytest.MonkeyPatch) -> None:
    """Workers for however little there is to read, in small chunks: a test corpus goes
    through the pipeline as a big one does (several chunks per file, a writer that waits)."""
    monkeypatch.setattr(pipeline, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(pipeline, "WORKER_CHUNK_VALUES", 40)
    monkeypatch.setattr(pipeline, "WORKER_CHUNK_BYTES", 16 << 10)
    monkeypatch.setattr(pipeline, "OUTBOX_BYTES", 1)


def varied_corpus(agent_dir: Path) -> list[Path]:
    """The real fixtures, branched sessions with images, and files every reader must cope
    with: v1, malformed lines, glued objects, a BOM, lone surrogate escapes, ids that come
    back (far apart, so in different chunks), a cycle, no header, a cut last line, a big file
    of many chunks. Their mtimes spread so that the file order is fixed."""
    folder = sessions_dir(agent_dir)
    paths = copy_fixtures(agent_dir)
    store = BlobStore(str(agent_dir / "blobs"))
    paths += [
        random_tree_session(folder / f"tree-{seed}.jsonl", seed, 150, store) for seed in range(6)
    ]
    duplicates = [header("dups")] + [
        message(f"m{number % 70:03d}", f"m{(number - 1) % 70:03d}" if number else None,
                "assistant" if number % 3 else "user", f"text {number} " + "w" * 300)
        for number in range(400)
    ]  # fmt: skip
    paths.append(write_session(folder / "duplicates.jsonl", duplicates))
    cycle = [header("cycle"), message("a", "b", "user", "one"), message("b", "a", "user", "two")]
    paths.append(write_session(folder / "cycle.jsonl", cycle))
    paths.append(write_session(folder / "no-header.jsonl", [message("x", None, "user", "hi")]))
    models = [
        header("models"),
        {"type": "model_change", "id": "c1", "parentId": None, "model": "openai/gpt-x"},
        message("u1", "c1", "user", "which model?"),
        {"type": "message", "id": "a1", "parentId": "u1",
         "message": {"role": "assistant", "content": [{"type": "text", "text": "unnamed"}],
                     "usage": {"input": 3, "output": 4, "cost": {"total": 0.5}}}},
        {"type": "session_info", "id": "i1", "parentId": "a1", "name": "Named by pi"},
    ]  # fmt: skip
    paths.append(write_session(folder / "models.jsonl", models))
    odd = folder / "odd.jsonl"
    odd.write_bytes(
        b"\xef\xbb\xbf" + stringify(header("odd")) + b"\n"
        + b"not json at all\n\n"
        + stringify(message("g1", None, "user", "glued"))
        + stringify(message("g2", "g1", "user", "on")) + b"\n"
        + b'{"type":"message","id":"s1","parentId":"g2","message":{"role":"user","content":'
        b'"lone \\ud800 surrogate \\u0062lob:sha256:' + b"ab" * 32 + b'"}}\n'
        + b'{"type":"message","id":"cut","parentId":"s1","message":{"ro'
    )  # fmt: skip
    paths.append(odd)
    legacy = folder / "legacy-v1.jsonl"
    legacy.write_bytes(
        stringify({"type": "session", "id": "v1", "timestamp": "2025-01-01T00:00:00.000Z",
                   "cwd": "/old"}) + b"\n"
        + b"".join(stringify({"type": "message", "timestamp": "2025-01-01T00:00:01.000Z",
                              "message": {"role": "user", "content": f"old {n}"}}) + b"\n"
                   for n in range(120))
    )  # fmt: skip
    paths.append(legacy)
    big = [header("big")] + [
        message(f"b{number:05d}", f"b{number - 1:05d}" if number else None, "user", "z" * 900)
        for number in range(1500)
    ]
    paths.append(write_session(folder / "big.jsonl", big))
    for number, path in enumerate(paths):
        moment = 1_700_000_000 + number * 60
        os.utime(path, (moment, moment))
    return paths


# --------------------------------------------------------------------------------------------
# The same rows


def test_workers_write_the_same_rows_as_one_process(agent_dir, tmp_path, parallel):
    varied_corpus(agent_dir)
    one, two = tmp_path / "one.db", tmp_path / "two.db"
    sync(agent_dir, one, workers=1)
    report = sync(agent_dir, two, workers=2)
    assert report.entries_added > 8000 and not report.unreadable
    assert_same_tables(one, two)


def test_workers_and_appends_after_them_write_the_same_rows(agent_dir, tmp_path, parallel):
    """A second sync mixes appends (read by the writer, from the index) with files read whole
    again (by workers): new, rewritten, shrunk, and a --full sync after it."""
    paths = varied_corpus(agent_dir)
    one, two = tmp_path / "one.db", tmp_path / "two.db"
    sync(agent_dir, one, workers=1)
    sync(agent_dir, two, workers=2)
    folder = sessions_dir(agent_dir)
    append(folder / "big.jsonl", message("b-new", "b01499", "assistant", "appended"))
    append(folder / "duplicates.jsonl", message("m005", "m004", "user", "again, later"))
    append(folder / "tree-2.jsonl", {"type": "label", "id": "l-new", "parentId": None,
                                     "targetId": "0002000a", "label": "added"})  # fmt: skip
    shrunk = folder / "tree-3.jsonl"
    shrunk.write_bytes(shrunk.read_bytes()[: shrunk.stat().st_size // 2].rsplit(b"\n", 1)[0])
    random_tree_session(folder / "tree-4.jsonl", 99, 40)
    random_tree_session(folder / "later.jsonl", 7, 120)
    paths[0].unlink()
    for db_path, workers in ((one, 1), (two, 2)):
        report = sync(agent_dir, db_path, workers=workers)
        assert report.files_changed == 6 and report.files_removed == 1
    assert_same_tables(one, two)
    sync(agent_dir, one, workers=1, full=True)
    sync(agent_dir, two, workers=2, full=True)
    assert_same_tables(one, two)
    with SessionIndex.open(str(agent_dir), db_path=str(two)) as index:
        assert index.verify().clean


# --------------------------------------------------------------------------------------------
# When workers start


def _workers_seen(agent_dir: Path, db_path: Path, **options: Any) -> list[int]:
    seen: list[int] = []

    def look(done: int, total: int, path: str) -> None:
        seen.extend(worker_pids(os.getpid()))

    sync(agent_dir, db_path, progress=look, **options)
    return seen


def test_a_sync_with_little_to_read_starts_no_workers(agent_dir, tmp_path):
    varied_corpus(agent_dir)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert _workers_seen(agent_dir, tmp_path / "index.db", workers=4) == []
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert (after.ru_utime, after.ru_stime) == (before.ru_utime, before.ru_stime)


def test_one_worker_means_no_worker_process(agent_dir, tmp_path, parallel):
    varied_corpus(agent_dir)
    assert _workers_seen(agent_dir, tmp_path / "one.db", workers=1) == []
    assert _workers_seen(agent_dir, tmp_path / "two.db", workers=2) != []
    assert worker_pids(os.getpid()) == []


def test_a_worker_count_below_one_is_refused(agent_dir, index):
    with pytest.raises(ValueError, match="at least 1"):
        index.sync(workers=0)


def test_the_sync_verb_takes_a_worker_count(agent_dir, parallel):
    varied_corpus(agent_dir)
    runner = CliRunner()
    done = runner.invoke(cli, ["--agent-dir", str(agent_dir), "sync", "--workers", "2", "--json"])
    assert done.exit_code == 0, done.output
    refused = runner.invoke(cli, ["--agent-dir", str(agent_dir), "sync", "--workers", "0"])
    assert refused.exit_code == 2 and "--workers" in refused.output
    with SessionIndex.open(str(agent_dir)) as index:
        assert index.verify().clean


# --------------------------------------------------------------------------------------------
# Files that cannot be read


def test_a_file_deleted_before_its_worker_reads_it(agent_dir, tmp_path, parallel):
    folder = sessions_dir(agent_dir)
    paths = []
    for number in range(10):
        records = [header(f"s{number}")] + [
            message(f"m{line}", f"m{line - 1}" if line else None, "user", "x" * 2000)
            for line in range(100)
        ]
        path = write_session(folder / f"s{number}.jsonl", records)
        os.utime(path, (1_700_000_000 + number, 1_700_000_000 + number))
        paths.append(path)
    victim = paths[-1]

    def delete_at_the_start(done: int, total: int, path: str) -> None:
        if victim.exists():
            victim.unlink()  # its worker is files behind: it opens the victim later

    report = sync(agent_dir, tmp_path / "index.db", workers=2, progress=delete_at_the_start)
    assert report.unreadable.keys() == {str(victim)}
    assert str(victim) not in report.read_paths
    with SessionIndex.open(str(agent_dir), db_path=str(tmp_path / "index.db")) as index:
        assert sorted(item.path for item in index.list_sessions()) == sorted(map(str, paths[:-1]))
        assert index.sync(workers=2).files_removed == 1
        assert index.verify().clean


# --------------------------------------------------------------------------------------------
# Kills


def test_a_killed_worker_stops_the_sync_and_the_next_one_completes(agent_dir, tmp_path, parallel):
    varied_corpus(agent_dir)
    killed: list[int] = []

    def kill_a_worker(done: int, total: int, path: str) -> None:
        workers = worker_pids(os.getpid())
        if done > 0 and workers and not killed:
            os.kill(workers[0], signal.SIGKILL)
            killed.append(workers[0])

    db_path = tmp_path / "index.db"
    with pytest.raises(SyncWorkerError, match="SIGKILL"):
        sync(agent_dir, db_path, workers=2, progress=kill_a_worker)
    assert killed and worker_pids(os.getpid()) == [], "a worker outlived the failed sync"
    with SessionIndex.open(str(agent_dir), db_path=str(db_path)) as index:
        assert index.list_sessions(), "the files applied before the kill were not kept"
        index.sync(workers=2)
        assert index.verify().clean
    sync(agent_dir, tmp_path / "clean.db", workers=1)
    assert_same_tables(db_path, tmp_path / "clean.db", BY_CONTENT)


_SETTINGS = """
from xcsh_store.index.write import pipeline

pipeline.PARALLEL_MIN_BYTES = 0
pipeline.WORKER_CHUNK_VALUES = 40
pipeline.WORKER_CHUNK_BYTES = 16 << 10
pipeline.OUTBOX_BYTES = 1
"""


def _start_writer(agent_dir: Path, db_path: Path, held: int) -> subprocess.Popen[str]:
    return start_held_sync(agent_dir, db_path, held, _SETTINGS, workers=2)


def _after_files(writer: subprocess.Popen[str], count: int) -> list[int]:
    """Wait until the writer has started on ``count`` files; its workers then."""
    wait_for_files(writer, count)
    workers = worker_pids(writer.pid)
    assert workers, "the writer has no workers"
    return workers


def test_a_killed_writer_leaves_no_worker_and_the_next_sync_completes(agent_dir, tmp_path):
    varied_corpus(agent_dir)
    db_path = tmp_path / "index.db"
    writer = _start_writer(agent_dir, db_path, 20)
    workers = _after_files(writer, 20)
    writer.send_signal(signal.SIGKILL)
    writer.communicate()
    assert wait_until_gone(workers) == [], "workers kept running after their writer died"
    with SessionIndex.open(str(agent_dir), db_path=str(db_path)) as index:
        index.sync()
        assert index.verify().clean
    sync(agent_dir, tmp_path / "clean.db", workers=1)
    assert_same_tables(db_path, tmp_path / "clean.db", BY_CONTENT)


def test_ctrl_c_stops_the_writer_and_its_workers(agent_dir, tmp_path):
    varied_corpus(agent_dir)
    db_path = tmp_path / "index.db"
    writer = _start_writer(agent_dir, db_path, 10)
    workers = _after_files(writer, 10)
    os.killpg(writer.pid, signal.SIGINT)  # what a terminal sends the whole process group
    _out, errors = writer.communicate(timeout=120)
    assert "KeyboardInterrupt" in errors and writer.returncode != 0
    assert wait_until_gone(workers) == []
    with SessionIndex.open(str(agent_dir), db_path=str(db_path)) as index:
        index.sync()
        assert index.verify().clean


def test_a_sync_whose_workers_cannot_start_reads_in_its_own_process(
    agent_dir, tmp_path, parallel, monkeypatch, caplog
):
    varied_corpus(agent_dir)
    monkeypatch.setattr(sys, "executable", str(tmp_path / "no-such-python"))
    report = sync(agent_dir, tmp_path / "index.db", workers=2)
    assert not report.unreadable and "could not start sync workers" in caplog.text
    sync(agent_dir, tmp_path / "clean.db", workers=1)
    assert_same_tables(tmp_path / "index.db", tmp_path / "clean.db")


def test_a_sync_leaves_the_checkpoint_interval_as_it_found_it(agent_dir, index, parallel):
    varied_corpus(agent_dir)
    index.connection.execute("PRAGMA wal_autocheckpoint = 500")
    index.sync(workers=2)
    assert index.connection.execute("PRAGMA wal_autocheckpoint").fetchall() == [(500,)]
