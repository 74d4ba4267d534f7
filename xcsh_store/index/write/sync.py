"""Bringing the index up to date with the files: scan, decide per file, read only what changed."""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import logging
import os
import time
from collections.abc import Collection, Iterator, Mapping, Set

import apsw

from xcsh_store.agents.prices.pricing import fixed_prices
from xcsh_store.agents.registry import XCSH_AGENTS, agent_named
from xcsh_store.files import open_regular_file
from xcsh_store.format.storage import remove_quietly
from xcsh_store.index.archive.capture import KeptPieces
from xcsh_store.index.archive.folder import ArchiveWriteError
from xcsh_store.index.archive.keeper import Keeper, Place, archived_row
from xcsh_store.index.db import transaction
from xcsh_store.index.write import pipeline
from xcsh_store.index.write.bulk_load import bulk_load
from xcsh_store.index.write.indexer import (
    FileIndexer,
    drop_file_rows,
    indexed_windows,
    may_resume,
    pk_counter,
)
from xcsh_store.index.write.pipeline import SyncWorkerError, Workers, default_workers, shares
from xcsh_store.index.write.scan import (
    IndexedFiles,
    KnownFile,
    KnownStats,
    Progress,
    SeenFile,
    SyncReport,
    describe_error,
    hiding_folder,
    is_under_any,
    known_file,
    scan_any,
)
from xcsh_store.times import iso_now

log = logging.getLogger("xcsh_store")

# SQLite copies the write-ahead log into index.db every 1000 pages (4 MB) by default, syncing
# both files each time. While a sync writes, every 64 MB instead: a full sync of 200 MB of
# sessions then wrote 15% fewer bytes (pages that FTS merges rewrite again and again are copied
# once per checkpoint) and synced files 11 times instead of 41. The log grows to about 64 MB
# meanwhile; the next commit after the sync checkpoints it at the usual size again.
SYNC_CHECKPOINT_PAGES = 16_384
# A sync that may put search text off (text=False) does so only with at least this much to read
# whole: below, the text costs too little to leave searches partial for (a new session or two).
TEXT_LATER_MIN_BYTES = 32 << 20


