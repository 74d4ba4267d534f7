"""What the index knows of the blob folder: which blobs are on disk (``blobs.size``, NULL when
not there) and which blob-named entries are not blob files, kept current with as little
listing as a collection can do with.

Listing 100,000 names, and comparing them with the index, costs more than the rest of a
collection; it is needed only when the folder changed and nothing says how:

* The folder's signature (device, inode, mtime and ctime) is recorded with what a listing
  found: while it stays the same, no name was added, removed or renamed. It is recorded only
  when the folder last changed well before it was read (``RACY_SECONDS``): a change in the
  same tick of the file system's clock as the one before it leaves the mtime as it was, the
  problem git calls racy.
* A process that collects more than once keeps an inotify watch on the folder
  (:class:`FolderChanges`) from its second collection on, started before the state it builds
  on was read: each later collection looks only at the names that changed since, and trusts
  the stat of a blob it took while watching (the grace period needs each unreferenced blob's
  mtime) until an event says the blob changed. (A process that collects once, the CLI's, has
  no use for a watch, whose closing makes the kernel wait milliseconds.)

Whatever this says can only be stale in one direction that matters: a blob it does not know of
is never a candidate, so it is kept; a name it still lists that is gone is skipped when the
collection looks at it. The GC deletes only files it has looked at itself.
"""

from __future__ import annotations

import os
import re
import stat as stat_module
import time
from dataclasses import dataclass, field

import apsw

from xcsh_store.index.db import get_meta, set_meta, transaction
from xcsh_store.index.upkeep.watch import FolderChanges
from xcsh_store.times import iso_now

_HASH_NAME = re.compile(r"[0-9a-f]{64}")
# Longer than a tick of any file system's timestamps but FAT's (2 s), which agents' home
# folders do not use.
RACY_SECONDS = 2.0
_SIGNATURE_KEY = "blob_folder_signature"
_SKIPPED_KEY = "blob_folder_skipped"


def is_blob_name(name: str) -> bool:
    return _HASH_NAME.fullmatch(name) is not None


def _hashes(connection: apsw.Connection, sql: str) -> list[str]:
    """Hashes from a ``group_concat`` query: one string split in C instead of a row per hash."""
    joined = connection.execute(sql).get  # one row: group_concat() is an aggregate
    return joined.split(" ") if joined else []


@dataclass
class _Changes:
    """What a look at some names of the folder found, to be written in one transaction."""

    present: list[tuple[str, int, str, str]] = field(default_factory=list)  # hash, size, stamps
    gone: list[str] = field(default_factory=list)
    skipped: set[str] = field(default_factory=set)
    # Names that are not blob names (temp files, quarantine, anything else).
    others: set[str] = field(default_factory=set)


