"""The archive folder: ``archive/`` beside index.db, one file per version of each source kept
(``<agent>/<name>.<hash>.v<N>.zst``), folders 0700 and files 0600 (they hold conversation text).

Writes only ever append, and reach the disk (fsync) before the index commit that records them:
an index row never names archive bytes that are not there. Bytes past what the index recorded
(a sync killed between the two) are cut off the next time the file is written to.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass

from xcsh_store.errors import IndexDatabaseError
from xcsh_store.index.archive.frames import Contents, Header, header_record, read_contents
from xcsh_store.paths import ARCHIVE_DIRNAME, DIR_MODE, FILE_MODE, ensure_private_dir

SUFFIX = ".zst"
_VERSIONED = re.compile(r"(?P<base>.+)\.v(?P<version>[0-9]+)\.zst")
# The part of a source's file name kept in its archive's name (the rest is a hash of the path).
_STEM_CHARS = 60
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


class ArchiveWriteError(IndexDatabaseError):
    """The archive could not be written (a full disk, a folder without permission): the sync
    stops before the index records what the archive lacks, keeping what it committed."""

    def __init__(self, error_number: int | None, message: str) -> None:
        super().__init__(message)
        self.errno = error_number


def archive_dir(index_folder: str) -> str:
    """The archive folder of the store whose index.db is in ``index_folder``."""
    return os.path.join(index_folder, ARCHIVE_DIRNAME)


def base_name(agent: str, source: str) -> str:
    """The name of a source's archive files without version: the agent's folder, the source's
    own name (what a person looks for) and a hash of its path (what makes it unique)."""
    stem = os.path.basename(source.rstrip(os.sep)) or "session"
    stem = _UNSAFE.sub("_", stem)[:_STEM_CHARS]
    digest = hashlib.sha1(source.encode("utf-8", "surrogateescape")).hexdigest()[:12]
    return f"{_UNSAFE.sub('_', agent)}/{stem}.{digest}"


@dataclass(frozen=True, slots=True)
class StoredVersion:
    """One archive file: the base name of its source's files and its version."""

    base: str
    version: int
    path: str


@dataclass(frozen=True)
class ArchiveStats:
    """The archive folder, its files and bytes, the sessions it keeps, those of them whose
    file is gone, and the source bytes it holds."""

    folder: str
    files: int
    bytes: int
    sessions: int
    gone: int
    source_bytes: int


class ArchiveFolder:
    """The archive folder of one store."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        # While a sync writes (archive/keeper.py): each folder's versions, listed once and kept
        # up to date by this object's writes (a sync holds the lock: no other writer). Listing
        # the folder again for every file read made a first sync quadratic in its files.
        self.listings: dict[str, dict[str, set[int]]] | None = None

    def path_of(self, base: str, version: int) -> str:
        return os.path.join(self.folder, f"{base}.v{version}{SUFFIX}")

    def versions(self, base: str) -> list[int]:
        """The versions on disk of the source ``base`` names, oldest first."""
        folder, _, name = self.path_of(base, 0).rpartition(os.sep)
        stem = name[: -len(f".v0{SUFFIX}")]
        listings = self.listings
        if listings is None:
            return sorted(_listing(folder).get(stem, ()))
        listing = listings.get(folder)
        if listing is None:
            listing = listings[folder] = _listing(folder)
        return sorted(listing.get(stem, ()))

    def _listed(self, path: str, there: bool) -> None:
        """The archive file at ``path`` was made (``there``) or removed."""
        folder, _, name = path.rpartition(os.sep)
        listing = None if self.listings is None else self.listings.get(folder)
        matched = _VERSIONED.fullmatch(name)
        if listing is None or matched is None:
            return
        versions = listing.setdefault(matched["base"], set())
        if there:
            versions.add(int(matched["version"]))
        else:
            versions.discard(int(matched["version"]))

    def stored(self) -> Iterator[StoredVersion]:
        """Every archive file, in name order (OSError when the folder cannot be listed)."""
        if not os.path.isdir(self.folder):
            return
        for agent in sorted(os.listdir(self.folder)):
            folder = os.path.join(self.folder, agent)
            if agent.startswith(".") or not os.path.isdir(folder):
                continue
            for name in sorted(os.listdir(folder)):
                matched = _VERSIONED.fullmatch(name)
                if matched:
                    base = f"{agent}/{matched['base']}"
                    yield StoredVersion(base, int(matched["version"]), os.path.join(folder, name))

    def contents(self, base: str, version: int) -> Contents:
        """What one archive file holds (OSError, ArchiveDamagedError)."""
        descriptor = os.open(self.path_of(base, version), os.O_RDONLY | os.O_CLOEXEC)
        try:
            return read_contents(descriptor)
        finally:
            os.close(descriptor)

    @contextlib.contextmanager
    def opened(self, base: str, version: int) -> Iterator[int]:
        descriptor = os.open(self.path_of(base, version), os.O_RDONLY | os.O_CLOEXEC)
        try:
            yield descriptor
        finally:
            os.close(descriptor)

    def appender(self, base: str, version: int, header: Header | None, committed: int) -> Appender:
        """The archive file of ``base`` at ``version``, open to append after its first
        ``committed`` bytes (what the index recorded; 0 for a file the index knows nothing of,
        which is begun afresh with ``header``)."""
        if committed == 0 and header is None:
            raise ValueError("a new archive file needs its header")
        path = self.path_of(base, version)
        try:
            ensure_private_dir(os.path.dirname(path))
            descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
        except OSError as error:
            raise _write_error(path, error) from error
        appender = Appender(path, descriptor)
        self._listed(path, True)
        try:
            size = os.fstat(descriptor).st_size
            if header is not None and committed == 0:
                # Begun afresh (what a killed sync left of it was never recorded).
                appender.cut(0)
                appender.write(header_record(header))
                appender.created = size == 0
            elif size != committed:
                appender.cut(committed)
        except BaseException:
            appender.close()
            raise
        return appender

    def remove(self, base: str) -> int:
        """Delete every version of a source's archive; returns the bytes freed."""
        freed = 0
        for version in self.versions(base):
            path = self.path_of(base, version)
            with contextlib.suppress(FileNotFoundError):
                freed += os.stat(path).st_size
                os.unlink(path)
            self._listed(path, False)
        sync_folder(os.path.dirname(self.path_of(base, 0)))
        return freed

    def remove_version(self, base: str, version: int) -> None:
        path = self.path_of(base, version)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        self._listed(path, False)

    def size(self) -> tuple[int, int]:
        """(archive files, their bytes)."""
        files = total = 0
        for stored in self.stored():
            with contextlib.suppress(FileNotFoundError):
                total += os.stat(stored.path).st_size
                files += 1
        return files, total