def sync_files(
    connection: apsw.Connection,
    roots: list[str],
    full: bool = False,
    progress: Progress | None = None,
    indexed: IndexedFiles | None = None,
    workers: int | None = None,
    *,
    agent_roots: Mapping[str, str] | None = None,
    text: bool = True,
    keeper: Keeper | None = None,
    standing_roots: Collection[str] | None = (),
    entries: bool = True,
) -> SyncReport:
    """Bring the rows of every file under ``roots`` up to date; returns what was done.

    ``text`` false: when there is much to read whole (a first sync), usage first: those files
    get every row but their search rows, which text_later.py adds afterwards.

    ``agent_roots`` (root -> agent) hold other agents' files: nothing there is ever removed
    (the stale temp files of xcsh's rewrites are looked for only in the other roots), and an
    agent that finds its own sessions (a kind other than JSONL) lists them there.

    ``entries`` false (usage first, for real: usage_first.py): when there is as much to read
    whole, the Claude Code and Codex files among them get only their usage rows, and are marked
    ``entries_pending``. The next sync, whatever it is asked, reads the files so marked whole
    (their entry rows, their archive copy, and their search text when ``text``:
    entries_later.py): a file its agent deletes is lost to the store only if it goes before
    that next run, and a user who only ever asks for usage still gets every session kept.

    ``indexed`` is the files table as read before (it is read here when not given).
    ``workers``: how many processes may read files whole (default: one per core); 1 reads
    everything in this process.

    ``keeper``: the archive's writer (index/archive/): the files of its roots are archived as
    they are read, and one found gone keeps its rows (marked gone) when the archive has it;
    so does one of a root no longer read when it is one of ``standing_roots`` (None: any), while
    the others (a root turned off) lose their rows; their archive stays.
    """
    started = time.perf_counter()
    report = SyncReport()
    indexed = indexed or IndexedFiles.read(connection)
    # Most files are unchanged: the scan compares their stat with these and yields the rest
    # (a file whose entries an earlier usage-first sync put off is read whole now).
    pending = entries_pending_paths(connection)
    known = KnownStats(
        {path: stat for path, stat in indexed.stats.items() if path not in pending}
        if pending
        else indexed.stats
    )
    seen: dict[str, SeenFile] = {}
    scanned_roots: list[str] = []
    for root in roots:
        if not os.path.isdir(root):
            report.missing_roots.append(root)
            continue
        scanned_roots.append(root)
        for item in scan_any(root, report, None if full else known, (agent_roots or {}).get(root)):
            seen[item.path] = item
    # (A stale file back is read again, as any file whose reader was revised.)
    back = {path: v for path, v in indexed.gone.items() if path not in indexed.stale}
    _take_back(connection, seen, back, known.unchanged)
    report.files_unchanged = len(known.unchanged)
    report.files_seen = len(seen) + report.files_unchanged

    known_paths = indexed.paths
    unreadable = list(report.unreadable)
    vanished = {
        path: row
        for path in known_paths - known.unchanged - seen.keys() - indexed.gone.keys()
        if is_under_any(path, scanned_roots)
        # A file in a folder that cannot be listed keeps its rows until it can be looked at.
        and not (unreadable and is_under_any(path, unreadable))
        # (None only in a damaged index, whose path index no longer finds the row.)
        and (row := known_file(connection, path)) is not None
    }
    _keep_out_of_reach(vanished, scanned_roots, report)
    renamed = _follow_renames(connection, seen, known_paths, vanished, report, keeper)
    report.files_unchanged += len(renamed)
    todo = [
        (item, _known(connection, path, indexed) if path in known_paths else None)
        for path, item in seen.items()
        if path not in renamed
    ]

    # Oldest first, so entry keys (and FTS rowids) grow with recency: search ranks the newest
    # matches of a very common query by walking rowids downwards.
    todo.sort(key=lambda pair: pair[0].mtime_ns)
    indexer = FileIndexer(connection, pk_counter(connection), report, keeper=keeper)
    if not text:
        indexer.with_text = _whole_bytes(todo, full) < TEXT_LATER_MIN_BYTES
    with archiving(report, keeper):
        if not entries and not indexer.with_text:
            todo = _usage_first(connection, todo, full, report, pending)
        _index_files(
            indexer, todo, full, progress, default_workers() if workers is None else workers
        )
        if keeper is not None:
            from xcsh_store.index.archive.backlog import catch_up  # (it imports us)

            catch_up(connection, keeper, report)

    # Files found under a root that is no longer registered go too, unless archived.
    marks = ",".join("?" * len(roots))
    forgotten = list(
        connection.execute(
            f"SELECT id, root FROM files WHERE root NOT IN ({marks}) AND gone_at IS NULL", roots
        )
    )
    for file_id in [row.id for row in vanished.values()]:
        _file_gone(connection, file_id, report)
    for file_id, root in forgotten:
        _file_gone(
            connection, file_id, report, keep=standing_roots is None or root in standing_roots
        )
    for path in report.stale_temp_files:
        # A rewrite killed before its rename: the session file itself was never touched.
        if remove_quietly(path):
            report.temp_files_removed += 1
    report.seconds = time.perf_counter() - started
    return report


@contextlib.contextmanager
def archiving(report: SyncReport, keeper: Keeper | None) -> Iterator[None]:
    """Around the writing of a sync's files: an archive that cannot be written stops it, with
    what was committed in both the index and the archive (the rest waits for the next sync);
    the keeper, if any, is closed with its count of bytes written."""
    try:
        yield
    except ArchiveWriteError as error:
        report.archive_error = str(error)
        log.warning("%s", error)
    finally:
        if keeper is not None:
            report.archive_bytes_written = keeper.written
            keeper.close()


def _usage_first(
    connection: apsw.Connection,
    todo: list[tuple[SeenFile, KnownFile | None]],
    full: bool,
    report: SyncReport,
    pending: set[str],
) -> list[tuple[SeenFile, KnownFile | None]]:
    """The lean pass over the files of ``todo`` to read whole but those an earlier lean pass
    left ``pending`` (usage_first.py); returns what is left for the full read, in order."""
    from xcsh_store.index.write.usage_first import index_usage_first

    whole = {
        position
        for position, _size in _whole_reads(todo, full)
        if todo[position][0].path not in pending
    }
    with fixed_prices():
        left = index_usage_first(connection, [todo[at] for at in sorted(whole)], report)
    for_full_read = {id(pair[0]) for pair in left}
    return [
        pair
        for position, pair in enumerate(todo)
        if position not in whole or id(pair[0]) in for_full_read
    ]


def entries_pending_paths(connection: apsw.Connection) -> set[str]:
    """The files a usage-first sync read only the usage of (served by files_entries_pending)."""
    return {
        path
        for (path,) in connection.execute(
            "SELECT path FROM files WHERE entries_pending = 1 AND gone_at IS NULL"
        )
    }


def _known(connection: apsw.Connection, path: str, indexed: IndexedFiles) -> KnownFile | None:
    """The file's row, marked stale when an earlier revision of its reader made its rows."""
    row = known_file(connection, path)
    if row is not None and path in indexed.stale:
        row = dataclasses.replace(row, stale=True)
    return row


def _take_back(
    connection: apsw.Connection,
    seen: dict[str, SeenFile],
    gone: Mapping[str, tuple[int, int, int, int]],
    unchanged: set[str],
) -> None:
    """Files found gone that are back just as they were read (a folder moved away and back, a
    disk mounted again): no longer gone, and unchanged."""
    back = [
        path
        for path in gone.keys() & seen.keys()
        if ((item := seen[path]).size, item.mtime_ns, item.inode, item.ctime_ns) == gone[path]
    ]
    if not back:
        return
    with transaction(connection):
        connection.executemany(
            "UPDATE files SET gone_at = NULL WHERE path = ?", [(p,) for p in back]
        )
    for path in back:
        del seen[path]
        unchanged.add(path)


def _file_gone(
    connection: apsw.Connection, file_id: int, report: SyncReport, keep: bool = True
) -> None:
    """A file the index knew is gone: its session stays, read from the archive from now on,
    when the archive keeps it (and ``keep``) and the plugin that reads it is installed; else
    its rows go (its archive stays: the plugin installed again reads the session back)."""
    agent = connection.execute("SELECT agent FROM files WHERE id = ?", (file_id,)).get
    with transaction(connection):
        readable = agent in XCSH_AGENTS or agent_named(agent) is not None
        if keep and readable and archived_row(connection, file_id) is not None:
            # (Search text still to come is read from the archive: text_later.py.)
            connection.execute("UPDATE files SET gone_at = ? WHERE id = ?", (iso_now(), file_id))
            report.files_archived_gone += 1
            return
        report.entries_removed += drop_file_rows(connection, file_id)
        connection.execute("DELETE FROM archived WHERE file_id = ?", (file_id,))
        connection.execute("DELETE FROM files WHERE id = ?", (file_id,))
    report.files_removed += 1


def _index_files(
    indexer: FileIndexer,
    todo: list[tuple[SeenFile, KnownFile | None]],
    full: bool,
    progress: Progress | None,
    workers: int,
) -> None:
    """Index each file of ``todo`` in turn, committing every few MB.

    Files to read whole go to worker processes when there are enough of them to pay for
    starting those; the rest (appends, mostly) need the index, and are read here, in turn.
    """
    pool, owners = _start_workers(todo, full, workers, indexer.with_text, indexer.keeper)
    report, batch = indexer.report, indexer.batch
    whole_bytes = _whole_bytes(todo, full)
    total = sum(item.size for item, _row in todo)
    done = 0
    try:
        with bulk_writing(indexer.connection), bulk_load(indexer.connection, whole_bytes):
            for position, (item, row) in enumerate(todo):
                if progress is not None:
                    progress(done, total, item.path)
                try:
                    if pool is not None and position in owners:
                        stat, chunks = pool.read(owners[position], position)
                        indexer.apply_built(item, row, stat, chunks)
                    else:
                        indexer.index(item, row, full)
                except OSError as error:
                    batch.commit()
                    report.unreadable[item.path] = describe_error(error)
                    mark_unreadable(indexer.connection, item, row, report.unreadable[item.path])
                if batch.full:
                    batch.commit()
                done += item.size
            batch.commit()
    except SyncWorkerError:
        batch.commit()  # every file before the one that failed, whole
        raise
    except BaseException:
        batch.rollback()
        raise
    finally:
        if pool is not None:
            pool.close()
    if progress is not None and todo:
        progress(total, total, "")


