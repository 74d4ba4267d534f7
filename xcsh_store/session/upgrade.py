"""Rewriting old session files (v1, v2, or missing ids) as current v3 files in place.

(compatibility: Session file format as in the reference; Entries without id or parentId)
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from xcsh_store.files import open_regular_file, walk_folders
from xcsh_store.format.blobs import BlobStore
from xcsh_store.format.loader import read_session_file
from xcsh_store.format.persist import entry_to_line
from xcsh_store.format.storage import (
    WRITE_BATCH_BYTES,
    FileSessionStorage,
    lock_file,
    write_atomically,
)
from xcsh_store.format.versions import (
    CURRENT_SESSION_VERSION,
    find_header_index,
    is_valid_session,
    migrate_session_entries,
    session_version,
    synthetic_ids_for,
)
from xcsh_store.paths import get_blobs_dir, get_sessions_dir

MIGRATED = "migrated"
WOULD_MIGRATE = "would_migrate"
CURRENT = "current"
NOT_A_SESSION = "not_a_session"
CHANGED = "changed"
UNREADABLE = "unreadable"

# Tries of a file that keeps changing before it is reported as CHANGED.
ATTEMPTS = 5


@dataclass(frozen=True, slots=True)
class FileMigration:
    """What happened to one file; ``status`` is one of the module's status constants."""

    path: str
    status: str
    from_version: int | None = None
    to_version: int | None = None
    error: str | None = None


def session_files(agent_dir: str) -> list[str]:
    """Every ``*.jsonl`` below the agent dir's sessions folder, sorted, as a sync finds them:
    folder symlinks are followed (each folder read once), dotfiles (temp files), files moved
    aside, anything but regular files and names that are not UTF-8 are left out."""
    found = []
    for _folder, entries in walk_folders([get_sessions_dir(agent_dir)], lambda _path, _error: None):
        for entry in entries:
            with contextlib.suppress(OSError):
                name = entry.name
                if (
                    name[0] != "."
                    and name.endswith(".jsonl")
                    and entry.is_file()
                    and _utf8(entry.path)
                ):
                    found.append(entry.path)
    return sorted(found)


def _utf8(path: str) -> bool:
    """False for a path holding bytes that are not UTF-8 (decoded by Python as surrogates)."""
    return path.isascii() or path.encode("utf-8", "replace").decode("utf-8") == path


def migrate_files(
    paths: Iterable[str] | None, agent_dir: str, dry_run: bool = False
) -> list[FileMigration]:
    """Bring each file (default: every session file of ``agent_dir``) to the current version.

    A file is rewritten atomically (temp file, fsync, rename) only when a migration changed
    something; its modification time is kept so session lists keep their order. No line
    appended meanwhile is lost: the file is locked as the store's writers lock it from the
    read to the rename, checked again before the rename (read again if it changed), and what
    a writer that ignores the lock appended after that check is copied onto the new file.
    New entry ids are the ones the index already shows for the old file, so ids seen before
    stay valid (compatibility: Deterministic ids for files without them). A file without a valid
    session header is never touched (compatibility: Invalid files are moved aside).
    """
    blob_store = BlobStore(get_blobs_dir(agent_dir))
    targets = session_files(agent_dir) if paths is None else [os.path.abspath(p) for p in paths]
    return [_migrate_file(path, blob_store, dry_run) for path in targets]


def _migrate_file(path: str, blob_store: BlobStore, dry_run: bool) -> FileMigration:
    result = FileMigration(path, CHANGED)
    for _attempt in range(ATTEMPTS):
        result = _migrate_once(path, blob_store, dry_run)
        if result.status != CHANGED:
            break
    return result


def _migrate_once(path: str, blob_store: BlobStore, dry_run: bool) -> FileMigration:
    """One try: read, migrate and replace the file, holding the lock its writers take."""
    try:
        with open_regular_file(path) as held:
            # The store's writers wait for this lock and then write to the new file; any other
            # writer's line is caught by the checks below.
            lock_file(held.fileno())
            before = os.fstat(held.fileno())
            contents = read_session_file(path)
            if not _same_file(path, before, held.fileno()):
                return _changed(path, None)
            return _rewrite(path, contents.entries, held.fileno(), before, blob_store, dry_run)
    except OSError as error:
        return FileMigration(path, UNREADABLE, error=error.strerror or str(error))


def _rewrite(
    path: str,
    entries: list[dict[str, Any]],
    held: int,
    before: os.stat_result,
    blob_store: BlobStore,
    dry_run: bool,
) -> FileMigration:
    if not is_valid_session(entries):
        return FileMigration(path, NOT_A_SESSION, error="no valid session header")
    header = entries[find_header_index(entries) or 0]
    version = session_version(header)
    if not migrate_session_entries(entries, synthetic_ids_for(path)):
        return FileMigration(path, CURRENT, version, version)
    if dry_run:
        return FileMigration(path, WOULD_MIGRATE, version, CURRENT_SESSION_VERSION)

    def still_the_file_read() -> None:
        if not _same_file(path, before, held):
            raise _FileChangedError

    try:
        write_atomically(
            FileSessionStorage(),
            path,
            (entry_to_line(entry, blob_store) for entry in entries),
            before_rename=still_the_file_read,
        )
    except _FileChangedError:
        return _changed(path, version)
    late = _copy_late_appends(held, before.st_size, path)
    if not late:
        # Session lists sort by modification time: a migration alone must not reorder them.
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    return FileMigration(path, MIGRATED, version, CURRENT_SESSION_VERSION)


class _FileChangedError(Exception):
    """The file grew or was replaced after it was read: the rewrite would lose that."""


def _changed(path: str, version: int | None) -> FileMigration:
    return FileMigration(
        path, CHANGED, version, error="the file changed while it was read; run migrate again"
    )


def _same_file(path: str, before: os.stat_result, held: int) -> bool:
    """Whether ``path`` is still the file read, with nothing written to it since."""
    now = os.fstat(held)
    return os.path.samestat(os.stat(path), before) and _identity(now) == _identity(before)


def _copy_late_appends(held: int, read_size: int, path: str) -> int:
    """Bytes a writer that ignores the lock appended to the old file between the last check
    and the rename: they go on the end of the new file. Returns how many."""
    copied = 0
    while chunk := os.pread(held, WRITE_BATCH_BYTES, read_size + copied):
        with open(path, "ab") as stream:
            stream.write(chunk)
        copied += len(chunk)
    return copied


def _identity(info: os.stat_result) -> tuple[int, int, int, int]:
    return info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns
