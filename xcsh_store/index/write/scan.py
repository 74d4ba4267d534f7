"""Finding session files, and what the index remembers of each: the first step of a sync."""

from __future__ import annotations

import hashlib
import logging
import operator
import os
import stat as stat_module
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import chain, compress
from operator import attrgetter
from typing import Any

import apsw
import orjson

from xcsh_store.agents import PLUGIN_FAULTS, Agent, reader_named, sources
from xcsh_store.agents.registry import reader_revisions
from xcsh_store.files import walk_folders
from xcsh_store.format.storage import SESSION_TEMP_NAME, STALE_TEMP_SECONDS
from xcsh_store.index.model.facts import SkippedLines

log = logging.getLogger("xcsh_store")

DANGLING_LINK = "symbolic link to something missing (a disk not mounted?)"
# progress(bytes done, bytes in all, path being read)
Progress = Callable[[int, int, str], None]


@dataclass
class SyncReport:
    """What a sync did. ``read_paths`` lists every file whose content was read."""

    files_seen: int = 0
    files_unchanged: int = 0
    files_changed: int = 0
    files_reindexed: int = 0
    files_removed: int = 0
    files_renamed: int = 0
    entries_added: int = 0
    entries_removed: int = 0
    bytes_read: int = 0
    seconds: float = 0.0
    read_paths: list[str] = field(default_factory=list)
    unreadable: dict[str, str] = field(default_factory=dict)
    missing_roots: list[str] = field(default_factory=list)
    # Folders outside sessions/ the manager recorded as roots (session_roots.py).
    recorded_roots: list[str] = field(default_factory=list)
    history_mirrored: int = 0
    history_error: str | None = None
    # Temp files of whole-file rewrites that died long ago (found by the scan, then removed).
    stale_temp_files: list[str] = field(default_factory=list)
    temp_files_removed: int = 0
    # Lines skipped in what this sync read (malformed: no JSON object), per file.
    skipped_lines: dict[str, SkippedLines] = field(default_factory=dict)
    # Why this sync read every file again (an index upgrade asked for it), else None.
    resync_reason: str | None = None
    # Whether the prices changed since the index was priced, so the files of the agents whose
    # costs the index estimates were read again (index/write/prices.py).
    repriced: bool = False
    # Files whose search text is still to come (a usage-first sync put it off: searches are
    # partial until a sync adds it), and the files whose search text this sync added.
    text_pending: int = 0
    text_files_indexed: int = 0
    # Files with their usage rows but not yet their entries (usage_first.py).
    entries_pending: int = 0
    # The archive (index/archive/): files found gone whose sessions it keeps, the bytes it
    # took, and why it could not be written (the sync stopped there; None when it could).
    files_archived_gone: int = 0
    archive_bytes_written: int = 0
    archive_error: str | None = None

    @property
    def complete(self) -> bool:
        """True when every known file and root could be read (and archived): nothing is
        unaccounted for."""
        return not self.unreadable and not self.missing_roots and self.archive_error is None


@dataclass(slots=True)
class SeenFile:
    path: str
    root: str
    project_dir: str
    size: int
    mtime_ns: int
    inode: int
    # Set by every change to the inode (write, chmod, rename) and never by the user, unlike
    # mtime: a same-size edit with its mtime put back still changes it.
    ctime_ns: int
    # The agent plugin that reads this session itself (a kind other than JSONL: its path may be
    # a folder or ``<database>#<id>``, its identity the plugin's); None for a JSONL file.
    agent: str | None = None


@dataclass(slots=True)
class KnownFile:
    id: int
    path: str
    size: int
    mtime_ns: int
    inode: int
    indexed_bytes: int
    head_hash: str | None
    tail_hash: str | None
    status: str
    next_seq: int
    last_id: str | None
    legacy: bool
    chained: bool
    agent: str = "xcsh"
    # Made by an earlier revision of its agent's reader (IndexedFiles.stale): read again whole.
    stale: bool = False


def sha1_hex(data: bytes) -> str:
    return hashlib.sha1(data).hexdigest()


