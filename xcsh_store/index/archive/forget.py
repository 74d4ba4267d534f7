"""Forgetting sessions on purpose (``xcsh-store forget``): their rows leave the index and their
archive files the archive, the only way anything leaves the archive; the team index drops them
on the next push (it deletes what the index no longer holds).

The index commits first, with the archive files to delete noted in it; the files go after,
and a sync finishes what a forget killed in between left (:func:`finish_forgetting`), so that
no archive file of a forgotten session is ever taken back into the index. A session whose file
is still there leaves the file's identity behind (the ``forgotten`` table): a sync leaves such
a file alone until its agent writes to it again.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import apsw
import orjson

from xcsh_store.index import db as database
from xcsh_store.index.archive.folder import ArchiveFolder
from xcsh_store.index.archive.sources import source_there
from xcsh_store.index.write.indexer import drop_file_rows
from xcsh_store.index.write.summaries import resolve_summary_titles
from xcsh_store.times import iso_now

# The archive files still to delete (a JSON list of base names), noted with the commit.
PENDING_KEY = "archive_forget_pending"


@dataclass
class Forgotten:
    """What a forget did (or, dry, would do)."""

    sessions: int = 0
    entries: int = 0
    archive_files: int = 0
    archive_bytes: int = 0
    # Sessions whose file is still there (a sync reads it again once its agent writes to it).
    files_left: int = 0

    def to_json(self) -> dict[str, int]:
        return {
            "sessions": self.sessions, "entries": self.entries,
            "archive_files": self.archive_files, "archive_bytes": self.archive_bytes,
            "files_left": self.files_left,
        }  # fmt: skip


def forget_files(
    connection: apsw.Connection, folder: ArchiveFolder, file_ids: Iterable[int], apply: bool
) -> Forgotten:
    """Forget the sessions of ``file_ids`` (only count them unless ``apply``)."""
    report = Forgotten()
    bases: list[str] = []
    ids = sorted(set(file_ids))
    for file_id in ids:
        found: list[tuple[Any, ...]] = connection.execute(
            "SELECT f.path, f.size, f.mtime_ns, f.inode, f.ctime_ns, f.gone_at, a.name,"
            " (SELECT count(*) FROM entries WHERE session = f.id)"
            " FROM files AS f LEFT JOIN archived AS a ON a.file_id = f.id WHERE f.id = ?",
            (file_id,),
        ).fetchall()
        if not found:
            continue
        path, size, mtime_ns, inode, ctime_ns, gone_at, base, entries = found[0]
        report.sessions += 1
        report.entries += entries
        if base is not None:
            bases.append(base)
            for version in folder.versions(base):
                with contextlib.suppress(FileNotFoundError):
                    report.archive_bytes += os.stat(folder.path_of(base, version)).st_size
                    report.archive_files += 1
        there = gone_at is None and source_there(path)
        report.files_left += there
        if not apply:
            continue
        with database.transaction(connection):
            drop_file_rows(connection, file_id)
            connection.execute("DELETE FROM archived WHERE file_id = ?", (file_id,))
            connection.execute("DELETE FROM files WHERE id = ?", (file_id,))
            if there:
                connection.execute(
                    "INSERT OR REPLACE INTO forgotten VALUES (?, ?, ?, ?, ?, ?)",
                    (path, size, mtime_ns, inode, ctime_ns, iso_now()),
                )
            if base is not None:
                _note_pending(connection, [base])
            # A Claude summary line of the forgotten file titled other sessions: no longer.
            resolve_summary_titles(connection, [file_id])
    if apply:
        finish_forgetting(connection, folder)
    return report


def _note_pending(connection: apsw.Connection, bases: list[str]) -> None:
    pending = orjson.loads(database.get_meta(connection, PENDING_KEY) or "[]")
    database.set_meta(connection, PENDING_KEY, orjson.dumps([*pending, *bases]).decode())


def finish_forgetting(connection: apsw.Connection, folder: ArchiveFolder) -> None:
    """Delete the archive files of forgotten sessions that are still there (a forget killed
    after its commit), then clear the note."""
    pending = database.get_meta(connection, PENDING_KEY)
    if pending is None:
        return
    for base in orjson.loads(pending):
        folder.remove(base)
    with database.transaction(connection):
        connection.execute("DELETE FROM meta WHERE key = ?", (PENDING_KEY,))