def _whole_reads(
    todo: list[tuple[SeenFile, KnownFile | None]], full: bool
) -> list[tuple[int, int]]:
    """(position in ``todo``, bytes) of the files to read whole."""
    return [
        (position, item.size)
        for position, (item, row) in enumerate(todo)
        if (full or row is None or not may_resume(row, item.size)) and item.agent is None
    ]


def _whole_bytes(todo: list[tuple[SeenFile, KnownFile | None]], full: bool) -> int:
    return sum(size for _position, size in _whole_reads(todo, full))


def _start_workers(
    todo: list[tuple[SeenFile, KnownFile | None]],
    full: bool,
    workers: int,
    with_text: bool,
    keeper: Keeper | None,
) -> tuple[Workers | None, dict[int, int]]:
    """Worker processes for the files of ``todo`` to read whole, when they are worth it, and
    which of them reads each (by position in ``todo``), with the pieces of each file's archive
    (which the worker checks the file against, and takes the bytes after)."""
    whole = _whole_reads(todo, full)
    if workers < 2 or sum(size for _position, size in whole) < pipeline.PARALLEL_MIN_BYTES:
        return None, {}
    plan = shares(whole, min(workers, len(whole)))

    def task(at: int) -> tuple[int, str, KeptPieces | None]:
        item, row = todo[at]
        place = Place(item.path, item.root, item.project_dir)
        kept = None if keeper is None else keeper.kept_pieces(row.id if row else None, place)
        return at, item.path, kept

    try:
        pool = Workers([[task(at) for at in share] for share in plan], with_text)
    except OSError as error:
        # (No process left to start, no memory for one.) Slower, but a sync all the same.
        log.warning("could not start sync workers (%s): reading in this process", error)
        return None, {}
    return pool, {position: worker for worker, share in enumerate(plan) for position in share}


@contextlib.contextmanager
def bulk_writing(connection: apsw.Connection) -> Iterator[None]:
    """How the writer of a sync runs while it writes rows: fewer checkpoints of the
    write-ahead log, fewer cycle collections, one price table for every line it reads."""
    with (
        _checkpoints_every(connection, SYNC_CHECKPOINT_PAGES),
        _few_collections(),
        fixed_prices(),
    ):
        yield


@contextlib.contextmanager
def _few_collections() -> Iterator[None]:
    """The cycle collector run rarely, for a while (see pipeline.FEW_COLLECTIONS: reading
    files here makes the same garbage-free containers a worker makes)."""
    previous = gc.get_threshold()
    gc.set_threshold(*pipeline.FEW_COLLECTIONS)
    try:
        yield
    finally:
        gc.set_threshold(*previous)


@contextlib.contextmanager
def _checkpoints_every(connection: apsw.Connection, pages: int) -> Iterator[None]:
    """SQLite's automatic checkpoints every ``pages`` pages of write-ahead log, for a while."""
    ((previous,),) = connection.execute("PRAGMA wal_autocheckpoint")
    connection.execute(f"PRAGMA wal_autocheckpoint = {int(pages)}")
    try:
        yield
    finally:
        connection.execute(f"PRAGMA wal_autocheckpoint = {int(previous)}")