def is_session_file_name(name: str) -> bool:
    """``*.jsonl`` and files moved aside as invalid (compatibility: Invalid files are moved
    aside); never dotfiles (temp files)."""
    return not name.startswith(".") and (name.endswith(".jsonl") or ".jsonl.invalid-" in name)


# --------------------------------------------------------------------------------------------
# Scanning


@dataclass(frozen=True)
class IndexedFiles:
    """What the files table says: the identity (size, mtime_ns, inode, ctime_ns) of each
    readable file (and of each file forgotten on purpose, which a sync leaves alone while it
    is unchanged), every path, and the paths of the files found gone (their sessions are the
    archive's)."""

    stats: dict[str, tuple[int, int, int, int]]
    paths: set[str]
    # The gone files' identity as last read: one found again just so is back, unchanged.
    gone: dict[str, tuple[int, int, int, int]] = field(default_factory=dict)
    # The files whose rows an earlier revision of their agent's reader made: read again whole
    # (those there from the file, never taken for unchanged; the gone ones from the archive).
    stale: set[str] = field(default_factory=set)

    @classmethod
    def read(cls, connection: apsw.Connection) -> IndexedFiles:
        # Read from the covering index files_identity (migration 0008), not the wide rows.
        rows = connection.execute("SELECT path, size, mtime_ns, inode, ctime_ns, status FROM files")
        stats, paths = {}, set()
        for path, size, mtime_ns, inode, ctime_ns, status in rows:
            paths.add(path)
            if status != "unreadable":
                stats[path] = (size, mtime_ns, inode, ctime_ns)
        # A gone file is never taken for unchanged: the scan yields it when it is back.
        gone = {path: stats.pop(path) for (path,) in connection.execute(_GONE) if path in stats}
        for path, *identity in connection.execute(
            "SELECT path, size, mtime_ns, inode, ctime_ns FROM forgotten"
        ):
            stats.setdefault(path, tuple(identity))
        stale = stale_files(connection)
        for path in stale:
            stats.pop(path, None)
        return cls(stats, paths, gone, stale)


def stale_files(connection: apsw.Connection) -> set[str]:
    """The paths of the files whose rows were made by another revision of their agent's reader
    than the installed one (agents of no plugin installed: none)."""
    revisions = reader_revisions()
    if not revisions:
        return set()
    # Below and above each agent's revision: seeks in files_revision (migration 0016) that
    # touch the stale rows alone.
    sides = ("SELECT path FROM files WHERE agent = ? AND reader_revision < ?",
             "SELECT path FROM files WHERE agent = ? AND reader_revision > ?")  # fmt: skip
    sql = " UNION ALL ".join(side for _agent in revisions for side in sides)
    values = [value for pair in revisions.items() for value in (*pair, *pair)]
    return {path for (path,) in connection.execute(sql, values)}


# (Served by the partial index files_gone, migration 0014.)
_GONE = "SELECT path FROM files WHERE gone_at IS NOT NULL"


@dataclass
class KnownStats:
    """The identity of each file as indexed; a scan given this puts the paths whose stat
    still matches in ``unchanged`` instead of yielding them (the no-change sync's loop)."""

    stats: dict[str, tuple[int, int, int, int]]
    unchanged: set[str] = field(default_factory=set)


