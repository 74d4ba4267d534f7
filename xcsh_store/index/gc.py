"""Blob garbage collection from reference counts, safe against agents writing at the same time."""

from __future__ import annotations

import contextlib
import os
import re
import time
from dataclasses import dataclass, field
from datetime import timedelta

import apsw

from xcsh_store.index.db import transaction
from xcsh_store.index.sync import now_iso

_HASH_NAME = re.compile(r"[0-9a-f]{64}")
QUARANTINE_PREFIX = ".gc-"


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


def scan_blob_dir(blobs_dir: str) -> dict[str, os.stat_result]:
    """Blob files by hash; names that are not a full lowercase hash are not blobs."""
    found: dict[str, os.stat_result] = {}
    try:
        entries = list(os.scandir(blobs_dir))
    except FileNotFoundError:
        return found
    for entry in entries:
        if _HASH_NAME.fullmatch(entry.name):
            with contextlib.suppress(FileNotFoundError):
                found[entry.name] = entry.stat(follow_symlinks=False)
    return found


def collect_garbage(
    connection: apsw.Connection,
    blobs_dir: str,
    *,
    apply: bool,
    grace: timedelta,
    refuse_reason: str | None,
) -> GcReport:
    """Find blob files no indexed entry references, older than ``grace``; delete them if asked.

    Deleting is two-step so that an agent writing the same blob concurrently always wins: the
    file is renamed to a quarantine name first, then its mtime is checked again (a concurrent
    ``BlobStore.put`` refreshes it, or re-creates the file when the name is gone), and only a
    blob that is still old is unlinked; a fresh one is renamed back.
    """
    report = GcReport(applied=False)
    on_disk = scan_blob_dir(blobs_dir)
    report.blobs_on_disk = len(on_disk)
    referenced = {row[0] for row in connection.execute("SELECT hash FROM blobs WHERE refcount > 0")}
    report.referenced = len(referenced)
    report.dangling = sorted(referenced - on_disk.keys())
    cutoff = time.time() - grace.total_seconds()
    for digest, info in sorted(on_disk.items()):
        if digest in referenced:
            continue
        if info.st_mtime > cutoff:
            report.kept_recent += 1
            continue
        report.candidates.append(digest)
        report.candidate_bytes += info.st_size
    _record_sizes(connection, on_disk)
    if not apply:
        return report
    if refuse_reason is not None:
        report.refused = refuse_reason
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
    info = os.stat(quarantine)
    if info.st_mtime > cutoff:
        # Someone stored this blob again just now: put it back (same content, same name).
        if os.path.exists(path):
            os.unlink(quarantine)
        else:
            os.replace(quarantine, path)
        return None
    os.unlink(quarantine)
    return info.st_size


def _record_sizes(connection: apsw.Connection, on_disk: dict[str, os.stat_result]) -> None:
    """Keep ``blobs.size`` and ``last_seen`` for the files found on disk."""
    stamp = now_iso()
    with transaction(connection):
        connection.executemany(
            "INSERT INTO blobs (hash, size, refcount, first_seen, last_seen)"
            " VALUES (?, ?, 0, ?, ?) ON CONFLICT (hash)"
            " DO UPDATE SET size = excluded.size, last_seen = excluded.last_seen",
            [(digest, info.st_size, stamp, stamp) for digest, info in on_disk.items()],
        )
