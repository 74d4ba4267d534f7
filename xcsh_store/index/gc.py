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


def blob_names(blobs_dir: str) -> set[str]:
    """Every name in the blob folder (temp and quarantine files included; see is_blob_name)."""
    try:
        return set(os.listdir(blobs_dir))
    except FileNotFoundError:
        return set()


def is_blob_name(name: str) -> bool:
    return _HASH_NAME.fullmatch(name) is not None


def collect_garbage(
    connection: apsw.Connection,
    blobs_dir: str,
    *,
    apply: bool,
    grace: timedelta,
    refuse_reason: str | None,
) -> GcReport:
    """Find blob files no indexed entry references, older than ``grace``; delete them if asked.

    Only unreferenced blobs are looked at closely (stat), so a GC costs one listing of the blob
    folder plus one query, however many blobs are in use. Deleting is two-step so that an agent
    writing the same blob concurrently always wins: the file is renamed to a quarantine name
    first, then its mtime is checked again (a concurrent ``BlobStore.put`` refreshes it, or
    re-creates the file when the name is gone), and only a blob that is still old is unlinked;
    a fresh one is renamed back.
    """
    report = GcReport(applied=False)
    names = blob_names(blobs_dir)
    referenced = {row[0] for row in connection.execute("SELECT hash FROM blobs WHERE refcount > 0")}
    # Referenced hashes are valid names already; only the rest need the name check.
    unreferenced = {name for name in names - referenced if is_blob_name(name)}
    on_disk = (names & referenced) | unreferenced
    report.blobs_on_disk = len(on_disk)
    report.referenced = len(referenced)
    report.dangling = sorted(referenced - names)
    cutoff = time.time() - grace.total_seconds()
    sizes: dict[str, int] = {}
    for digest in sorted(unreferenced):
        try:
            info = os.stat(os.path.join(blobs_dir, digest))
        except FileNotFoundError:
            continue
        sizes[digest] = info.st_size
        if info.st_mtime > cutoff:
            report.kept_recent += 1
            continue
        report.candidates.append(digest)
        report.candidate_bytes += info.st_size
    _record_sizes(connection, blobs_dir, sizes, on_disk)
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


def _record_sizes(
    connection: apsw.Connection, blobs_dir: str, unreferenced: dict[str, int], on_disk: set[str]
) -> None:
    """Fill ``blobs.size`` where it is unknown, and add rows for unreferenced blob files."""
    unknown = [
        row[0]
        for row in connection.execute("SELECT hash FROM blobs WHERE size IS NULL")
        if row[0] in on_disk
    ]
    sizes = dict(unreferenced)
    for digest in unknown:
        if digest not in sizes:
            with contextlib.suppress(FileNotFoundError):
                sizes[digest] = os.stat(os.path.join(blobs_dir, digest)).st_size
    stamp = now_iso()
    with transaction(connection):
        connection.executemany(
            "INSERT INTO blobs (hash, size, refcount, first_seen, last_seen)"
            " VALUES (?, ?, 0, ?, ?) ON CONFLICT (hash) DO UPDATE SET size = excluded.size",
            [(digest, size, stamp, stamp) for digest, size in sizes.items()],
        )
