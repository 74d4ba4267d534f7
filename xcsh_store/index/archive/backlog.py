"""Archiving what the index holds and the archive does not: the files indexed before the
archive existed (or before their agent's archiving was turned on), and those whose archive fell
behind (an append read while it lagged). Run by each sync after the files were read; a no-change
sync finds nothing to do here.

A file's bytes are taken only while it still begins with what was indexed (the hashes of its
first and last indexed bytes, as an append read checks them): a file changed since is read
again whole by the next sync, which archives it then.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import apsw
import orjson

from xcsh_store.agents import kind_of, reader_named
from xcsh_store.files import open_regular_file
from xcsh_store.index.archive.capture import PIECE_BYTES
from xcsh_store.index.archive.frames import APPEND, piece_record
from xcsh_store.index.archive.keeper import Keeper, Place
from xcsh_store.index.usage_ranks import settle_ranks
from xcsh_store.index.write.scan import SyncReport, known_file
from xcsh_store.index.write.stages.resume import indexed_windows

_BEHIND = (
    "SELECT f.id, f.path, f.root, f.project_dir, f.agent, f.indexed_bytes, f.mtime_ns,"
    " a.source_bytes FROM files AS f LEFT JOIN archived AS a ON a.file_id = f.id"
    # (A file whose entries are still to come is archived as they are read: usage_first.py.)
    " WHERE f.gone_at IS NULL AND f.status = 'ok' AND f.size >= 0 AND f.entries_pending = 0"
    " AND f.root IN (SELECT value FROM json_each(?))"
    f" AND (a.file_id IS NULL OR (a.kind = '{APPEND}' AND a.source_bytes < f.indexed_bytes))"
)


def catch_up(connection: apsw.Connection, keeper: Keeper, report: SyncReport) -> None:
    """Archive the indexed bytes the archive lacks, file by file, each in its own commit."""
    if not keeper.roots:
        return
    behind = list(connection.execute(_BEHIND, (orjson.dumps(list(keeper.roots)).decode(),)))
    for file_id, path, root, project_dir, agent, indexed_bytes, mtime_ns, kept in behind:
        place = Place(path, root, project_dir)
        plugin = reader_named(agent)
        try:
            with _committed(connection, keeper):
                if plugin is not None and kind_of(plugin, path) != "jsonl":
                    keeper.keep_document(file_id, place, plugin, mtime_ns)
                else:
                    _append_behind(
                        connection, keeper, file_id, place, kept or 0, indexed_bytes, mtime_ns,
                        report,
                    )  # fmt: skip
        except OSError:
            continue  # gone or unreadable since the scan: the next sync sees what it is


def _append_behind(
    connection: apsw.Connection,
    keeper: Keeper,
    file_id: int,
    place: Place,
    start: int,
    indexed_bytes: int,
    mtime_ns: int,
    report: SyncReport,
) -> None:
    known = known_file(connection, place.path)
    if known is None:
        return
    with open_regular_file(place.path) as stream:
        if indexed_windows(stream, known, report) is None:
            return  # changed since it was indexed: the next sync reads it whole
        descriptor = stream.fileno()
        offset = start
        while offset < indexed_bytes:
            data = os.pread(descriptor, min(PIECE_BYTES, indexed_bytes - offset), offset)
            if not data:
                raise OSError(f"{place.path} is shorter than what was indexed")
            record = piece_record(offset, data, mtime_ns)
            keeper.append(file_id, place, offset, offset + len(data), record)
            offset += len(data)


@contextlib.contextmanager
def _committed(connection: apsw.Connection, keeper: Keeper) -> Iterator[None]:
    """One transaction whose archive bytes reach the disk before its commit."""
    connection.execute("BEGIN IMMEDIATE")
    try:
        yield
        settle_ranks(connection)
        keeper.sync()
    except BaseException:
        connection.execute("ROLLBACK")
        keeper.rolled_back()
        raise
    connection.execute("COMMIT")
    keeper.committed()
