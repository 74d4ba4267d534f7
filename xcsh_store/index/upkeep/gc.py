"""Blob garbage collection from reference counts, safe against agents writing at the same time."""

from __future__ import annotations

import contextlib
import os
import re
import stat as stat_module
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import apsw

from xcsh_store.format.blobs import BLOB_TEMP_NAME
from xcsh_store.format.storage import STALE_TEMP_SECONDS, remove_quietly
from xcsh_store.index.db import transaction
from xcsh_store.index.upkeep.blob_folder import BlobFolder, folder_skipped
from xcsh_store.index.upkeep.watch import FolderWatch
from xcsh_store.index.write.scan import SyncReport, describe_error, is_session_file_name

# Syncs a collection tries before it gives up on files that keep moving.
SYNC_ATTEMPTS = 4
QUARANTINE_PREFIX = ".gc-"
# ".gc-<sha256>.<pid of the collecting process>"
_QUARANTINE_NAME = re.compile(re.escape(QUARANTINE_PREFIX) + r"([0-9a-f]{64})\.([0-9]+)")


@dataclass
class GcReport:
    """Unreferenced blobs (deleted when ``applied``), dangling references, and why not applied."""

    applied: bool
    candidates: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    kept_recent: int = 0
    bytes_freed: int = 0
    candidate_bytes: int = 0
    blobs_on_disk: int = 0
    referenced: int = 0
    dangling: list[str] = field(default_factory=list)
    refused: str | None = None
    # Blobs a killed collection had left in quarantine, put back under their names.
    restored: list[str] = field(default_factory=list)
    # Temp files of blob writes that died long ago (removed with ``apply``).
    temp_files_removed: int = 0
    # Names in the blob folder that look like blobs but are not regular files (left alone).
    skipped: list[str] = field(default_factory=list)


class SessionWatch:
    """The inotify watch on the session folders, kept from one collection to the next of a
    process: closing a watch waits for the kernel (milliseconds), and a kept one already
    watches the folders. It is kept while each walk finds the folders the last one did; a
    folder gone from the tree could still be watched (and its events would say nothing of the
    tree), so a tree that changed gets a new watch."""

    def __init__(self) -> None:
        self._watch: FolderWatch | None = None
        self._found: set[int] | None = None
        self._fresh = True
        # No inotify on this system (not Linux): syncs that change nothing stand in for it.
        self.unavailable = False

    def start(self) -> None:
        """Make the watch unless there is one; an OSError when none can be made now."""
        if self._watch is None and not self.unavailable:
            self._watch = FolderWatch.create()
            self.unavailable = self._watch is None
            self._fresh = True

    def watch_tree(self, roots: list[str]) -> set[int] | None:
        """A new round: forget what happened so far and watch every folder below ``roots``;
        the watches found, or None when some folder could not be watched."""
        try:
            self.start()
        except OSError:
            return None
        assert self._watch is not None
        self._watch.forget_events()
        found = self._watch.watch_tree(roots)
        if not self._fresh and found != self._found:
            self.close()
            return self.watch_tree(roots)
        self._found, self._fresh = found, False
        return found

    def arrivals(self) -> list[tuple[str, bool]] | None:
        return self._watch.arrivals() if self._watch is not None else None

    def close(self) -> None:
        if self._watch is not None:
            self._watch.close()
        self._watch = None


def sync_consistently(
    sync: Callable[[], SyncReport],
    roots: Callable[[], list[str]],
    connection: apsw.Connection,
    watch: SessionWatch,
) -> tuple[SyncReport, str | None]:
    """Sync until one sync ran while no session file, folder or link arrived anywhere in the
    roots that it did not see; the report, and why not when that never happened.

    A file moved between two project folders while the scan runs can be missed by it (the
    scan lists the target before the move and the source after), and a missed file would lose
    its blob refs. The folders are watched before the scan lists them (inotify), so such a
    move is an event. Where the system has no inotify (not Linux), two syncs in a row that
    change nothing stand in for it; on Linux, a watch that cannot be made means refusing.
    """
    try:
        watch.start()
    except OSError as error:
        # Linux, but no watch can be made now: without one, no sync can be trusted to see all.
        reason = f"cannot watch the session folders ({describe_error(error)}); nothing deleted"
        return sync(), reason
    return _sync_until_still(sync, roots, connection, watch)


def _sync_until_still(
    sync: Callable[[], SyncReport],
    roots: Callable[[], list[str]],
    connection: apsw.Connection,
    watch: SessionWatch,
) -> tuple[SyncReport, str | None]:
    report: SyncReport | None = None
    for _ in range(SYNC_ATTEMPTS):
        if watch.unavailable:
            previous, report = report, sync()
            if previous is not None and not _changed_anything(report):
                return report, None
            continue
        watched_roots = roots()
        # Every folder is watched before the scan lists it: one that could not be (a dangling
        # link, whose target may be back while the scan runs) makes this round incomplete, and
        # one that is new since is an arrival in a watched folder. Only roots registered while
        # the sync ran (it asks for them again) could be scanned unwatched.
        watched = watch.watch_tree(watched_roots)
        report = sync()
        complete = watched is not None and roots() == watched_roots
        if complete and _saw_all(connection, watch.arrivals()):
            return report, None
    assert report is not None
    return report, (
        f"session files kept moving while gc synced ({SYNC_ATTEMPTS} syncs), or a folder"
        " could not be watched; nothing deleted, try again when they stay put"
    )


def _changed_anything(report: SyncReport) -> bool:
    return bool(report.files_changed or report.files_removed or report.files_renamed)


def _saw_all(connection: apsw.Connection, arrivals: list[tuple[str, bool]] | None) -> bool:
    """Whether the index has every session file that arrived, as the file now there (same
    inode, size and mtime); a folder or link that arrived may hold files the scan never
    listed."""
    if arrivals is None:
        return False
    for path, is_folder in arrivals:
        if is_folder:
            return False
        session_name = is_session_file_name(os.path.basename(path))
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            if session_name:
                return False  # it moved on, perhaps into a folder the scan had listed
            continue
        if stat_module.S_ISLNK(info.st_mode) or stat_module.S_ISDIR(info.st_mode):
            return False
        if not session_name:
            continue
        # Inode numbers are reused at once: the size and mtime make it this very file.
        rows = connection.execute("SELECT inode, size, mtime_ns FROM files WHERE path = ?", (path,))
        if rows.fetchall() != [(info.st_ino, info.st_size, info.st_mtime_ns)]:
            return False
    return True


def refusal(report: SyncReport, moving: str | None) -> str | None:
    """Why deleting must not happen after this sync: anything the index knew out of reach."""
    if report.unreadable:
        path, why = next(iter(report.unreadable.items()))
        return (
            f"{len(report.unreadable)} session file(s) or folder(s) could not be read"
            f" (first: {path}: {why})"
        )
    if report.missing_roots:
        return (
            f"session root(s) missing: {', '.join(report.missing_roots)} (bring them back,"
            " or drop one for good with `xcsh-store sync --remove-root PATH`)"
        )
    return moving


def collect_garbage(
    connection: apsw.Connection,
    folder: BlobFolder,
    *,
    apply: bool,
    cutoff: float,
    refuse_reason: str | None,
) -> GcReport:
    """Find blob files no indexed entry references, last written before ``cutoff`` (a Unix
    time); delete them if asked.

    The cutoff is the grace period counted back from when the sync behind the counts began,
    not from now: a line written after that sync read its file is missing from the counts,
    and the sync plus the wait for the lock can take longer than the grace period. An agent
    writes a blob just before the line that references it, so a blob last written before the
    cutoff is referenced by no line the counts miss.

    The reference counts and the recorded folder contents (blob_folder.py) answer the question
    in SQL; only the unreferenced blobs are looked at on disk (their mtime, for the grace
    period). A collection that deletes always lists the folder first, to finish what a killed
    collection left in quarantine and to remove temp files of blob writes killed long ago.

    Deleting is two-step so that an agent writing the same blob concurrently always wins: the
    file is renamed to a quarantine name first, then its mtime is checked again (a concurrent
    ``BlobStore.put`` refreshes it, or re-creates the file when the name is gone), and only a
    blob that is still old is unlinked; a fresh one is renamed back.
    """
    report = GcReport(applied=False)
    blobs_dir = folder.path
    others = folder.record(connection, full=apply)
    if others:
        report.restored = _restore_quarantine(blobs_dir, others)
        if report.restored:
            others = folder.record(connection, full=True)
    # One pass over the blobs for every count and list.
    ((report.blobs_on_disk, report.referenced, unreferenced, dangling),) = connection.execute(
        "SELECT count(size), count(*) FILTER (WHERE refcount > 0),"
        " group_concat(hash, ' ') FILTER (WHERE refcount <= 0 AND size IS NOT NULL),"
        " group_concat(hash, ' ') FILTER (WHERE refcount > 0 AND size IS NULL) FROM blobs"
    )
    report.skipped = folder_skipped(connection)
    report.dangling = sorted(dangling.split(" ") if dangling else [])
    for digest in sorted(unreferenced.split(" ") if unreferenced else []):
        info = folder.lstat(digest)
        if info is None:
            continue
        if not stat_module.S_ISREG(info.st_mode):
            report.skipped.append(digest)  # recorded as a file, since replaced by a folder
            continue
        if info.st_mtime > cutoff:
            report.kept_recent += 1
            continue
        report.candidates.append(digest)
        report.candidate_bytes += info.st_size
    # A dry run says whether --apply would refuse, so that it predicts --apply exactly.
    report.refused = refuse_reason
    if not apply:
        return report
    # Never referenced by anything, so safe to remove even when deleting blobs is refused.
    report.temp_files_removed = _remove_stale_temp_files(blobs_dir, others or set())
    if refuse_reason is not None:
        return report
    report.applied = True
    still_referenced = _referenced_now(connection, report.candidates)
    for digest in report.candidates:
        if digest in still_referenced:
            continue
        freed = _delete_if_still_old(blobs_dir, digest, cutoff)
        if freed is not None:
            report.deleted.append(digest)
            report.bytes_freed += freed
    if report.deleted:
        with transaction(connection):
            connection.executemany(
                "DELETE FROM blobs WHERE hash = ? AND refcount <= 0",
                [(digest,) for digest in report.deleted],
            )
    return report


