"""The first stage of a sync: find what changed. The scan (``write/scan.py``) walks the roots
and yields the files whose stat differs from what the index holds; here they become the
``todo`` the next stages read (each with its file row, if any), in the order they are read,
and the files the index knew that are gone (``vanished``). Files moved, renamed or back as
they were are settled here, in the index, without being read again."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Set

import apsw

from xcsh_store.files import open_regular_file
from xcsh_store.index.archive.keeper import Keeper, Place
from xcsh_store.index.db import transaction
from xcsh_store.index.write.scan import (
    IndexedFiles,
    KnownFile,
    KnownStats,
    SeenFile,
    SyncReport,
    hiding_folder,
    is_under_any,
    known_file,
    scan_any,
)
from xcsh_store.index.write.stages.resume import indexed_windows


@dataclasses.dataclass
class Changes:
    """What a sync has to do, as the scan found it: the files to read (``todo``: each with
    its row, if the index knows it; oldest first), the known files gone (by path), and the
    files an earlier usage-first sync read only the usage of (``pending``: read whole now)."""

    todo: list[tuple[SeenFile, KnownFile | None]]
    vanished: dict[str, KnownFile]
    pending: set[str]


def find_changes(
    connection: apsw.Connection,
    roots: list[str],
    full: bool,
    report: SyncReport,
    indexed: IndexedFiles | None = None,
    agent_roots: Mapping[str, str] | None = None,
    keeper: Keeper | None = None,
) -> Changes:
    """Scan ``roots`` (every file when ``full``, else those whose stat changed) and settle in
    the index what needs no read; ``report`` counts what was seen (sync_files' arguments)."""
    indexed = indexed or IndexedFiles.read(connection)
    # Most files are unchanged: the scan compares their stat with these and yields the rest
    # (a file whose entries an earlier usage-first sync put off is read whole now).
    pending = entries_pending_paths(connection)
    known = KnownStats(
        {path: stat for path, stat in indexed.stats.items() if path not in pending}
        if pending
        else indexed.stats
    )
    seen: dict[str, SeenFile] = {}
    scanned_roots: list[str] = []
    for root in roots:
        if not os.path.isdir(root):
            report.missing_roots.append(root)
            continue
        scanned_roots.append(root)
        for item in scan_any(root, report, None if full else known, (agent_roots or {}).get(root)):
            seen[item.path] = item
    # (A stale file back is read again, as any file whose reader was revised.)
    back = {path: v for path, v in indexed.gone.items() if path not in indexed.stale}
    _take_back(connection, seen, back, known.unchanged)
    report.files_unchanged = len(known.unchanged)
    report.files_seen = len(seen) + report.files_unchanged

    known_paths = indexed.paths
    unreadable = list(report.unreadable)
    vanished = {
        path: row
        for path in known_paths - known.unchanged - seen.keys() - indexed.gone.keys()
        if is_under_any(path, scanned_roots)
        # A file in a folder that cannot be listed keeps its rows until it can be looked at.
        and not (unreadable and is_under_any(path, unreadable))
        # (None only in a damaged index, whose path index no longer finds the row.)
        and (row := known_file(connection, path)) is not None
    }
    _keep_out_of_reach(vanished, scanned_roots, report)
    renamed = _follow_renames(connection, seen, known_paths, vanished, report, keeper)
    report.files_unchanged += len(renamed)
    todo = [
        (item, _known(connection, path, indexed) if path in known_paths else None)
        for path, item in seen.items()
        if path not in renamed
    ]

    # Oldest first, so entry keys (and FTS rowids) grow with recency: search ranks the newest
    # matches of a very common query by walking rowids downwards.
    todo.sort(key=lambda pair: pair[0].mtime_ns)
    return Changes(todo, vanished, pending)


def entries_pending_paths(connection: apsw.Connection) -> set[str]:
    """The files a usage-first sync read only the usage of (served by files_entries_pending)."""
    return {
        path
        for (path,) in connection.execute(
            "SELECT path FROM files WHERE entries_pending = 1 AND gone_at IS NULL"
        )
    }


def _known(connection: apsw.Connection, path: str, indexed: IndexedFiles) -> KnownFile | None:
    """The file's row, marked stale when an earlier revision of its reader made its rows."""
    row = known_file(connection, path)
    if row is not None and path in indexed.stale:
        row = dataclasses.replace(row, stale=True)
    return row


def _take_back(
    connection: apsw.Connection,
    seen: dict[str, SeenFile],
    gone: Mapping[str, tuple[int, int, int, int]],
    unchanged: set[str],
) -> None:
    """Files found gone that are back just as they were read (a folder moved away and back, a
    disk mounted again): no longer gone, and unchanged."""
    back = [
        path
        for path in gone.keys() & seen.keys()
        if ((item := seen[path]).size, item.mtime_ns, item.inode, item.ctime_ns) == gone[path]
    ]
    if not back:
        return
    with transaction(connection):
        connection.executemany(
            "UPDATE files SET gone_at = NULL WHERE path = ?", [(p,) for p in back]
        )
    for path in back:
        del seen[path]
        unchanged.add(path)


def _keep_out_of_reach(
    vanished: dict[str, KnownFile], roots: list[str], report: SyncReport
) -> None:
    """A known file that is out of reach is not gone: it keeps its rows (and its blob refs
    stay counted), and its folder is reported unreadable until it can be looked at again."""
    for path in list(vanished):
        if os.path.lexists(path):
            # Out of the scan's reach while it ran (a folder link's target was back only
            # after it), there now: the next sync reads it.
            del vanished[path]
            continue
        root = next(root for root in roots if is_under_any(path, [root]))
        found = hiding_folder(path, root)
        if found is not None:
            del vanished[path]
            report.unreadable[found[0]] = found[1]


def _follow_renames(
    connection: apsw.Connection,
    seen: dict[str, SeenFile],
    known_paths: Set[str],
    vanished: dict[str, KnownFile],
    report: SyncReport,
    keeper: Keeper | None = None,
) -> set[str]:
    """A vanished file that reappears under a new name (same inode, size, mtime) is moved;
    returns the new paths. So is one copied under the same name elsewhere and deleted (moved
    to another disk, a new inode): same name, same size, the same bytes indexed. Its archive
    stays its own, and records the new place.

    Only a file whose rows hold what it says moves with them: one that could not be read when
    it was found has no rows (its blob refs would be missing for good), and the bytes indexed
    must still begin the file (an inode number is reused at once, by a file that may have the
    same size and mtime). Any other is read again under its new name.
    """
    renamed: set[str] = set()
    movable = [row for row in vanished.values() if row.status == "ok"]
    by_identity = {(row.inode, row.size, row.mtime_ns): row for row in movable}
    by_name = {(os.path.basename(row.path), row.size): row for row in movable}
    if not by_identity:
        return renamed
    for path, item in seen.items():
        if path in known_paths or item.agent is not None:
            continue  # (a plugin's session is no file: its identity is the plugin's)
        row = by_identity.get((item.inode, item.size, item.mtime_ns))
        if row is None:
            row = by_name.get((os.path.basename(path), item.size))
        if row is None or row.path not in vanished or not _holds_indexed_bytes(path, row, report):
            continue
        with transaction(connection):
            connection.execute(
                # A rename sets the ctime (a copy the inode and mtime too): keep the new ones, or
                # the next sync re-reads the file.
                "UPDATE files SET path = ?, root = ?, project_dir = ?, ctime_ns = ?, inode = ?,"
                " mtime_ns = ? WHERE id = ?",
                (path, item.root, item.project_dir, item.ctime_ns, item.inode, item.mtime_ns,
                 row.id),
            )  # fmt: skip
            connection.execute(
                "UPDATE sessions SET path = ?, project_dir = ? WHERE file_id = ?",
                (path, item.project_dir, row.id),
            )
            if keeper is not None:
                keeper.moved(row.id, Place(path, item.root, item.project_dir))
                keeper.sync()
        del vanished[row.path]
        renamed.add(path)
        report.files_renamed += 1
    return renamed


def _holds_indexed_bytes(path: str, row: KnownFile, report: SyncReport) -> bool:
    try:
        with open_regular_file(path) as stream:
            return indexed_windows(stream, row, report) is not None
    except OSError:
        return False  # gone again, or not readable: the indexer decides about it