class Appender:
    """An archive file open for appending; :meth:`sync` puts what was written on the disk."""

    def __init__(self, path: str, descriptor: int) -> None:
        self.path = path
        self.descriptor = descriptor
        self.size = os.fstat(descriptor).st_size
        self.created = False
        self.dirty = False

    def cut(self, length: int) -> None:
        """Cut the file to ``length`` bytes (a tail no index row names)."""
        try:
            os.ftruncate(self.descriptor, length)
        except OSError as error:
            raise _write_error(self.path, error) from error
        self.size = length
        self.dirty = True

    def write(self, data: bytes) -> int:
        """Append ``data``; returns the file's new length. A short write (a full disk) is cut
        off again and raised."""
        view = memoryview(data)
        written = 0
        try:
            while written < len(data):
                written += os.pwrite(self.descriptor, view[written:], self.size + written)
        except OSError as error:
            with contextlib.suppress(OSError):
                os.ftruncate(self.descriptor, self.size)
            raise _write_error(self.path, error) from error
        self.size += written
        self.dirty = True
        return self.size

    def sync(self, with_folder: bool = True) -> None:
        """Put the bytes written on the disk; a new file's name too, unless the caller puts
        its folder there itself (``with_folder`` false)."""
        if not self.dirty:
            return
        try:
            os.fsync(self.descriptor)
            if self.created and with_folder:
                sync_folder(os.path.dirname(self.path))
            self.created = False
        except OSError as error:
            raise _write_error(self.path, error) from error
        self.dirty = False

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.descriptor)


def _listing(folder: str) -> dict[str, set[int]]:
    """The versions of each source in ``folder`` (by its name without version)."""
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return {}
    found: dict[str, set[int]] = {}
    for entry in names:
        matched = _VERSIONED.fullmatch(entry)
        if matched:
            found.setdefault(matched["base"], set()).add(int(matched["version"]))
    return found


def sync_folder(folder: str) -> None:
    """Put a folder's entries on the disk (a new file's name survives a power cut)."""
    try:
        descriptor = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError as error:
        if error.errno not in (errno.EINVAL, errno.EBADF):
            raise
    finally:
        os.close(descriptor)


def _write_error(path: str, error: OSError) -> ArchiveWriteError:
    reason = error.strerror or str(error)
    return ArchiveWriteError(
        error.errno,
        f"cannot write the session archive {path}: {reason}; what was indexed before is kept"
        " (with its archive), fix this and sync again",
    )


def private_folder(folder: str) -> None:
    """The archive folder, made 0700 if missing."""
    ensure_private_dir(folder)
    with contextlib.suppress(OSError):
        if os.stat(folder).st_mode & 0o777 != DIR_MODE:
            os.chmod(folder, DIR_MODE)
