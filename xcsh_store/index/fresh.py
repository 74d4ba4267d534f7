"""Fresh answers: the locks that say whether a read should sync index.db first.

Every read verb brings the index up to date before it answers (``SessionIndex.refresh``), unless
a watch keeps it current: a watcher holds ``index.db.watch-lock`` (shared: any number of them)
for as long as it runs, and a reader that cannot take that lock for itself knows one is there.
The lock is the kernel's (``flock``), so a watcher that died holds none: no heartbeat to go
stale, no pid to trust.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from xcsh_store.paths import FILE_MODE

if TYPE_CHECKING:
    from xcsh_store.index.write.scan import SyncReport

# The files beside index.db that hold its locks.
SYNC_LOCK_SUFFIX = ".sync-lock"
WATCH_LOCK_SUFFIX = ".watch-lock"

# What a read found before it answered: it synced, a watch keeps the index current, or
# another process was syncing it (the answer is then from what the index holds).
SYNCED = "synced"
WATCHED = "watched"
BUSY = "busy"


@dataclass(frozen=True, slots=True)
class Freshness:
    """What ``SessionIndex.refresh`` did: ``state`` is ``synced`` (with the sync's
    ``report``), ``watched`` or ``busy``."""

    state: str
    report: SyncReport | None = None


@contextlib.contextmanager
def holding_watch(db_path: str) -> Iterator[None]:
    """Held by a watch for as long as it keeps the index at ``db_path`` current."""
    lock = os.open(db_path + WATCH_LOCK_SUFFIX, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
    try:
        fcntl.flock(lock, fcntl.LOCK_SH)
        yield
    finally:
        os.close(lock)  # releases the lock


def is_watched(db_path: str) -> bool:
    """Whether a watch keeps the index at ``db_path`` current now."""
    try:
        lock = os.open(db_path + WATCH_LOCK_SUFFIX, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(lock)  # releases the lock taken, if it was
    return False