def _keep_out_of_reach(
    vanished: dict[str, KnownFile], roots: list[str], report: SyncReport
) -> None:
    """A known file that is out of reach is not gone: it keeps its rows (and its blob refs
    stay counted), and its folder is reported unreadable until it can be looked at again."""
    for path in list(vanished):
        if os.path.lexists(path):
            # Out of the scan's reach while it ran (a folder link's target was back only
            # after it), there now: the next sync reads it.
            del vanished[path]
            continue
        root = next(root for root in roots if is_under_any(path, [root]))
        found = hiding_folder(path, root)
        if found is not None:
            del vanished[path]
            report.unreadable[found[0]] = found[1]


def _follow_renames(
    connection: apsw.Connection,
    seen: dict[str, SeenFile],
    known_paths: Set[str],
    vanished: dict[str, KnownFile],
    report: SyncReport,
    keeper: Keeper | None = None,
) -> set[str]:
    """A vanished file that reappears under a new name (same inode, size, mtime) is moved;
    returns the new paths. So is one copied under the same name elsewhere and deleted (moved
    to another disk, a new inode): same name, same size, the same bytes indexed. Its archive
    stays its own, and records the new place.

    Only a file whose rows hold what it says moves with them: one that could not be read when
    it was found has no rows (its blob refs would be missing for good), and the bytes indexed
    must still begin the file (an inode number is reused at once, by a file that may have the
    same size and mtime). Any other is read again under its new name.
    """
    renamed: set[str] = set()
    movable = [row for row in vanished.values() if row.status == "ok"]
    by_identity = {(row.inode, row.size, row.mtime_ns): row for row in movable}
    by_name = {(os.path.basename(row.path), row.size): row for row in movable}
    if not by_identity:
        return renamed
    for path, item in seen.items():
        if path in known_paths or item.agent is not None:
            continue  # (a plugin's session is no file: its identity is the plugin's)
        row = by_identity.get((item.inode, item.size, item.mtime_ns))
        if row is None:
            row = by_name.get((os.path.basename(path), item.size))
        if row is None or row.path not in vanished or not _holds_indexed_bytes(path, row, report):
            continue
        with transaction(connection):
            connection.execute(
                # A rename sets the ctime (a copy the inode and mtime too): keep the new ones, or
                # the next sync re-reads the file.
                "UPDATE files SET path = ?, root = ?, project_dir = ?, ctime_ns = ?, inode = ?,"
                " mtime_ns = ? WHERE id = ?",
                (path, item.root, item.project_dir, item.ctime_ns, item.inode, item.mtime_ns,
                 row.id),
            )  # fmt: skip
            connection.execute(
                "UPDATE sessions SET path = ?, project_dir = ? WHERE file_id = ?",
                (path, item.project_dir, row.id),
            )
            if keeper is not None:
                keeper.moved(row.id, Place(path, item.root, item.project_dir))
                keeper.sync()
        del vanished[row.path]
        renamed.add(path)
        report.files_renamed += 1
    return renamed


def _holds_indexed_bytes(path: str, row: KnownFile, report: SyncReport) -> bool:
    try:
        with open_regular_file(path) as stream:
            return indexed_windows(stream, row, report) is not None
    except OSError:
        return False  # gone again, or not readable: the indexer decides about it


def mark_unreadable(
    connection: apsw.Connection, item: SeenFile, row: KnownFile | None, error: str
) -> None:
    """Keep whatever rows the file had (their blob refs stay counted) and say why."""
    with transaction(connection):
        if row is None:
            connection.execute(
                "INSERT OR IGNORE INTO files (path, root, project_dir, size, mtime_ns, inode,"
                " ctime_ns, status, error, indexed_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, 'unreadable', ?, ?)",
                (item.path, item.root, item.project_dir, item.size, item.mtime_ns, item.inode,
                 item.ctime_ns, error, iso_now()),
            )  # fmt: skip
        else:
            connection.execute(
                "UPDATE files SET status = 'unreadable', error = ?, indexed_at = ? WHERE id = ?",
                (error, iso_now(), row.id),
            )