def scan_root(
    root: str,
    report: SyncReport,
    known: KnownStats | None = None,
    temp_files: bool = True,
    project_folders: bool = True,
) -> Iterator[SeenFile]:
    """Every session file below ``root`` (but the unchanged ones of ``known``); follows
    folder symlinks once, never in a loop. ``temp_files``: whether to report the stale temp
    files of xcsh's rewrites (for the sync to remove); never in another agent's folder.

    A file's project folder is the first folder below the root (empty for files in the root,
    and where the root's folders name no projects: ``project_folders`` false, Agent's).
    """
    stale = time.time() - STALE_TEMP_SECONDS
    indexed_stat = (known.stats if known is not None else {}).get
    unchanged = known.unchanged if known is not None else set()
    below_root = len(root.rstrip(os.sep)) + 1

    def failed(path: str, error: OSError) -> None:
        report.unreadable[path] = describe_error(error)

    for folder, entries in walk_folders([root], failed):
        in_project = project_folders and len(folder) > below_root
        project_dir = folder[below_root:].split(os.sep, 1)[0] if in_project else ""
        named = []
        for entry in entries:
            name = entry.name
            if name[0] == ".":
                if (
                    temp_files
                    and SESSION_TEMP_NAME.fullmatch(name)
                    and _modified_before(entry, stale)
                ):
                    report.stale_temp_files.append(entry.path)
            elif name.endswith(".jsonl") or ".jsonl.invalid-" in name:
                named.append(entry)  # is_session_file_name, inlined for the hot loop
            else:
                try:
                    if entry.is_symlink() and not os.path.exists(entry.path):
                        # A project folder on a disk that is not mounted: what is behind it
                        # is unknown, and its blob refs with it.
                        report.unreadable[entry.path] = DANGLING_LINK
                except OSError as error:
                    report.unreadable[entry.path] = describe_error(error)
        for entry, result in _changed(named, indexed_stat, unchanged, report):
            yield SeenFile(
                entry.path,
                root,
                project_dir,
                result.st_size,
                result.st_mtime_ns,
                result.st_ino,
                result.st_ctime_ns,
            )


def scan_any(
    root: str,
    report: SyncReport,
    known: KnownStats | None = None,
    agent: str | None = None,
) -> Iterator[SeenFile]:
    """The sessions below ``root``: the files scan_root finds, or, in the root of an agent that
    finds its own (``agent``, a kind other than JSONL), those its plugin lists (both for a
    JSONL agent that keeps sessions of another kind too). Stale temp files are looked for only
    in a root of no agent's."""
    plugin = reader_named(agent)
    if plugin is not None and plugin.kind != "jsonl":
        return scan_sources(root, plugin, report, known)
    projects = plugin is None or plugin.project_folders
    found = scan_root(root, report, known, temp_files=agent is None, project_folders=projects)
    if plugin is not None and plugin.other_kind_sources:
        return chain(found, scan_sources(root, plugin, report, known))
    return found


def scan_sources(
    root: str, agent: Agent, report: SyncReport, known: KnownStats | None = None
) -> Iterator[SeenFile]:
    """Every session below ``root`` of an agent that finds its own (Agent.sources), but the
    unchanged ones of ``known``. What the plugin raises costs the root (unreadable), not the
    sync."""
    indexed_stat = (known.stats if known is not None else {}).get
    unchanged = known.unchanged if known is not None else set()
    below_root = len(root.rstrip(os.sep)) + 1
    try:
        for source in sources(agent, root):
            identity = (source.size, source.mtime_ns, source.inode, source.ctime_ns)
            if indexed_stat(source.path) == identity:
                unchanged.add(source.path)
                continue
            relative = source.path[below_root:] if len(source.path) > below_root else ""
            in_project = agent.project_folders and os.sep in relative
            project_dir = relative.split(os.sep, 1)[0] if in_project else ""
            yield SeenFile(source.path, root, project_dir, *identity, agent=agent.name)
    except OSError as error:
        report.unreadable[root] = describe_error(error)
    except PLUGIN_FAULTS as error:  # the plugin's own fault
        log.warning("agent plugin %s could not list %s: %s", agent.name, root, error)
        report.unreadable[root] = f"agent plugin {agent.name} failed: {type(error).__name__}"


_IDENTITY = attrgetter("st_size", "st_mtime_ns", "st_ino", "st_ctime_ns")
_PATH = attrgetter("path")