class BlobFolder:
    """The blob folder as one process keeps track of it between collections (see the module
    docstring); :meth:`close` ends the watch."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._watch: FolderChanges | None = None
        # Whether the index held the folder's state at some moment after the watch began:
        # only then do its events say everything that changed since.
        self._watch_current = False
        # Stats taken while watching (None: no such file), good until an event names them.
        self._stats: dict[str, os.stat_result | None] = {}
        self._recorded_before = False

    def close(self) -> None:
        self._stop_watching()

    def lstat(self, name: str) -> os.stat_result | None:
        """``os.lstat`` of a name in the folder (None when there is none), from what the
        watch says has not changed since it was last taken."""
        if name in self._stats:
            return self._stats[name]
        try:
            found: os.stat_result | None = os.lstat(f"{self.path}/{name}")
        except FileNotFoundError:
            found = None
        if self._watch_current:
            self._stats[name] = found
        return found

    def record(self, connection: apsw.Connection, *, full: bool = False) -> set[str] | None:
        """Bring the index's record of the folder up to date; returns the names found that
        are not blob names (temp and quarantine files), or None when the folder was not
        looked at (its signature proves it unchanged). ``full``: list it whatever the
        signature or the watch say (a collection that deletes does)."""
        if self._watch is None and self._recorded_before:
            self._start_watching()
        self._recorded_before = True
        read_at = time.time()
        try:
            info = os.stat(self.path)
        except FileNotFoundError:
            self._stop_watching()
            return self._record_listing(connection, [], "", tidy=full)
        if self._watch is not None and self._watch.identity != (info.st_dev, info.st_ino):
            self._start_watching()  # the name leads to another folder now (a symlink moved)
        signature = _signature(info, read_at)
        changed = self._watch.changed_names() if self._watch is not None else None
        if self._watch is not None and changed is None:
            self._start_watching()  # events were lost: start again, and list
        recorded = get_meta(connection, _SIGNATURE_KEY)  # None: never listed (a new index)
        if changed:
            for name in changed:
                self._stats.pop(name, None)
        if not full and changed is not None and self._watch_current and recorded is not None:
            return self._record_changes(connection, changed, signature, recorded)
        self._watch_current = self._watch is not None
        if not full and signature != "" and signature == recorded:
            return None
        try:
            names = os.listdir(self.path)
        except FileNotFoundError:
            names = []
        return self._record_listing(connection, names, signature, tidy=full)

    def _start_watching(self) -> None:
        self._stop_watching()
        self._watch = FolderChanges.start(self.path)

    def _stop_watching(self) -> None:
        if self._watch is not None:
            self._watch.close()
        self._watch = None
        self._watch_current = False
        self._stats.clear()

    def _record_listing(
        self, connection: apsw.Connection, names: list[str], signature: str, *, tidy: bool
    ) -> set[str]:
        """``tidy``: also drop the rows of every blob neither on disk nor referenced."""
        changed = set(
            _hashes(connection, "SELECT group_concat(hash, ' ') FROM blobs WHERE size IS NOT NULL")
        )
        # Toggled by each name listed, the recorded blobs leave what changed: blobs gone, and
        # names new (blobs, temp and quarantine files). Only those are looked at.
        changed.symmetric_difference_update(names)
        changes = self._look_at(changed)
        with transaction(connection):
            _write(connection, changes)
            if tidy:  # a scan of every row: rows left by references dropped since
                connection.execute("DELETE FROM blobs WHERE refcount <= 0 AND size IS NULL")
            set_meta(connection, _SIGNATURE_KEY, signature)
            set_meta(connection, _SKIPPED_KEY, " ".join(sorted(changes.skipped)))
        return changes.others

    def _record_changes(
        self, connection: apsw.Connection, changed: set[str], signature: str, recorded: str
    ) -> set[str]:
        if not changed:
            if signature != recorded:
                with transaction(connection):
                    set_meta(connection, _SIGNATURE_KEY, signature)
            return set()
        changes = self._look_at(changed)
        skipped = set((get_meta(connection, _SKIPPED_KEY) or "").split())
        skipped = (skipped - changed) | changes.skipped
        with transaction(connection):
            _write(connection, changes)
            set_meta(connection, _SIGNATURE_KEY, signature)
            set_meta(connection, _SKIPPED_KEY, " ".join(sorted(skipped)))
        return changes.others

    def _look_at(self, names: set[str]) -> _Changes:
        """What each name of the folder is now: a blob file (with its size), something else
        under a blob's name (skipped), gone, or not a blob name at all."""
        changes = _Changes()
        stamp = iso_now()
        for name in names:
            if not is_blob_name(name):
                changes.others.add(name)
                continue
            try:
                info = os.lstat(f"{self.path}/{name}")
            except FileNotFoundError:
                changes.gone.append(name)
                continue
            if stat_module.S_ISREG(info.st_mode):
                changes.present.append((name, info.st_size, stamp, stamp))
            else:
                changes.gone.append(name)
                changes.skipped.add(name)
        return changes


def _write(connection: apsw.Connection, changes: _Changes) -> None:
    connection.executemany(
        "INSERT INTO blobs (hash, size, refcount, first_seen, last_seen)"
        " VALUES (?, ?, 0, ?, ?) ON CONFLICT (hash)"
        " DO UPDATE SET size = excluded.size, last_seen = excluded.last_seen",
        changes.present,
    )
    gone = [(digest,) for digest in changes.gone]
    connection.executemany("UPDATE blobs SET size = NULL WHERE hash = ?", gone)
    # A blob neither on disk nor referenced any more needs no row.
    connection.executemany(
        "DELETE FROM blobs WHERE hash = ? AND refcount <= 0 AND size IS NULL", gone
    )


def _signature(info: os.stat_result, read_at: float) -> str:
    """What changes whenever a name is added to, removed from or renamed in the folder; empty
    (matching no folder) when it changed too recently for that to hold (RACY_SECONDS)."""
    if read_at - max(info.st_mtime, info.st_ctime) < RACY_SECONDS:
        return ""
    return f"{info.st_dev}:{info.st_ino}:{info.st_mtime_ns}:{info.st_ctime_ns}"


def folder_skipped(connection: apsw.Connection) -> list[str]:
    """Names in the folder that look like blobs but are not regular files (left alone)."""
    return (get_meta(connection, _SKIPPED_KEY) or "").split()
