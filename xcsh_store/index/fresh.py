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
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import apsw

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


# -- the stamp of an unchanged tree -----------------------------------------------------------
#
# A read verb's refresh on a tree that did not change costs a stat of every file, but the sync
# that finds that out imports the whole write path, the agents' plugins and the archive first.
# So the sync of a read's refresh, once completed, leaves a stamp beside index.db (`sync` and
# `watch` do not: they would pay for its walk at every run, and the next read stamps anyway):
# the identity (inode, size, mtime, ctime) of every folder and file under the roots it read
# and of every file it indexed or read besides (history files, the price sources, the config
# file, the plugins' modules and the folders of the import path), taken *before* it read
# anything (a file that changes while it syncs no longer matches); the environment and working
# folder it ran in; and a key of what index.db holds that decides what a sync does (its files'
# identities and states, its roots, its meta but the time of the last sync). A read whose stamp
# matches all of that finds what a sync would find: nothing to do, and it skips the sync
# without importing any of it.
#
# Every holder of the sync lock removes the stamp first (a sync, gc, forget, restore, verify,
# the text pass): what they change is stamped again by the next read, never trusted stale.
# Left for a sync that finds a change: removing xcsh's temp files an hour old (scan.py).

STAMP_SUFFIX = ".fresh"
_STAMP_VERSION = 1
# Variables a shell changes on its own, which decide no folder a sync reads (the working folder
# is stamped as itself).
_VOLATILE_VARIABLES = frozenset({"PWD", "OLDPWD", "SHLVL", "_", "COLUMNS", "LINES"})
# A path whose times are this close to when they were taken is racy (Identities.racy).
RACY_NS = 1_000_000_000

Identity = tuple[int, int, int, int] | None


def identity(path: str) -> Identity:
    """(inode, size, mtime, ctime) of ``path``, following links; None when it is not there."""
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    return info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns


def tree_paths(folders: Iterable[str]) -> Iterator[str]:
    """Each of ``folders`` and every folder and file below it, as a sync's walk finds them
    (folder symlinks followed, each folder once: never in a loop)."""
    seen: set[tuple[int, int]] = set()
    for top in folders:
        yield top
        for folder, folders_in, names in os.walk(top, followlinks=True):
            try:
                info = os.stat(folder)
            except OSError:
                folders_in.clear()
                continue
            if (info.st_dev, info.st_ino) in seen:
                folders_in.clear()
                continue
            seen.add((info.st_dev, info.st_ino))
            for name in folders_in:
                yield os.path.join(folder, name)
            for name in names:
                yield os.path.join(folder, name)


def environment_key(agent_dir: str) -> list[Any]:
    """Where a read runs: the agent dir, the working folder and the environment."""
    variables = sorted(
        [name, value] for name, value in os.environ.items() if name not in _VOLATILE_VARIABLES
    )
    return [_STAMP_VERSION, os.path.abspath(agent_dir), working_folder(), variables]


def working_folder() -> str | None:
    try:
        return os.getcwd()
    except OSError:  # deleted
        return None


def index_key(connection: Any, db_path: str) -> list[Any]:
    """What index.db holds that decides what a sync does: its file (replaced, it is another
    index), its files' identities and states, its roots and its meta (but ``last_sync``)."""
    files = connection.execute(
        "SELECT count(*), sum(id), sum(size), sum(mtime_ns % 4294967291),"
        " sum(inode % 4294967291), sum(ctime_ns % 4294967291), sum(indexed_bytes),"
        " sum(lines), count(gone_at), sum(reader_revision), sum(legacy), sum(text_pending),"
        " sum(status <> 'ok'), sum(length(agent)), sum(entries_pending) FROM files"
    ).fetchall()
    roots = connection.execute("SELECT path, agent FROM roots ORDER BY path").fetchall()
    meta = connection.execute(
        "SELECT key, value FROM meta WHERE key <> 'last_sync' ORDER BY key"
    ).fetchall()
    info = identity(db_path)
    return [info[0] if info else None, [list(row) for row in files],
            [list(row) for row in roots], [list(row) for row in meta]]  # fmt: skip


@dataclass(frozen=True, slots=True)
class Identities:
    """The identities of the paths a sync reads, taken before it reads anything, and when."""

    taken_ns: int
    paths: dict[str, Identity]

    @classmethod
    def take(cls, paths: Iterable[str]) -> Identities:
        taken_ns = time.time_ns()
        return cls(taken_ns, {path: identity(path) for path in paths})

    def racy(self) -> bool:
        """Whether a path changed so shortly before they were taken that a change right after
        could leave its times as they were (a file system's clock moves in ticks; NFS's may
        lag): such a stamp is not left, the next read syncs and stamps it."""
        recent = self.taken_ns - RACY_NS
        return any(
            known is not None and (known[2] >= recent or known[3] >= recent)
            for known in self.paths.values()
        )


def write_stamp(
    db_path: str, environment: list[Any], index: list[Any], identities: Identities
) -> None:
    """Leave the stamp of a sync that completed (atomically: a reader finds the old or none),
    unless its identities are racy."""
    import orjson

    if identities.racy():
        remove_stamp(db_path)
        return

    stamp = db_path + STAMP_SUFFIX
    temporary = f"{stamp}.{os.getpid()}.tmp"
    try:
        data = orjson.dumps({"environment": environment, "index": index, "files": identities.paths})
    except TypeError:  # a meta value that is not text: never stamped
        return
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC
    try:
        with os.fdopen(os.open(temporary, flags, FILE_MODE), "wb") as stream:
            stream.write(data)
        os.replace(temporary, stamp)
    except OSError:  # no stamp: the next read syncs, as without one
        with contextlib.suppress(OSError):
            os.unlink(temporary)


def remove_stamp(db_path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(db_path + STAMP_SUFFIX)


def stamp_holds(db_path: str, agent_dir: str, connection: Any) -> bool:
    """Whether the last sync's stamp still holds: a sync now would find nothing to do."""
    import orjson

    try:
        with open(db_path + STAMP_SUFFIX, "rb") as stream:
            stamp = orjson.loads(stream.read())
        if stamp["environment"] != environment_key(agent_dir):
            return False
        files = stamp["files"]
        for path, known in files.items():
            now = identity(path)
            if (None if now is None else list(now)) != known:
                return False
        return bool(stamp["index"] == index_key(connection, db_path))
    except (OSError, ValueError, KeyError, TypeError, AttributeError, apsw.Error):
        return False  # (a damaged index.db: the sync finds and repairs it)
