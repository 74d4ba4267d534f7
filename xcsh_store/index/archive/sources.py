"""Reading a session whose file is gone from its archive: the bytes at an offset (what the read
verbs take by an entry's offset and length), or a copy of the session in a private temporary
folder (what an agent plugin reads, or a format migration loads whole), made on demand and
deleted after use.

:func:`opened_source` is the one way the read modules open a session's bytes: the file while it
is there, its archive once it is gone.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterator
from typing import Any, Protocol

import apsw

from xcsh_store.files import open_regular_file
from xcsh_store.index.archive.folder import ArchiveFolder
from xcsh_store.index.archive.frames import APPEND, Contents, Piece, piece_bytes
from xcsh_store.paths import FILE_MODE, ensure_private_dir

# Decompressed pieces an open archive keeps while it is read (a piece of a whole read is up to
# 16 MB: reading a session's entries in file order decompresses each once).
_CACHED_PIECES = 4


class SourceBytes(Protocol):
    """A session's bytes, read by offset."""

    def pread(self, size: int, offset: int) -> bytes: ...


class _FileBytes:
    def __init__(self, descriptor: int) -> None:
        self.descriptor = descriptor

    def pread(self, size: int, offset: int) -> bytes:
        return os.pread(self.descriptor, size, offset)


class ArchivedBytes:
    """The bytes of an append archive's source, decompressed piece by piece as they are read."""

    def __init__(self, descriptor: int, contents: Contents) -> None:
        self.descriptor = descriptor
        self.pieces = contents.pieces
        self.cache: dict[int, bytes] = {}

    def pread(self, size: int, offset: int) -> bytes:
        end = offset + size
        parts = []
        for piece in self.pieces:
            if piece.end <= offset or piece.offset >= end:
                continue
            data = self._piece(piece)
            parts.append(data[max(offset - piece.offset, 0) : end - piece.offset])
        return b"".join(parts)

    def _piece(self, piece: Piece) -> bytes:
        found = self.cache.get(piece.at)
        if found is None:
            if len(self.cache) >= _CACHED_PIECES:
                self.cache.pop(next(iter(self.cache)))
            found = self.cache[piece.at] = piece_bytes(self.descriptor, piece)
        return found


class ArchivedSources:
    """The sessions the archive of one store keeps, found by their files' paths through the
    index (``connection`` gives its current connection)."""

    def __init__(self, folder: ArchiveFolder, connection: Callable[[], apsw.Connection]) -> None:
        self.folder = folder
        self.connection = connection

    def locate(self, path: str) -> tuple[str, int] | None:
        """(base name, version) of the archive of the file at ``path``, None when none."""
        found = self.connection().execute(
            "SELECT a.name, a.version FROM archived AS a JOIN files AS f ON f.id = a.file_id"
            " WHERE f.path = ?",
            (path,),
        )
        rows: list[tuple[Any, ...]] = found.fetchall()
        return (rows[0][0], rows[0][1]) if rows else None

    def gone(self, path: str) -> bool:
        """Whether the index found the source at ``path`` gone."""
        found = self.connection().execute(
            "SELECT 1 FROM files WHERE path = ? AND gone_at IS NOT NULL", (path,)
        )
        return found.fetchall() != []

    @contextlib.contextmanager
    def bytes_of(self, path: str) -> Iterator[ArchivedBytes]:
        """The archived bytes of the file at ``path`` (FileNotFoundError: none kept)."""
        located = self._located(path)
        with self.folder.opened(*located) as descriptor:
            contents = self.folder.contents(*located)
            if contents.header is None or contents.header.kind != APPEND:
                raise FileNotFoundError(path)
            yield ArchivedBytes(descriptor, contents)

    @contextlib.contextmanager
    def copy_of(self, path: str) -> Iterator[str]:
        """A copy of the session at ``path`` made from its archive in a private temporary
        folder, laid out below a stand-in of its root as it was; yields the copy's path."""
        base, version = self._located(path)
        with self.copy_from(base, version, self.folder.contents(base, version)) as copy:
            yield copy

    @contextlib.contextmanager
    def copy_from(self, base: str, version: int, contents: Contents) -> Iterator[str]:
        """copy_of the source of one archive file (whose ``contents`` were read)."""
        assert contents.header is not None and contents.source is not None
        root = contents.root or contents.header.root
        with tempfile.TemporaryDirectory(prefix="xcsh-store-archived-") as folder:
            copy = os.path.join(folder, os.path.relpath(contents.source, root))
            with self.folder.opened(base, version) as descriptor:
                if contents.header.kind == APPEND:
                    _write(copy, (piece_bytes(descriptor, piece) for piece in contents.pieces))
                else:
                    for piece in contents.pieces:
                        member = os.path.join(folder, piece.member)
                        _write(member, [piece_bytes(descriptor, piece)])
            yield copy

    def _located(self, path: str) -> tuple[str, int]:
        located = self.locate(path)
        if located is None:
            raise FileNotFoundError(path)
        return located


def _write(path: str, parts: Iterator[bytes] | list[bytes]) -> None:
    ensure_private_dir(os.path.dirname(path))
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, FILE_MODE)
    with open(descriptor, "wb") as stream:
        for part in parts:
            stream.write(part)


def sources_of(connection: apsw.Connection) -> ArchivedSources | None:
    """The archive of the store whose index.db ``connection`` is open on (beside it); the
    connection may be the stdlib's too (Datasette calls the SQL functions through it), which
    names its file only through the pragma."""
    from xcsh_store.index.archive.folder import archive_dir

    filename: str | None = getattr(connection, "filename", None)
    if filename is None:
        rows = connection.execute("PRAGMA database_list").fetchall()
        filename = next((str(row[2]) for row in rows if row[1] == "main"), None)
    if not filename:
        return None
    return ArchivedSources(
        ArchiveFolder(archive_dir(os.path.dirname(str(filename)))), lambda: connection
    )


@contextlib.contextmanager
def opened_source(path: str, archive: ArchivedSources | None) -> Iterator[SourceBytes]:
    """A session's bytes: its file's while it is there (OSError as opening it raises), its
    archive's once it is gone (FileNotFoundError when the archive keeps none either)."""
    try:
        stream = open_regular_file(path)
    except FileNotFoundError:
        if archive is None:
            raise
        with archive.bytes_of(path) as archived:
            yield archived
        return
    with stream:
        yield _FileBytes(stream.fileno())


@contextlib.contextmanager
def readable_copy(path: str, archive: ArchivedSources | None) -> Iterator[str]:
    """A path a plugin (or a loader of whole files) reads the session at ``path`` from: the
    file itself while it is there, else a copy made from its archive. A session kept in a
    database (``<database>#<id>``, no file of its own) is read from the database while the
    index does not know it gone."""
    if archive is None or os.path.lexists(path) or archive.locate(path) is None:
        yield path  # (a reader of a gone one says it is gone)
        return
    if source_there(path) and not archive.gone(path):
        yield path
        return
    with archive.copy_of(path) as found:
        yield found


def source_there(path: str) -> bool:
    """Whether the source of the session at ``path`` is there: its file, or the database of a
    session kept in one (``<database>#<id>``, no file of its own)."""
    if os.path.lexists(path):
        return True
    database, separator, _session = path.rpartition("#")
    return bool(separator) and os.path.isfile(database)
