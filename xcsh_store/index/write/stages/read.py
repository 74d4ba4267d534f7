"""The read stage of a sync: each file of the todo (stages/changed.py) read, here or by a
worker process (write/pipeline.py), and handed to the writer (write/indexer.py) chunk by chunk.

A file to read whole goes to a worker when there is enough to read whole to pay for starting
them; any other (an append, a plugin's session) is read here, from where its last read
stopped when it only grew. Either way the reader of its format (write/build.py; agents/ for
the records of other agents' sessions) makes the chunks of rows, and ``FileWrite.apply``
writes each as it comes."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterable, Iterator
from typing import BinaryIO

import apsw

from xcsh_store.agents import PLUGIN_FAULTS, reader_named
from xcsh_store.files import open_regular_file
from xcsh_store.index.archive.capture import KeptPieces
from xcsh_store.index.archive.folder import ArchiveWriteError
from xcsh_store.index.archive.keeper import Keeper, Place
from xcsh_store.index.db import transaction
from xcsh_store.index.write import pipeline
from xcsh_store.index.write.build import (
    Chunk,
    FileStat,
    read_appended,
    read_from_start,
    read_source,
)
from xcsh_store.index.write.bulk_load import bulk_load, bulk_writing
from xcsh_store.index.write.indexer import (
    FileWrite,
    FileWriter,
    place,
)
from xcsh_store.index.write.pipeline import SyncWorkerError, Workers, shares
from xcsh_store.index.write.scan import KnownFile, Progress, SeenFile, SyncReport, describe_error
from xcsh_store.index.write.stages.resume import RowsInIndex, indexed_windows, resumed_state
from xcsh_store.times import iso_now

log = logging.getLogger("xcsh_store")


class FileIndexer(FileWriter):
    """Indexes files within the current batch (the caller commits the batch); commits always
    end on a line boundary."""

    def index(self, seen: SeenFile, known: KnownFile | None, full: bool) -> None:
        """Read one file here and index it: from where the last read stopped when it only
        grew, else whole (a session of another kind than JSONL: always whole)."""
        if seen.agent is not None:
            self._index_source(seen, known)
            return
        with open_regular_file(seen.path) as stream:
            info = os.fstat(stream.fileno())
            self.opened(seen, (info.st_size, info.st_mtime_ns, info.st_ino, info.st_ctime_ns))
            resume = None if full or known is None else self._resume_point(stream, known)
            first_key = self.keys.peek()
            write = FileWrite(self, seen, known, resume is None, first_key)
            keeper = self.keeper
            try:
                if resume is None:
                    kept = None
                    if keeper is not None:
                        kept = keeper.kept_pieces(None if known is None else known.id, place(seen))
                    read_from_start(
                        stream, seen.path, seen.mtime_ns, write.apply, first_key=first_key,
                        with_text=self.with_text, kept=kept,
                    )  # fmt: skip
                else:
                    assert known is not None
                    state = resumed_state(self.connection, known, seen.path, *resume)
                    indexed = RowsInIndex(self.connection, known.id, seen.path)
                    archive = keeper is not None and keeper.resumes(
                        known.id, known.indexed_bytes, seen.root
                    )
                    read_appended(
                        stream, state, seen.mtime_ns, first_key, indexed, write.apply,
                        archive=archive,
                    )  # fmt: skip
            except BaseException:
                write.abandon()
                raise

    def _index_source(self, seen: SeenFile, known: KnownFile | None) -> None:
        """A session an agent plugin reads itself (scan.SeenFile.agent), read again whole. What
        the plugin raises (but an OSError: unreadable) costs the session, not the sync."""
        agent = reader_named(seen.agent)
        assert agent is not None
        self.opened(seen, (seen.size, seen.mtime_ns, seen.inode, seen.ctime_ns))
        first_key = self.keys.peek()
        write = FileWrite(self, seen, known, True, first_key)
        # Always with its search text: text_later.py reads files as JSON lines.
        write.text_pending = False
        try:
            read_source(agent, seen.path, seen.mtime_ns, write.apply, first_key=first_key)
        except OSError:
            write.abandon()
            raise
        except PLUGIN_FAULTS as error:
            write.abandon()
            failure = f"agent plugin {agent.name} failed: {type(error).__name__}: {error}"
            raise OSError(failure) from error
        except BaseException:
            write.abandon()
            raise
        if self.keeper is not None and write.file_id is not None:
            # (An OSError reading its files makes the session unreadable, as the read would.)
            self.keeper.keep_document(write.file_id, place(seen), agent, seen.mtime_ns)
        self.report.bytes_read += max(seen.size, 0)

    def index_copy(self, seen: SeenFile, copy: str, known: KnownFile | None = None) -> int:
        """Index a whole session read from ``copy`` (made from its archive: index/archive/
        adopt.py) as the session of the file at ``seen.path``, which is gone (``known``: its
        row, whose rows this read replaces); returns its file id."""
        self.report.read_paths.append(seen.path)
        first_key = self.keys.peek()
        write = FileWrite(self, seen, known, True, first_key)
        write.text_pending = False
        write.read_path = copy
        agent = reader_named(seen.agent)
        try:
            if agent is not None:
                read_source(agent, seen.path, seen.mtime_ns, write.apply, first_key, copy)
            else:
                with open_regular_file(copy) as stream:
                    read_from_start(
                        stream, seen.path, seen.mtime_ns, write.apply, first_key=first_key
                    )
        except OSError:
            write.abandon()
            raise
        except PLUGIN_FAULTS as error:
            write.abandon()
            if agent is None:
                raise
            # (As _index_source: the plugin's fault costs this session, not the sync.)
            failure = f"agent plugin {agent.name} failed: {type(error).__name__}: {error}"
            raise OSError(failure) from error
        except BaseException:
            write.abandon()
            raise
        assert write.file_id is not None
        return write.file_id

    def apply_built(
        self, seen: SeenFile, known: KnownFile | None, stat: FileStat, chunks: Iterable[Chunk]
    ) -> None:
        """Index the chunks another process read from one file, whole (``stat`` is what it
        saw when it opened the file)."""
        self.opened(seen, stat)
        write = FileWrite(self, seen, known, True, 0)
        try:
            for chunk in chunks:
                write.apply(chunk)
        except BaseException:
            write.abandon()
            raise

    def opened(self, seen: SeenFile, stat: FileStat) -> None:
        """The file as its reader opened it: the identity its file row records."""
        seen.size, seen.mtime_ns, seen.inode, seen.ctime_ns = stat
        self.report.read_paths.append(seen.path)

    def _resume_point(self, stream: BinaryIO, known: KnownFile) -> tuple[bytes, bytes] | None:
        """The bytes around the old end when the file only grew; None when it must be re-read."""
        if not may_resume(known, os.fstat(stream.fileno()).st_size):
            return None
        windows = indexed_windows(stream, known, self.report)
        if windows is None:
            return None
        head, tail = windows
        if not tail.endswith(b"\n"):
            # The last indexed line had no newline: what follows now continues that very line
            # (old appends glued objects that way), so the line must be parsed again whole.
            return None
        return head, tail


def may_resume(known: KnownFile, size: int) -> bool:
    """Whether a file of ``size`` bytes may continue where its last read stopped, before
    looking at its bytes (whose hashes may still say no)."""
    if known.legacy or known.stale or known.status != "ok" or known.indexed_bytes == 0:
        return False
    # Shorter, or changed without growing: an edit in place, perhaps in the middle, where
    # neither hash looks.
    return not (size < known.indexed_bytes or size == known.size)


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


def index_files(
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
    whole_bytes = bytes_to_read_whole(todo, full)
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


def whole_reads(todo: list[tuple[SeenFile, KnownFile | None]], full: bool) -> list[tuple[int, int]]:
    """(position in ``todo``, bytes) of the files to read whole."""
    return [
        (position, item.size)
        for position, (item, row) in enumerate(todo)
        if (full or row is None or not may_resume(row, item.size)) and item.agent is None
    ]


def bytes_to_read_whole(todo: list[tuple[SeenFile, KnownFile | None]], full: bool) -> int:
    return sum(size for _position, size in whole_reads(todo, full))


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
    whole = whole_reads(todo, full)
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
