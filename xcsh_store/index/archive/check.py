"""The archive's part of ``verify``: every archive file the index records decodes (each piece
decompresses and hashes to the SHA-256 it was written with), holds the bytes the index says
(as many, and the first and last of them hash as the indexed ones did), and a ``--repair``
that keeps what still decodes.

A repair never drops index rows: a damaged archive file is kept aside (``….zst.damaged``) and
replaced by a new version holding the pieces that still decode from its start; where the file
is still there, the next sync archives the rest again from it; where it is gone, the index
keeps the session's rows and verify says which bytes the archive lost.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import apsw

from xcsh_store.index.archive.folder import ArchiveFolder
from xcsh_store.index.archive.frames import (
    APPEND,
    ArchiveDamagedError,
    Contents,
    Header,
    Piece,
    header_record,
    piece_bytes,
)
from xcsh_store.index.archive.keeper import ArchivedRow, archived_row, record_archived
from xcsh_store.index.db import transaction
from xcsh_store.index.write.build import HEAD_BYTES, TAIL_BYTES
from xcsh_store.index.write.scan import sha1_hex
from xcsh_store.paths import FILE_MODE
from xcsh_store.times import iso_now

DAMAGED_SUFFIX = ".damaged"


@dataclass
class ArchiveProblem:
    """What is wrong with one archive file (by its path), and the session's file."""

    archive: str
    source: str
    problem: str
    file_id: int


def check_archive(connection: apsw.Connection, folder: ArchiveFolder) -> list[ArchiveProblem]:
    """Every archive file the index records that does not hold what the index says."""
    problems = []
    rows: list[tuple[Any, ...]] = connection.execute(
        "SELECT a.file_id, a.name, a.kind, a.version, a.source_bytes, a.archive_bytes, f.path,"
        " f.indexed_bytes, f.head_hash, f.tail_hash, f.gone_at"
        " FROM archived AS a JOIN files AS f ON f.id = a.file_id ORDER BY f.path"
    ).fetchall()
    for file_id, name, kind, version, held, size, path, indexed, head, tail, gone in rows:
        archive = folder.path_of(name, version)
        problem = _problem(folder, name, version, kind, held, size, indexed, head, tail, gone)
        if problem is not None:
            problems.append(ArchiveProblem(archive, path, problem, file_id))
    return problems


def _problem(
    folder: ArchiveFolder,
    name: str,
    version: int,
    kind: str,
    held: int,
    size: int,
    indexed: int,
    head: str | None,
    tail: str | None,
    gone: str | None,
) -> str | None:
    try:
        contents = folder.contents(name, version)
    except FileNotFoundError:
        return "the archive file is missing"
    except (OSError, ArchiveDamagedError) as error:
        return f"the archive file cannot be read: {error}"
    if contents.end < size:
        return f"{size:,} bytes recorded, {contents.end:,} whole ones in the archive file"
    pieces = [piece for piece in contents.pieces if piece.at + piece.size <= size]
    try:
        data = _decoded(folder, name, version, pieces)
    except (OSError, ArchiveDamagedError) as error:
        return str(error)
    if kind != APPEND:
        return None
    if len(data) != held:
        return f"{held:,} source bytes recorded, {len(data):,} in the archive"
    if gone is not None and held != indexed:
        return f"{indexed:,} bytes indexed, the archive keeps {held:,} (the file is gone)"
    first, last = data[: min(HEAD_BYTES, held)], data[held - min(TAIL_BYTES, held) : held]
    if held == indexed and head is not None and (sha1_hex(first), sha1_hex(last)) != (head, tail):
        return "the archived bytes are not the ones indexed (their hashes differ)"
    return None


def _decoded(folder: ArchiveFolder, name: str, version: int, pieces: list[Piece]) -> bytes:
    with folder.opened(name, version) as descriptor:
        return b"".join(piece_bytes(descriptor, piece) for piece in pieces)


def repair_archive(
    connection: apsw.Connection, folder: ArchiveFolder, problem: ArchiveProblem
) -> str:
    """Keep what still decodes of a damaged archive file (see the module); returns what
    became of the session."""
    row = archived_row(connection, problem.file_id)
    if row is None:
        return "not archived any more"
    try:
        contents = folder.contents(row.name, row.version)
    except (OSError, ArchiveDamagedError):
        contents = None
    ((source, root, project_dir, agent),) = connection.execute(
        "SELECT path, root, project_dir, agent FROM files WHERE id = ?", (row.file_id,)
    )
    # (An archive whose header is lost is begun again with what the index knows of its file.)
    placeholder = Header(source, root, project_dir, agent, row.kind, row.version, iso_now())
    kept, header = _decodable(folder, row, contents, placeholder)
    version = max(folder.versions(row.name), default=row.version) + 1
    held = 0
    descriptor = os.open(
        folder.path_of(row.name, version),
        os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC,
        FILE_MODE,
    )
    with open(descriptor, "wb") as stream:
        stream.write(header_record(_versioned(header, version)))
        for record, piece in kept:
            stream.write(record)
            held = piece.end if row.kind == APPEND else held + piece.length
        stream.flush()
        os.fsync(stream.fileno())
        size = stream.tell()
    damaged = folder.path_of(row.name, row.version)
    if os.path.exists(damaged):
        os.replace(damaged, damaged + DAMAGED_SUFFIX)
    with transaction(connection):
        record_archived(
            connection, ArchivedRow(row.file_id, row.name, row.kind, version, held, size)
        )
        if row.kind == APPEND:
            # Where the file is still there, the next sync archives the rest from it again.
            connection.execute("UPDATE files SET size = -1 WHERE id = ? AND gone_at IS NULL",
                               (row.file_id,))  # fmt: skip
    lost = row.source_bytes - held
    return f"kept {held:,} bytes in version {version}" + (f", {lost:,} lost" if lost > 0 else "")


def _decodable(
    folder: ArchiveFolder, row: ArchivedRow, contents: Contents | None, placeholder: Header
) -> tuple[list[tuple[bytes, Piece]], Header]:
    """The records (as written) of the pieces that decode, from the start (an append archive:
    up to the first that does not), and the header to begin the new version with."""
    header = contents.header if contents is not None else None
    if contents is None or header is None:
        return [], placeholder
    kept = []
    with folder.opened(row.name, row.version) as descriptor:
        for piece in contents.pieces:
            try:
                piece_bytes(descriptor, piece)
            except ArchiveDamagedError:
                if row.kind == APPEND:
                    break
                continue
            record = os.pread(descriptor, piece.at + piece.size - piece.start, piece.start)
            kept.append((record, piece))
    return kept, header


def _versioned(header: Header, version: int) -> Header:
    return Header(
        header.source, header.root, header.project_dir, header.agent, header.kind, version,
        iso_now(),
    )  # fmt: skip