def _changed(
    named: list[os.DirEntry[str]],
    indexed_stat: Callable[[str], tuple[int, int, int, int] | None],
    unchanged: set[str],
    report: SyncReport,
) -> Iterator[tuple[os.DirEntry[str], os.stat_result]]:
    """The entries of one folder that are regular files unlike the index's (with their stat);
    the paths of those just as indexed go to ``unchanged``.

    Most files of most syncs are unchanged, and a no-change sync should cost little more than
    the stat of each file: the stats of a folder are compared with the index's in C (map,
    compress), and only the files that differ are looked at one by one here. A file that
    cannot be stat'ed (it vanished meanwhile) sends the whole folder the careful way.
    """
    try:
        results = list(map(os.DirEntry.stat, named))
    except OSError:
        results = None
    if results is not None:
        paths = list(map(_PATH, named))
        same = list(map(operator.eq, map(indexed_stat, paths), map(_IDENTITY, results)))
        unchanged.update(compress(paths, same))
        pending: Iterable[tuple[os.DirEntry[str], os.stat_result | None]] = compress(
            zip(named, results, strict=True), map(operator.not_, same)
        )
    else:
        pending = ((entry, None) for entry in named)
    for entry, result in pending:
        path = entry.path
        if result is None:
            try:
                result = entry.stat()  # cached for those stat'ed before the failure
            except OSError as error:
                report.unreadable[path] = describe_error(error)
                continue
            if indexed_stat(path) == _IDENTITY(result):
                unchanged.add(path)
                continue
        if not stat_module.S_ISREG(result.st_mode):
            continue
        if not path.isascii() and not _is_utf8(path):
            # SQLite stores text as UTF-8; such a name would fail every statement.
            report.unreadable[path] = "file name is not valid UTF-8; rename the file"
            continue
        yield entry, result


def _modified_before(entry: os.DirEntry[str], moment: float) -> bool:
    try:
        return entry.stat(follow_symlinks=False).st_mtime < moment
    except OSError:
        return False


def _is_utf8(path: str) -> bool:
    """False for a path holding bytes that are not UTF-8 (decoded by Python as surrogates)."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def describe_error(error: OSError) -> str:
    return f"{error.strerror or str(error) or error.__class__.__name__}" + (
        f" (errno {error.errno})" if error.errno else ""
    )


def hiding_folder(path: str, root: str) -> tuple[str, str] | None:
    """For a file the index knew and the scan did not find: the folder that may hide it, and
    why, when the file may still exist out of reach (a symlinked folder whose target is gone,
    an unmounted disk, a folder that cannot be looked at: EACCES, EIO); None when the file's
    folder is there, or gone from a parent that is (then the file is really gone)."""
    folder = os.path.dirname(path)
    while is_under_any(folder, [root]):
        try:
            os.stat(folder)
        except FileNotFoundError:
            if os.path.islink(folder):
                return folder, DANGLING_LINK
            folder = os.path.dirname(folder)
            continue
        except OSError as error:
            return folder, describe_error(error)
        return None
    return None


def is_under_any(path: str, roots: list[str]) -> bool:
    """Whether ``path`` is one of ``roots`` or inside one of them."""
    return any(path == root or path.startswith(root.rstrip(os.sep) + os.sep) for root in roots)


_KNOWN_COLUMNS = (
    "id, path, size, mtime_ns, inode, indexed_bytes, head_hash, tail_hash, status, next_seq,"
    " last_id, legacy, chained, agent"
)


def _known_file(row: tuple[Any, ...]) -> KnownFile:
    columns = (*row[:11], bool(row[11]), bool(row[12]), row[13])  # legacy, chained: 0/1 in SQL
    return KnownFile(*columns)


def known_file(connection: apsw.Connection, path: str) -> KnownFile | None:
    rows = connection.execute(f"SELECT {_KNOWN_COLUMNS} FROM files WHERE path = ?", (path,))
    row = rows.fetchall()
    return _known_file(row[0]) if row else None


def file_ids(connection: apsw.Connection, paths: list[str]) -> list[int]:
    """The ids of the indexed files at ``paths`` (those indexed)."""
    rows = connection.execute(
        "SELECT id FROM files WHERE path IN (SELECT value FROM json_each(?))",
        (orjson.dumps(paths).decode(),),
    )
    return [file_id for (file_id,) in rows]
