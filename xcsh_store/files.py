"""Opening files for reading so that a FIFO, socket or device never blocks or streams forever."""

from __future__ import annotations

import errno
import os
import stat
from typing import BinaryIO


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
