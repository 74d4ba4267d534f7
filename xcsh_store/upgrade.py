"""Rewriting old session files (v1, v2, or missing ids per D25) as current v3 files in place."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass

from xcsh_store.blobs import BlobStore
from xcsh_store.index.indexer import synthetic_ids_for
from xcsh_store.index.scan import SyncReport, scan_root
from xcsh_store.loader import read_session_file
from xcsh_store.migrate import (
    CURRENT_SESSION_VERSION,
    find_header_index,
    is_valid_session,
    migrate_session_entries,
    session_version,
)
from xcsh_store.paths import get_blobs_dir, get_sessions_dir
from xcsh_store.persist import entry_to_line
from xcsh_store.storage import FileSessionStorage, write_atomically

MIGRATED = "migrated"
WOULD_MIGRATE = "would_migrate"
CURRENT = "current"
NOT_A_SESSION = "not_a_session"
CHANGED = "changed"
UNREADABLE = "unreadable"


@dataclass(frozen=True, slots=True)
class FileMigration:
    """What happened to one file; ``status`` is one of the module's status constants."""

    path: str
    status: str
    from_version: int | None = None
    to_version: int | None = None
    error: str | None = None


def session_files(agent_dir: str) -> list[str]:
    """Every ``*.jsonl`` below the agent dir's sessions folder, sorted (moved-aside files not)."""
    root = get_sessions_dir(agent_dir)
    if not os.path.isdir(root):
        return []
    return sorted(
        seen.path for seen in scan_root(root, SyncReport()) if seen.path.endswith(".jsonl")
    )


def migrate_files(
    paths: Iterable[str] | None, agent_dir: str, dry_run: bool = False
) -> list[FileMigration]:
    """Bring each file (default: every session file of ``agent_dir``) to the current version.

    A file is rewritten atomically (temp file, fsync, rename) only when a migration changed
    something; its modification time is kept so session lists keep their order. New entry ids
    are the ones the index already shows for the old file, so ids seen before stay valid. A
    file without a valid session header is never touched (D20).
    """
    blob_store = BlobStore(get_blobs_dir(agent_dir))
    targets = session_files(agent_dir) if paths is None else [os.path.abspath(p) for p in paths]
    return [_migrate_file(path, blob_store, dry_run) for path in targets]


def _migrate_file(path: str, blob_store: BlobStore, dry_run: bool) -> FileMigration:
    try:
        before = os.stat(path)
        contents = read_session_file(path)
    except OSError as error:
        return FileMigration(path, UNREADABLE, error=error.strerror or str(error))
    entries = contents.entries
    if not is_valid_session(entries):
        return FileMigration(path, NOT_A_SESSION, error="no valid session header")
    header = entries[find_header_index(entries) or 0]
    version = session_version(header)
    if not migrate_session_entries(entries, synthetic_ids_for(path)):
        return FileMigration(path, CURRENT, version, version)
    if dry_run:
        return FileMigration(path, WOULD_MIGRATE, version, CURRENT_SESSION_VERSION)
    if _identity(os.stat(path)) != _identity(before):
        return FileMigration(
            path, CHANGED, version, error="the file changed while it was read; run migrate again"
        )
    try:
        write_atomically(
            FileSessionStorage(), path, (entry_to_line(entry, blob_store) for entry in entries)
        )
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    except OSError as error:
        return FileMigration(path, UNREADABLE, version, error=error.strerror or str(error))
    return FileMigration(path, MIGRATED, version, CURRENT_SESSION_VERSION)


def _identity(info: os.stat_result) -> tuple[int, int, int]:
    return info.st_ino, info.st_size, info.st_mtime_ns