def _restore_quarantine(blobs_dir: str, names: set[str]) -> list[str]:
    """Undo the first step of deletions a killed collection never finished.

    A blob sits in quarantine only for the moment between its rename and its unlink; one whose
    collecting process is gone may still be needed (it was stored again meanwhile), so it goes
    back under its name, and this collection decides about it afresh.
    """
    restored = []
    for name in names:
        match = _QUARANTINE_NAME.fullmatch(name) if name.startswith(QUARANTINE_PREFIX) else None
        if match is None or _is_running(int(match.group(2))):
            continue
        try:
            if not stat_module.S_ISREG(os.lstat(os.path.join(blobs_dir, name)).st_mode):
                continue  # a folder under a quarantine name was never a blob
        except FileNotFoundError:
            continue
        digest = match.group(1)
        source, target = os.path.join(blobs_dir, name), os.path.join(blobs_dir, digest)
        with contextlib.suppress(FileNotFoundError):
            if os.path.exists(target):
                os.unlink(source)  # stored again meanwhile: same bytes, same name
            else:
                os.replace(source, target)
            restored.append(digest)
    return restored


def _is_running(pid: int) -> bool:
    if pid == os.getpid():
        return False  # this process holds the GC lock: its own earlier collection is over
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # alive, owned by another user
    return True


def _remove_stale_temp_files(blobs_dir: str, names: set[str]) -> int:
    """Temp files of blob writes killed long ago; a blob is whole before it gets its name."""
    stale = time.time() - STALE_TEMP_SECONDS
    removed = 0
    for name in names:
        if name.startswith(".") and BLOB_TEMP_NAME.fullmatch(name):
            path = os.path.join(blobs_dir, name)
            with contextlib.suppress(FileNotFoundError):
                if os.stat(path, follow_symlinks=False).st_mtime < stale and remove_quietly(path):
                    removed += 1
    return removed


def _referenced_now(connection: apsw.Connection, digests: list[str]) -> set[str]:
    """Re-read the counts right before deleting: a sync may have run in between."""
    found: set[str] = set()
    for start in range(0, len(digests), 500):
        chunk = digests[start : start + 500]
        marks = ",".join("?" * len(chunk))
        found.update(
            row[0]
            for row in connection.execute(
                f"SELECT hash FROM blobs WHERE refcount > 0 AND hash IN ({marks})", chunk
            )
        )
    return found


def _delete_if_still_old(blobs_dir: str, digest: str, cutoff: float) -> int | None:
    path = os.path.join(blobs_dir, digest)
    quarantine = os.path.join(blobs_dir, f"{QUARANTINE_PREFIX}{digest}.{os.getpid()}")
    try:
        os.rename(path, quarantine)
    except FileNotFoundError:
        return None
    info = os.lstat(quarantine)
    if not stat_module.S_ISREG(info.st_mode):
        # Replaced by a folder since it was looked at: not a blob, not ours to delete.
        with contextlib.suppress(OSError):
            os.rename(quarantine, path)
        return None
    if info.st_mtime > cutoff:
        # Someone stored this blob again just now: put it back (same content, same name).
        if os.path.exists(path):
            os.unlink(quarantine)
        else:
            os.replace(quarantine, path)
        return None
    os.unlink(quarantine)
    return info.st_size
