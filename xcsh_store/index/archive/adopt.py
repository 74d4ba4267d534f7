"""The index made again from the archive: each archived session whose file the index does not
hold (a new index.db, the file long gone) is read from its archive's copy and indexed as it was,
marked gone; an archive whose file the index read anew is recorded as that file's.

Run by the first sync of an index (and by every full sync), after the files were read: a
session whose file is still there comes from the file, the others from the archive.
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from typing import Any

import apsw

from xcsh_store.agents import reader_named
from xcsh_store.index import db as database
from xcsh_store.index.archive.folder import ArchiveFolder, StoredVersion
from xcsh_store.index.archive.forget import finish_forgetting
from xcsh_store.index.archive.frames import APPEND, ArchiveDamagedError, Contents
from xcsh_store.index.archive.keeper import ArchivedRow, record_archived
from xcsh_store.index.archive.sources import ArchivedSources
from xcsh_store.index.write.bulk_load import bulk_load, bulk_writing
from xcsh_store.index.write.indexer import pk_counter
from xcsh_store.index.write.scan import (
    KnownFile,
    SeenFile,
    SyncReport,
    describe_error,
    known_file,
    stale_files,
)
from xcsh_store.index.write.stages.read import FileIndexer
from xcsh_store.times import iso_now

log = logging.getLogger("xcsh_store")

# Set once an index has taken in every archive (the syncs after it find the new ones as they
# archive them).
ADOPTED_KEY = "archive_adopted"


def adopt_archived(
    connection: apsw.Connection,
    folder: ArchiveFolder,
    report: SyncReport,
    every_time: bool,
    roots: Collection[str] | None,
) -> None:
    """Index the archived sessions of ``roots`` (None: of every root) the index lacks (once per
    index, or ``every_time``): those of a root turned off stay out."""
    finish_forgetting(connection, folder)
    if not every_time and database.get_meta(connection, ADOPTED_KEY) is not None:
        return
    try:
        latest: dict[str, StoredVersion] = {}
        for stored in folder.stored():
            if stored.base not in latest or stored.version > latest[stored.base].version:
                latest[stored.base] = stored
    except OSError as error:
        report.archive_error = f"cannot list the session archive {folder.folder}: {error}"
        return
    recorded = {name for (name,) in connection.execute("SELECT name FROM archived")}
    files = dict(connection.execute("SELECT path, id FROM files"))
    indexer = FileIndexer(connection, pk_counter(connection), report)
    sources = ArchivedSources(folder, lambda: connection)
    found: list[tuple[str, StoredVersion, Contents]] = []
    for base, stored in latest.items():
        if base in recorded:
            continue
        try:
            contents = folder.contents(base, stored.version)
        except (OSError, ArchiveDamagedError) as error:
            log.warning("archive %s left out: %s", stored.path, error)
            continue
        assert contents.header is not None and contents.source is not None
        if roots is None or (contents.root or contents.header.root) in roots:
            found.append((base, stored, contents))
    # Oldest first, as a sync reads files: entry keys grow with recency (search ranks by them).
    found.sort(key=lambda item: (item[2].mtime_ns, item[2].source or ""))
    gone_bytes = sum(_held(contents) for _, _, contents in found if contents.source not in files)
    # Read as a sync reads: every line priced with one table (looking at the prices files again
    # for each took half of the time of adopting Claude Code sessions), and into an empty index
    # (a new machine's, its sessions only in the archive) as a first load.
    with bulk_writing(connection), bulk_load(connection, gone_bytes):
        for base, stored, contents in found:
            file_id = files.get(contents.source)
            try:
                if file_id is None:
                    _index_gone(connection, indexer, sources, base, stored.version, contents)
                else:
                    _record(connection, file_id, base, stored.version, contents)
            except (OSError, ArchiveDamagedError) as error:
                indexer.batch.rollback()
                report.unreadable[stored.path] = (
                    describe_error(error) if isinstance(error, OSError) else str(error)
                )
    with database.transaction(connection):
        database.set_meta(connection, ADOPTED_KEY, iso_now())


def read_again(connection: apsw.Connection, folder: ArchiveFolder, report: SyncReport) -> None:
    """The gone files whose rows an earlier revision of their agent's reader made: read again
    from their archive, their rows replaced in the same transaction, still gone since they
    went. One whose archive does not read keeps its rows (and is tried again next time)."""
    stale = stale_files(connection)
    if not stale:
        return
    indexer = FileIndexer(connection, pk_counter(connection), report)
    sources = ArchivedSources(folder, lambda: connection)
    with bulk_writing(connection):  # (as adopt_archived reads)
        for path in sorted(stale):
            found: list[tuple[Any, ...]] = connection.execute(
                "SELECT f.gone_at, a.name, a.version FROM files AS f"
                " JOIN archived AS a ON a.file_id = f.id"
                " WHERE f.path = ? AND f.gone_at IS NOT NULL",
                (path,),
            ).fetchall()
            known = known_file(connection, path)
            if not found or known is None:
                continue
            gone_at, base, version = found[0]
            try:
                contents = folder.contents(base, version)
                _index_gone(connection, indexer, sources, base, version, contents, known, gone_at)
            except (OSError, ArchiveDamagedError) as error:
                indexer.batch.rollback()
                report.unreadable[path] = (
                    describe_error(error) if isinstance(error, OSError) else str(error)
                )


def _record(
    connection: apsw.Connection, file_id: int, base: str, version: int, contents: Contents
) -> None:
    """An archive of a file the index read from the file: recorded as its archive when it
    holds what was indexed (else the file's next whole read begins a new version)."""
    assert contents.header is not None
    kind = contents.header.kind
    ((indexed,),) = connection.execute("SELECT indexed_bytes FROM files WHERE id = ?", (file_id,))
    if kind == APPEND and contents.source_bytes != indexed:
        return
    held = contents.source_bytes if kind == APPEND else sum(p.length for p in contents.pieces)
    with database.transaction(connection):
        record_archived(connection, ArchivedRow(file_id, base, kind, version, held, contents.end))


def _held(contents: Contents) -> int:
    """How many bytes of its source an archive holds."""
    assert contents.header is not None
    if contents.header.kind == APPEND:
        return contents.source_bytes
    return sum(piece.length for piece in contents.pieces)


def _index_gone(
    connection: apsw.Connection,
    indexer: FileIndexer,
    sources: ArchivedSources,
    base: str,
    version: int,
    contents: Contents,
    known: KnownFile | None = None,
    gone_at: str | None = None,
) -> None:
    """Index an archived session whose file is gone, from a copy made of its archive (``known``:
    its row in the index, whose rows are replaced; ``gone_at``: since when it is gone)."""
    header = contents.header
    assert header is not None and contents.source is not None
    plugin = reader_named(header.agent)
    agent = None
    if plugin is not None and (header.kind != APPEND or plugin.kind_of(contents.source) != "jsonl"):
        agent = plugin.name
    held = _held(contents)
    seen = SeenFile(
        contents.source, contents.root or header.root, contents.project_dir or "", held,
        contents.mtime_ns, 0, 0, agent,
    )  # fmt: skip
    with sources.copy_from(base, version, contents) as copy:
        file_id = indexer.index_copy(seen, copy, known)
    record_archived(
        connection, ArchivedRow(file_id, base, header.kind, version, held, contents.end)
    )
    connection.execute("UPDATE files SET gone_at = ? WHERE id = ?", (gone_at or iso_now(), file_id))
    indexer.batch.commit()
