"""Reading the file system safely: opening only regular files (a FIFO, socket or device never
blocks or streams forever), walking session folders the one way every reader walks them, and
telling a full disk from other write failures."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterator
from typing import BinaryIO

# Below this many bytes free for unprivileged writers, a failed write is the disk being full
# (SQLite reports one as a disk I/O error when it cannot grow its shared-memory file).
FULL_BELOW = 1 << 20


def free_bytes_if_full(folder: str) -> int | None:
    """The bytes left on the file system holding ``folder`` when it is (all but) full, else
    None (also when it cannot be asked)."""
    try:
        found = os.statvfs(folder)
    except OSError:
        return None
    free = found.f_bavail * found.f_frsize
    return free if free < FULL_BELOW else None


def open_regular_file(path: str) -> BinaryIO:
    """``open(path, "rb")`` for a regular file; anything else raises an OSError.

    A FIFO named like a session file (or a blob, or a breadcrumb) would make a plain ``open()``
    wait for a writer forever, and a device could be read without end. The file is opened
    non-blocking, which returns at once for a FIFO, and checked before a byte is read.
    """
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(descriptor).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
        if not stat.S_ISREG(mode):
            raise OSError(errno.EINVAL, "Not a regular file", path)
        return os.fdopen(descriptor, "rb")
    except BaseException:
        os.close(descriptor)
        raise


def walk_folders(
    roots: list[str],
    failed: Callable[[str, OSError], None],
    before_listing: Callable[[str], bool] | None = None,
) -> Iterator[tuple[str, list[os.DirEntry[str]]]]:
    """Every folder below ``roots`` with the entries of its listing that are not folders (dot
    names included, never looked into); folder symlinks are followed, and a folder reached
    twice (through a link, or a loop) is listed once, by the first path that reaches it.

    ``failed(path, error)`` hears of a folder that could not be listed and of an entry whose
    kind could not be told; ``before_listing(folder)`` runs before a folder is listed (also
    for one listed already) and returning False leaves it unlisted.
    """
    visited: set[tuple[int, int]] = set()
    pending = list(roots)
    while pending:
        folder = pending.pop()
        if before_listing is not None and not before_listing(folder):
            continue
        try:
            info = os.stat(folder)
            if (info.st_dev, info.st_ino) in visited:
                continue
            visited.add((info.st_dev, info.st_ino))
            entries = list(os.scandir(folder))
        except OSError as error:
            failed(folder, error)
            continue
        others = []
        for entry in entries:
            if entry.name[0] == ".":
                others.append(entry)
                continue
            try:
                if entry.is_dir():
                    pending.append(entry.path)
                    continue
            except OSError as error:
                failed(entry.path, error)
                continue
            others.append(entry)
        yield folder, others
