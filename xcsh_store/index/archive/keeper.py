"""The archive's writer during a sync: which files it keeps, the pieces a whole read checks a
file against, the pieces readers captured appended to their archive files, the documents kept
whole, and the ``archived`` rows that record them (migration 0014), written in the same
transaction as the rows made of those bytes.

The order is what makes a crash safe: archive bytes are written and fsynced before the index
commit that records their length (``WriteBatch.commit`` calls :meth:`Keeper.sync`), so an index
row never names archive bytes that are not there; bytes past the recorded length are a sync
killed before its commit, cut off when the file is next written to (folder.py).
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import apsw

from xcsh_store.agents import PLUGIN_FAULTS, Agent
from xcsh_store.index.archive.capture import KeptPieces
from xcsh_store.index.archive.folder import Appender, ArchiveFolder, base_name, sync_folder
from xcsh_store.index.archive.frames import (
    APPEND,
    DOCUMENT,
    ArchiveDamagedError,
    Contents,
    Header,
    move_record,
    piece_record,
)
from xcsh_store.times import iso_now

log = logging.getLogger("xcsh_store")


@dataclass(frozen=True, slots=True)
class ArchivedRow:
    """What the index recorded of a file's archive (the ``archived`` table)."""

    file_id: int
    name: str
    kind: str
    version: int
    source_bytes: int
    archive_bytes: int


def archived_row(connection: apsw.Connection, file_id: int) -> ArchivedRow | None:
    found: list[tuple[Any, ...]] = connection.execute(
        "SELECT file_id, name, kind, version, source_bytes, archive_bytes FROM archived"
        " WHERE file_id = ?",
        (file_id,),
    ).fetchall()
    return ArchivedRow(*found[0]) if found else None


def record_archived(connection: apsw.Connection, row: ArchivedRow) -> None:
    connection.execute(
        "INSERT INTO archived (file_id, name, kind, version, source_bytes, archive_bytes)"
        " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (file_id) DO UPDATE SET name = excluded.name,"
        " kind = excluded.kind, version = excluded.version,"
        " source_bytes = excluded.source_bytes, archive_bytes = excluded.archive_bytes",
        (row.file_id, row.name, row.kind, row.version, row.source_bytes, row.archive_bytes),
    )


@dataclass(frozen=True, slots=True)
class Place:
    """Where a file is: its path, its root and its project folder."""

    path: str
    root: str
    project_dir: str


