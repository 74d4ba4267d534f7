"""Storage back ends for session files: the real file system, or a dict in memory that behaves
like it (compatibility: Memory storage behaves like files)."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import fnmatch
import os
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from xcsh_store.files import open_regular_file
from xcsh_store.format.jsonl import BOM
from xcsh_store.paths import FILE_MODE, ensure_private_dir, new_session_id

WRITE_BATCH_BYTES = 1 << 20
# The temp file of write_atomically: ".<session file name>.<16 hex>.tmp", beside the file.
SESSION_TEMP_NAME = re.compile(r"\..+\.jsonl\.[0-9a-f]{16}\.tmp")
# A temp file (of a rewrite or a blob write) this old was left by a process that died: writing
# even a huge session takes seconds.
STALE_TEMP_SECONDS = 3600


@dataclass(frozen=True, slots=True)
class FileStat:
    size: int  # bytes
    mtime: float  # seconds since the epoch


@runtime_checkable
class SessionStorageWriter(Protocol):
    def write_line(self, line: str | bytes) -> None: ...
    def flush(self) -> None: ...
    def fsync(self) -> None: ...
    def close(self) -> None: ...
    def get_error(self) -> BaseException | None: ...


@runtime_checkable
class SessionStorage(Protocol):
    """Every file operation the session manager needs; paths are plain strings."""

    def ensure_dir(self, path: str) -> None: ...
    def exists(self, path: str) -> bool: ...
    def write_text(self, path: str, content: str) -> None: ...
    def stat(self, path: str) -> FileStat: ...
    def list_files(self, directory: str, pattern: str) -> list[str]: ...
    def read_text(self, path: str) -> str: ...
    def read_bytes(self, path: str) -> bytes: ...
    def read_text_prefix(self, path: str, max_bytes: int) -> str: ...
    def rename(self, source: str, target: str) -> None: ...
    def unlink(self, path: str) -> None: ...
    def open_writer(self, path: str, flags: str = "a") -> SessionStorageWriter: ...


class WriterClosedError(OSError):
    def __init__(self) -> None:
        super().__init__("Writer closed")


def _decode(data: bytes) -> str:
    if data.startswith(BOM):
        data = data[len(BOM) :]
    return data.decode("utf-8", "replace")


def _as_bytes(line: str | bytes) -> bytes:
    return line.encode("utf-8", "surrogatepass") if isinstance(line, str) else line


def _matches(name: str, pattern: str) -> bool:
    # Like a shell glob: "*" does not match names starting with a dot.
    return fnmatch.fnmatchcase(name, pattern) and not (name.startswith(".") and pattern[:1] != ".")


# --------------------------------------------------------------------------------------------
# The file system


class FileSessionStorageWriter:
    """An append (or truncate) file handle; the first error is latched and raised again."""

    def __init__(self, path: str, flags: str = "a") -> None:
        # Set first: when the folder or the file cannot be made, __del__ still finds them.
        self._fd: int | None = None
        self._error: BaseException | None = None
        self.path = path
        ensure_private_dir(os.path.dirname(path) or ".")
        mode = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if flags == "w" else os.O_APPEND)
        self._fd = os.open(path, mode, FILE_MODE)

    def _check(self) -> int:
        if self._fd is None:
            raise WriterClosedError()
        if self._error is not None:
            raise self._error
        return self._fd

    def write_line(self, line: str | bytes) -> None:
        """Write ``line`` as given (it carries its own newline; several lines at once are fine)."""
        self._check()
        view = memoryview(_as_bytes(line))
        try:
            descriptor = self._lock_current_file()
            try:
                while view:
                    written = os.write(descriptor, view)
                    if written == 0:
                        raise OSError(errno.EIO, "Short write")
                    view = view[written:]
            finally:
                _unlock(descriptor)
        except OSError as error:
            self._error = error
            raise

    def _lock_current_file(self) -> int:
        """Lock the file for one write, first reopening ``path`` if a rewrite replaced it.

        ``migrate`` holds this lock from its read to its rename, so a line is written either
        before it reads (and is migrated) or after the rename, into the new file; never into
        the replaced one, where it would be lost. A replaced file has no links left, which
        fstat tells without a look-up of the path (this runs for every append). A file moved
        elsewhere, or deleted with nothing in its place, is written as before.
        """
        descriptor = self._check()
        lock_file(descriptor)
        if os.fstat(descriptor).st_nlink > 0:
            return descriptor
        try:
            reopened = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
        except OSError:
            return descriptor
        _unlock(descriptor)
        os.close(descriptor)
        self._fd = reopened
        return self._lock_current_file()

    def flush(self) -> None:
        # Every write goes straight to the kernel; there is no user-space buffer to flush.
        self._check()

    def fsync(self) -> None:
        descriptor = self._check()
        try:
            os.fsync(descriptor)
        except OSError as error:
            self._error = error
            raise

    def close(self) -> None:
        if self._fd is not None:
            descriptor, self._fd = self._fd, None
            with contextlib.suppress(OSError):
                os.close(descriptor)

    def get_error(self) -> BaseException | None:
        return self._error

    def __del__(self) -> None:
        self.close()


def lock_file(descriptor: int) -> None:
    """An exclusive flock; a file system without locks (some network mounts) writes unlocked."""
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
    except OSError as error:
        if error.errno not in _NO_LOCKS:
            raise


def _unlock(descriptor: int) -> None:
    # try/except rather than contextlib.suppress, which costs a few µs: this runs per append.
    try:  # noqa: SIM105
        fcntl.flock(descriptor, fcntl.LOCK_UN)
    except OSError:
        pass


_NO_LOCKS = frozenset({errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EINVAL})


class FileSessionStorage:
    """The real file system. Renames are made durable by syncing the folder."""

    def ensure_dir(self, path: str) -> None:
        ensure_private_dir(path)

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def write_text(self, path: str, content: str) -> None:
        ensure_private_dir(os.path.dirname(path) or ".")
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(_as_bytes(content))

    def stat(self, path: str) -> FileStat:
        result = os.stat(path)
        return FileStat(result.st_size, result.st_mtime)

    def list_files(self, directory: str, pattern: str) -> list[str]:
        try:
            names = os.listdir(directory)
        except OSError:
            return []
        return [os.path.join(directory, name) for name in sorted(names) if _matches(name, pattern)]

    def read_bytes(self, path: str) -> bytes:
        with open_regular_file(path) as handle:
            return handle.read()

    def read_text(self, path: str) -> str:
        return _decode(self.read_bytes(path))

    def read_text_prefix(self, path: str, max_bytes: int) -> str:
        with open_regular_file(path) as handle:
            return _decode(handle.read(max_bytes))

    def rename(self, source: str, target: str) -> None:
        # Unlike the reference, a vanished source is an error (compatibility: A vanished temp
        # file is an error).
        os.rename(source, target)
        fsync_dir(os.path.dirname(target) or ".")

    def unlink(self, path: str) -> None:
        os.unlink(path)

    def open_writer(self, path: str, flags: str = "a") -> FileSessionStorageWriter:
        return FileSessionStorageWriter(path, flags)


# --------------------------------------------------------------------------------------------
# Memory


def _missing(path: str) -> FileNotFoundError:
    return FileNotFoundError(errno.ENOENT, "File not found", path)


class MemorySessionStorageWriter:
    def __init__(self, storage: MemorySessionStorage, path: str, flags: str = "a") -> None:
        self._storage = storage
        self._path = path
        self._closed = False
        if flags == "w" or path not in storage.files:
            storage.files[path] = (b"", time.time())

    def _check(self) -> None:
        if self._closed:
            raise WriterClosedError()

    def write_line(self, line: str | bytes) -> None:
        self._check()
        content, _mtime = self._storage.files.get(self._path, (b"", 0.0))
        self._storage.files[self._path] = (content + _as_bytes(line), time.time())

    def flush(self) -> None:
        self._check()

    def fsync(self) -> None:
        self._check()

    def close(self) -> None:
        self._closed = True

    def get_error(self) -> BaseException | None:
        return None


class MemorySessionStorage:
    """Files in a dict (path -> bytes, mtime); a missing file behaves like ENOENT (compatibility:
    Memory storage behaves like files)."""

    def __init__(self) -> None:
        self.files: dict[str, tuple[bytes, float]] = {}

    def _get(self, path: str) -> bytes:
        try:
            return self.files[path][0]
        except KeyError:
            raise _missing(path) from None

    def ensure_dir(self, path: str) -> None:
        return None

    def exists(self, path: str) -> bool:
        return path in self.files

    def write_text(self, path: str, content: str) -> None:
        self.files[path] = (_as_bytes(content), time.time())

    def stat(self, path: str) -> FileStat:
        data = self._get(path)
        return FileStat(len(data), self.files[path][1])

    def list_files(self, directory: str, pattern: str) -> list[str]:
        prefix = directory if directory.endswith("/") else directory + "/"
        names = []
        for path in self.files:
            if path.startswith(prefix):
                name = path[len(prefix) :]
                if "/" not in name and "\\" not in name and _matches(name, pattern):
                    names.append(path)
        return sorted(names)

    def read_bytes(self, path: str) -> bytes:
        return self._get(path)

    def read_text(self, path: str) -> str:
        return _decode(self._get(path))

    def read_text_prefix(self, path: str, max_bytes: int) -> str:
        return _decode(self._get(path)[:max_bytes])

    def rename(self, source: str, target: str) -> None:
        if source not in self.files:
            raise _missing(source)
        self.files[target] = self.files.pop(source)

    def unlink(self, path: str) -> None:
        self.files.pop(path, None)

    def open_writer(self, path: str, flags: str = "a") -> MemorySessionStorageWriter:
        return MemorySessionStorageWriter(self, path, flags)


# --------------------------------------------------------------------------------------------
# Helpers shared by every writer of whole files


def write_atomically(
    storage: SessionStorage,
    path: str,
    lines: Iterable[bytes],
    before_rename: Callable[[], None] | None = None,
) -> None:
    """Replace ``path`` with ``lines`` so that readers see the old or the new file, never a mix.

    Temp file ``.<name>.<id>.tmp`` in the same folder, write, flush, fsync, close, rename, which
    syncs the folder (compatibility: A vanished temp file is an error). ``before_rename`` may
    raise to call the rename off. On any error the temp file is removed and the error re-raised.
    """
    directory, name = os.path.split(path)
    temp = os.path.join(directory, f".{name}.{new_session_id()}.tmp")
    writer = storage.open_writer(temp, "w")
    try:
        batch: list[bytes] = []
        batch_size = 0
        for line in lines:
            batch.append(line)
            batch_size += len(line)
            if batch_size >= WRITE_BATCH_BYTES:
                writer.write_line(b"".join(batch))
                batch, batch_size = [], 0
        if batch:
            writer.write_line(b"".join(batch))
        writer.flush()
        writer.fsync()
        writer.close()
        if before_rename is not None:
            before_rename()
        storage.rename(temp, path)
    except BaseException:
        writer.close()
        # The original error is the one worth reporting.
        with contextlib.suppress(OSError):
            storage.unlink(temp)
        raise


def fsync_dir(path: str) -> None:
    """Make a rename in ``path`` durable; not every file system supports it, which is fine."""
    try:
        descriptor = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)


def remove_quietly(path: str) -> bool:
    """Unlink ``path``; whether it was removed (a missing or stuck file is no error here)."""
    try:
        os.unlink(path)
    except OSError:
        return False
    return True
