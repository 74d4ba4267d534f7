"""Search text put off: the search rows of the files a usage-first sync read without them.

A first sync of a big tree spends about half its time on entries_fts (the text of each entry,
tokenized, its postings merged). Someone who asked for today's usage does not need it: such a
sync (``sync_files(text=False)``) writes every other row of those files and marks them
``text_pending`` (migration 0013); :func:`index_pending_text` adds their search rows afterwards,
from the files as they are now, when the file still is what was indexed (same size, time and
inode: else the next sync reads it again first).

An entry's search text depends on its line alone (agents/base.py; model/facts.py for xcsh files), so
the file is read again from its start exactly as a sync reads it, and each text goes to the
entry of the same ``seq``. Entries that have a search row already (appended since, and indexed
with theirs) keep it. Each file's search rows and the clearing of its mark commit together:
a pass killed at any point leaves every file either done or still pending, and the next sync
carries on.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Iterator

import apsw

from xcsh_store.errors import XcshStoreError
from xcsh_store.files import open_regular_file
from xcsh_store.index.archive.sources import sources_of
from xcsh_store.index.write import pipeline
from xcsh_store.index.write.build import Chunk, FileStat, chunks_of
from xcsh_store.index.write.bulk_load import bulk_writing
from xcsh_store.index.write.indexer import COMMIT_EVERY_BYTES, COMMIT_EVERY_VALUES
from xcsh_store.index.write.pipeline import SyncWorkerError, Workers, shares
from xcsh_store.index.write.scan import Progress

log = logging.getLogger("xcsh_store")

_PENDING = (
    "SELECT id, path, size, mtime_ns, inode, gone_at IS NOT NULL FROM files"
    # (A file whose entries are still to come gets its text with them: entries_later.py.)
    " WHERE text_pending = 1 AND entries_pending = 0 ORDER BY id"
)
_WITHOUT_TEXT = (
    "SELECT seq, pk FROM entries AS e WHERE session = ?"
    " AND NOT EXISTS (SELECT 1 FROM entries_fts_docsize AS d WHERE d.id = e.pk)"
)


def index_pending_text(
    connection: apsw.Connection, workers: int = 1, progress: Progress | None = None
) -> tuple[int, int]:
    """Add the search rows of every file marked ``text_pending`` that is unchanged since it
    was indexed; returns (files done, files left pending: changed since, to be read again by
    the next sync). ``workers`` as for a sync."""
    pending = list(connection.execute(_PENDING))
    if not pending:
        return 0, 0
    sizes = [(position, row[2]) for position, row in enumerate(pending)]
    total = sum(size for _position, size in sizes)
    pool = None
    owners: dict[int, int] = {}
    # A file found gone meanwhile is read from its archive, here (workers read files).
    sizes = [(position, size) for position, size in sizes if not pending[position][5]]
    if workers >= 2 and total >= pipeline.PARALLEL_MIN_BYTES:
        plan = shares(sizes, min(workers, len(sizes)))
        try:
            pool = Workers([[(at, pending[at][1], None) for at in share] for share in plan])
        except OSError as error:
            log.warning("could not start workers for the search text (%s)", error)
        owners = {at: worker for worker, share in enumerate(plan) for at in share}
    done = left = 0
    writer = _TextWriter(connection)
    try:
        with bulk_writing(connection):
            for position, (file_id, path, size, mtime_ns, inode, gone) in enumerate(pending):
                if progress is not None:
                    progress(sum(s for _p, s in sizes[:position]), total, path)
                try:
                    if gone:
                        stat, chunks = _read_archived(connection, path, mtime_ns)
                    elif pool is not None:
                        stat, chunks = pool.read(owners[position], position)
                    else:
                        stat, chunks = _read_here(path)
                except (OSError, XcshStoreError):
                    left += 1  # the next sync finds out what became of it
                    continue
                texts = _texts_by_seq(chunks)
                if not gone and stat[:3] != (size, mtime_ns, inode):
                    left += 1
                    continue
                writer.add(file_id, texts)
                done += 1
            writer.commit()
    except SyncWorkerError:
        writer.commit()
        raise
    except BaseException:
        writer.rollback()
        raise
    finally:
        if pool is not None:
            pool.close()
    if progress is not None:
        progress(total, total, "")
    return done, left


def _read_here(path: str) -> tuple[FileStat, Iterator[Chunk]]:
    with open_regular_file(path) as stream:
        info = os.fstat(stream.fileno())
        chunks = chunks_of(stream, path, info.st_mtime_ns)
    return (info.st_size, info.st_mtime_ns, info.st_ino, info.st_ctime_ns), iter(chunks)


def _read_archived(
    connection: apsw.Connection, path: str, mtime_ns: int
) -> tuple[FileStat, Iterator[Chunk]]:
    """A gone file's chunks, read from a copy made of its archive."""
    sources = sources_of(connection)
    if sources is None:
        raise FileNotFoundError(path)
    with sources.copy_of(path) as copy, open_regular_file(copy) as stream:
        chunks = chunks_of(stream, path, mtime_ns)
    return (0, mtime_ns, 0, 0), iter(chunks)


def _texts_by_seq(chunks: Iterable[Chunk]) -> dict[int, str]:
    """{seq: search text} of a read's entries (every chunk is taken, to the final one)."""
    texts: dict[int, str] = {}
    for chunk in chunks:
        if chunk.texts:
            seq_of = {row[0]: row[1] for row in chunk.entries}
            for key, text in chunk.texts:
                texts[seq_of[key]] = text
    return texts


class _TextWriter:
    """Search rows written with the clearing of their files' marks, committed every few MB."""

    def __init__(self, connection: apsw.Connection) -> None:
        self.connection = connection
        self.values = 0
        self.bytes = 0

    def add(self, file_id: int, texts: dict[int, str]) -> None:
        connection = self.connection
        if not connection.in_transaction:
            connection.execute("BEGIN IMMEDIATE")
        rows = sorted(
            (pk, texts[seq]) for seq, pk in connection.execute(_WITHOUT_TEXT, (file_id,))
            if seq in texts
        )  # fmt: skip
        connection.executemany("INSERT INTO entries_fts (rowid, text) VALUES (?, ?)", rows)
        connection.execute("UPDATE files SET text_pending = 0 WHERE id = ?", (file_id,))
        self.values += len(rows)
        self.bytes += sum(len(text) for _pk, text in rows)
        if self.values >= COMMIT_EVERY_VALUES or self.bytes >= COMMIT_EVERY_BYTES:
            self.commit()

    def commit(self) -> None:
        if self.connection.in_transaction:
            self.connection.execute("COMMIT")
        self.values = self.bytes = 0

    def rollback(self) -> None:
        if self.connection.in_transaction:
            self.connection.execute("ROLLBACK")
        self.values = self.bytes = 0