class Keeper:
    """The archive's writer for one sync of the files below ``roots`` (root -> agent: only the
    roots of agents whose sessions are archived)."""

    def __init__(
        self, connection: apsw.Connection, folder: ArchiveFolder, roots: Mapping[str, str]
    ) -> None:
        self.connection = connection
        self.folder = folder
        folder.listings = {}  # (until close: the sync holds the lock)
        self.roots = dict(roots)
        self.appenders: dict[str, Appender] = {}
        # Document versions replaced in this transaction, deleted once it is committed.
        self.replaced: list[tuple[str, int]] = []
        # Archive bytes written (the sync's report).
        self.written = 0

    def keeps(self, root: str) -> bool:
        return root in self.roots

    # -- what a read checks ---------------------------------------------------------------

    def kept_pieces(self, file_id: int | None, place: Place) -> KeptPieces | None:
        """For a whole read of a file: the pieces of its archive (committed ones), which the
        reader checks the file against; [] when none is kept yet; None when it is not
        archived."""
        if not self.keeps(place.root):
            return None
        base, version, committed = self._current(file_id, place)
        if version == 0:
            return []
        try:
            contents = self.folder.contents(base, version)
        except (OSError, ArchiveDamagedError) as error:
            log.warning("archive of %s cannot be read (%s): a new version is begun", place.path,
                        error)  # fmt: skip
            return []
        if contents.header is None or contents.header.kind != APPEND:
            return []
        limit = contents.end if committed is None else committed
        return [
            (piece.offset, piece.length, piece.sha256)
            for piece in contents.pieces
            if piece.at + piece.size <= limit
        ]

    def resumes(self, file_id: int, indexed_bytes: int, root: str) -> bool:
        """Whether an append read of the file captures its bytes: its archive holds just what
        was indexed (else the backlog pass catches up, backlog.py)."""
        if not self.keeps(root):
            return False
        row = archived_row(self.connection, file_id)
        return row is not None and row.kind == APPEND and row.source_bytes == indexed_bytes

    def _current(self, file_id: int | None, place: Place) -> tuple[str, int, int | None]:
        """(base name, current version, committed length: None where the index knows none)."""
        row = None if file_id is None else archived_row(self.connection, file_id)
        if row is not None:
            return row.name, row.version, row.archive_bytes
        base = base_name(self.roots[place.root], place.path)
        return base, max(self.folder.versions(base), default=0), None

    # -- appends --------------------------------------------------------------------------

    def append(self, file_id: int, place: Place, start: int, end: int, record: bytes) -> None:
        """Append a piece a reader captured (bytes ``start``-``end`` of the file) and record
        it, in the transaction of the rows made of those bytes."""
        row = archived_row(self.connection, file_id)
        if row is not None and row.kind == APPEND:
            base, version = row.name, row.version
            committed, kept = row.archive_bytes, row.source_bytes
        else:
            base, version, committed_or_none = self._current(None, place)
            kept, committed = 0, 0
            if version and committed_or_none is None:
                # An archive the index does not know (index.db made again): taken as it is
                # (one that does not read was given no pieces to check: a new version).
                try:
                    contents = self.folder.contents(base, version)
                except (OSError, ArchiveDamagedError):
                    contents = Contents(None)
                if contents.header is not None and contents.header.kind == APPEND:
                    kept, committed = contents.source_bytes, contents.end
        if start != kept or version == 0:
            # A file rewritten or cut (or none kept yet): a new version, the old one kept.
            if start != 0:
                raise ArchiveDamagedError(
                    f"{place.path}: bytes from {start} captured where the archive keeps {kept}"
                )
            version, committed = version + 1, 0
        header = self._header(place, APPEND, version)
        appender = self._appender(base, version, header, committed)
        size = appender.write(record)
        self.written += len(record)
        record_archived(self.connection, ArchivedRow(file_id, base, APPEND, version, end, size))

    def moved(self, file_id: int, place: Place) -> None:
        """The file was renamed: its archive says where it is now (the name stays)."""
        row = archived_row(self.connection, file_id)
        if row is None:
            return
        appender = self._appender(row.name, row.version, None, row.archive_bytes)
        size = appender.write(move_record(place.path, place.root, place.project_dir))
        record_archived(
            self.connection,
            ArchivedRow(file_id, row.name, row.kind, row.version, row.source_bytes, size),
        )

    # -- documents --------------------------------------------------------------------------

    def keep_document(self, file_id: int, place: Place, agent: Agent, mtime_ns: int) -> None:
        """Keep the latest version of a session read whole (its files, as the plugin names
        them): a new archive file when any changed, the one before it deleted once the index
        records the new one."""
        if not self.keeps(place.root):
            return
        members = _members(agent, place)
        if not members:
            return
        digests = [(name, hashlib.sha256(data).digest()) for name, data in members]
        base, version, committed = self._current(file_id, place)
        if version and self._same_document(base, version, digests):
            if committed is None:
                contents = self.folder.contents(base, version)
                total = sum(len(data) for _name, data in members)
                record_archived(
                    self.connection,
                    ArchivedRow(file_id, base, DOCUMENT, version, total, contents.end),
                )
            return
        new = version + 1
        appender = self._appender(base, new, self._header(place, DOCUMENT, new), 0)
        for name, data in members:
            record = piece_record(0, data, mtime_ns, name)
            size = appender.write(record)
            self.written += len(record)
        total = sum(len(data) for _name, data in members)
        record_archived(self.connection, ArchivedRow(file_id, base, DOCUMENT, new, total, size))
        if version:
            self.replaced.append((base, version))

    def _same_document(self, base: str, version: int, digests: list[tuple[str, bytes]]) -> bool:
        try:
            contents = self.folder.contents(base, version)
        except (OSError, ArchiveDamagedError):
            return False
        return [(piece.member, piece.sha256) for piece in contents.pieces] == digests

    # -- the transaction ------------------------------------------------------------------

    def _header(self, place: Place, kind: str, version: int) -> Header:
        agent = self.roots[place.root]
        return Header(place.path, place.root, place.project_dir, agent, kind, version, iso_now())

    def _appender(self, base: str, version: int, header: Header | None, committed: int) -> Appender:
        key = f"{base}.v{version}"
        found = self.appenders.get(key)
        if found is None:
            found = self.folder.appender(base, version, header, committed)
            self.appenders[key] = found
        return found

    def sync(self) -> None:
        """Put every archive byte written since the last commit on the disk (before the index
        commit that records them); each folder that got new files once, however many."""
        folders = set()
        for appender in self.appenders.values():
            if appender.created:
                folders.add(os.path.dirname(appender.path))
            appender.sync(with_folder=False)
        for folder in folders:
            sync_folder(folder)

    def committed(self) -> None:
        """The index recorded what was written: the document versions replaced can go."""
        for base, version in self.replaced:
            self.folder.remove_version(base, version)
        self.replaced = []

    def rolled_back(self) -> None:
        """The index recorded nothing of what was written since the last commit: the files are
        cut back to what it did record when next written to."""
        self.close()
        self.replaced = []

    def undone(self) -> None:
        """One file's writes were undone (the rest of the transaction stands): its archive
        bytes are cut back when next written to; the others' reach the disk first."""
        self.sync()
        self.close()

    def close(self) -> None:
        for appender in self.appenders.values():
            appender.close()
        self.appenders = {}
        # (After a rollback too: what was listed may name files cut back since.)
        self.folder.listings = None


def _members(agent: Agent, place: Place) -> list[tuple[str, bytes]]:
    """(name below the root, bytes) of each part of a session, as its plugin gives them. What
    the plugin raises (a database that does not read, its own fault) is an OSError: the
    session is unreadable, as a read that failed so would make it, never the sync's end."""
    try:
        return agent.session_members(place.path, place.root)
    except OSError:
        raise
    except PLUGIN_FAULTS as error:
        failure = f"agent plugin {agent.name} failed: {type(error).__name__}: {error}"
        raise OSError(failure) from error
