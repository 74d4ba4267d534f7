"""Putting the index right: re-index the files a verify found different, recount blob
references, delete stale search rows, and start a damaged index.db afresh (moved aside, rebuilt
from the files)."""

from __future__ import annotations

import logging

import apsw

from xcsh_store.index import db as database
from xcsh_store.index.model.search_rows import stale_count
from xcsh_store.index.upkeep.verify import VerifyReport
from xcsh_store.index.write.indexer import drop_file_rows, pk_counter
from xcsh_store.index.write.scan import SeenFile, SyncReport, file_ids, known_file
from xcsh_store.index.write.stages.read import FileIndexer
from xcsh_store.index.write.stale_search import delete_stale_rows
from xcsh_store.index.write.summaries import resolve_summary_titles
from xcsh_store.times import iso_now

log = logging.getLogger("xcsh_store")


def repair_files(
    connection: apsw.Connection,
    report: VerifyReport,
    on_disk: dict[str, SeenFile],
    indexed: dict[str, int],
) -> None:
    """Re-index (or drop, when gone) every file the report lists, each in its own transaction,
    give Claude sessions the titles their summary lines give them again, recount the blob
    references when the report found a wrong refcount, and delete the search rows of entries
    that are gone."""
    indexer = FileIndexer(connection, pk_counter(connection), SyncReport())
    for path in [*report.differences, *report.changed_since_sync]:
        if path not in on_disk and path not in indexed:
            # A session whose file is gone: its rows stay whatever its archive lost (the
            # archive's own repair keeps what still decodes: index/archive/check.py).
            continue
        if path in on_disk:
            known = known_file(connection, path)
            indexer.index(on_disk[path], known, full=True)
            indexer.batch.commit()
        else:
            with database.transaction(connection):
                drop_file_rows(connection, indexed[path])
                connection.execute("DELETE FROM files WHERE id = ?", (indexed[path],))
        report.repaired.append(path)
    with database.transaction(connection):
        resolve_summary_titles(connection, file_ids(connection, report.repaired))
    if report.refcount_errors:
        _recount_blobs(connection)
    # Stale search rows go too (those of the files just re-indexed among them), whether or
    # not they were counted right.
    if report.search_errors or stale_count(connection):
        delete_stale_rows(connection)


def _recount_blobs(connection: apsw.Connection) -> None:
    with database.transaction(connection):
        connection.execute(
            "UPDATE blobs SET refcount = (SELECT count(*) FROM blob_refs AS r"
            " WHERE r.hash = blobs.hash)"
        )
        connection.execute(
            "INSERT OR IGNORE INTO blobs (hash, refcount, first_seen, last_seen)"
            " SELECT hash, count(*), ?1, ?1 FROM blob_refs GROUP BY hash",
            (iso_now(),),
        )


def start_afresh(db_path: str, damage: object) -> apsw.Connection:
    """Move the damaged ``db_path`` (and its side files) aside with a warning, and connect to a
    new, migrated index in its place; the caller has closed its own connection to it, and a
    sync fills it from the files.

    ``damage`` is what was found wrong: an error, or the text of one.
    """
    moved = database.move_aside(db_path)
    if isinstance(damage, database.DamagedIndexError):
        described = str(damage)  # it names the file already
    else:
        described = f"{db_path} is damaged ({damage})"
    log.warning("%s; moved it to %s and rebuilding from the session files", described, moved)
    connection = database.connect(db_path)
    try:
        database.apply_migrations(connection, database.load_migrations())
    except BaseException:
        connection.close()
        raise
    return connection
