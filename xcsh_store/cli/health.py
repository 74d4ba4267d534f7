"""Health check of an installation and an agent dir: versions, paths, index state, permissions."""

from __future__ import annotations

import os
import platform
import stat
from dataclasses import dataclass, field
from importlib import metadata

from xcsh_store import __version__
from xcsh_store.demo.folder import DEMO_MARKER
from xcsh_store.errors import XcshStoreError
from xcsh_store.format.session_roots import read_session_roots
from xcsh_store.homes import get_data_store_dir
from xcsh_store.index import (
    ArchiveStats,
    DuplicateSession,
    IndexStats,
    OutsideReaders,
    SessionIndex,
    SkippedLines,
    SQLiteError,
    check_outside_readers,
    has_fts5,
    sqlite_versions,
)
from xcsh_store.paths import (
    BLOBS_DIRNAME,
    DIR_MODE,
    FILE_MODE,
    HISTORY_DB_NAME,
    INDEX_DB_NAME,
    SESSIONS_DIRNAME,
    TERMINAL_SESSIONS_DIRNAME,
    get_blobs_dir,
    get_history_db_path,
    get_index_db_path,
    get_sessions_dir,
)

# Session files and blobs can be many; beyond this, only the count of bad ones is kept.
MAX_LISTED_PROBLEMS = 20


@dataclass(frozen=True, slots=True)
class PermissionProblem:
    """A file or folder that others than its owner may read or write."""

    path: str
    kind: str  # "folder" or "file"
    mode: int
    expected: int

    @property
    def fix(self) -> str:
        return f"chmod {self.expected:o} {_quote(self.path)}"


@dataclass
class Diagnosis:
    versions: dict[str, str]
    fts5: bool
    paths: dict[str, str]
    exists: dict[str, bool]
    index: IndexStats | None = None
    index_error: str | None = None
    # What Python's sqlite3 and the sqlite3 command can do with index.db (None: no index.db).
    outside_readers: OutsideReaders | None = None
    # Session folders outside sessions/ that the manager recorded (session_roots.py).
    session_roots: list[str] = field(default_factory=list)
    checked: int = 0
    permission_problems: list[PermissionProblem] = field(default_factory=list)
    more_permission_problems: int = 0
    problems: list[str] = field(default_factory=list)
    # Lines of indexed files that hold no JSON object: listed, not a problem (readers skip them
    # and the file is left as it is).
    skipped_lines: dict[str, SkippedLines] = field(default_factory=dict)
    # Sessions kept in several files (a migrated or restored copy): usage counts each once.
    duplicates: list[DuplicateSession] = field(default_factory=list)
    # The archive of other agents' sessions (its size and file count).
    archive: ArchiveStats | None = None

    @property
    def healthy(self) -> bool:
        return not self.problems


def _quote(path: str) -> str:
    return f"'{path}'" if any(char in path for char in " '\"$`\\") else path


def _package_version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def diagnose(agent_dir: str) -> Diagnosis:
    """Everything ``xcsh-store doctor`` reports, with a fix for each problem found."""
    paths = {
        "agent_dir": agent_dir,
        "sessions": get_sessions_dir(agent_dir),
        "blobs": get_blobs_dir(agent_dir),
        "history_db": get_history_db_path(agent_dir),
        "index_db": get_index_db_path(agent_dir),
    }
    diagnosis = Diagnosis(
        versions={
            "xcsh_store": __version__,
            "python": platform.python_version(),
            **sqlite_versions(),
            "orjson": _package_version("orjson"),
            "click": _package_version("click"),
            "sqlite_utils": _package_version("sqlite-utils"),
        },
        fts5=has_fts5(),
        paths=paths,
        exists={name: os.path.exists(path) for name, path in paths.items()},
    )
    if not diagnosis.fts5:
        diagnosis.problems.append("the SQLite inside apsw has no FTS5: reinstall apsw from PyPI")
    # The index of someone who uses only other agents: it has no sessions/ of its own.
    in_data_dir = agent_dir == get_data_store_dir()
    if not diagnosis.exists["agent_dir"]:
        diagnosis.problems.append(
            f"no index yet at {agent_dir}: run `xcsh-store sync`"
            if in_data_dir
            else f"{agent_dir} does not exist: no agent has written sessions here yet "
            "(try `xcsh-store demo` for a sample)"
        )
        return diagnosis
    if not diagnosis.exists["sessions"] and not in_data_dir:
        diagnosis.problems.append(
            f"{paths['sessions']} is missing: this is not an agent dir (check --agent-dir or"
            " $XCSH_AGENT_DIR); `xcsh-store sync --init` makes it one"
        )
    _check_session_roots(diagnosis)
    _check_index(diagnosis)
    if diagnosis.exists["index_db"]:
        # After _check_index has closed its connection: the readers open index.db themselves.
        diagnosis.outside_readers = check_outside_readers(paths["index_db"])
    _check_permissions(diagnosis)
    return diagnosis


def _check_session_roots(diagnosis: Diagnosis) -> None:
    """A recorded folder that is gone makes `gc --apply` refuse until it is back or dropped."""
    try:
        diagnosis.session_roots = read_session_roots(diagnosis.paths["agent_dir"])
    except XcshStoreError as error:
        diagnosis.problems.append(str(error))
        return
    for root in diagnosis.session_roots:
        if not os.path.isdir(root):
            diagnosis.problems.append(
                f"session folder {root} (recorded by the session manager) is missing, so"
                f" `gc --apply` refuses: bring it back, or `xcsh-store sync --remove-root {root}`"
            )


def _check_index(diagnosis: Diagnosis) -> None:
    if not diagnosis.exists["index_db"]:
        diagnosis.index_error = "no index yet"
        diagnosis.problems.append("no index.db yet: run `xcsh-store sync`")
        return
    try:
        with SessionIndex.open(diagnosis.paths["agent_dir"], read_only=True) as index:
            diagnosis.index = index.stats()
            diagnosis.skipped_lines = index.skipped_lines()
            diagnosis.duplicates = index.duplicate_sessions()
            diagnosis.archive = index.archive_stats()
    except (XcshStoreError, SQLiteError) as error:
        diagnosis.index_error = str(error)
        diagnosis.problems.append(
            f"index.db cannot be read ({error}): delete it and run `xcsh-store sync`"
        )
        return
    stats = diagnosis.index
    if stats.unreadable_files:
        diagnosis.problems.append(
            f"{stats.unreadable_files} session file(s) could not be read: "
            "see `xcsh-store sql \"SELECT path, error FROM files WHERE status = 'unreadable'\"`"
        )
    if stats.invalid_files:
        diagnosis.problems.append(
            f"{stats.invalid_files} file(s) have no valid session header; they are indexed "
            "read-only and left alone"
        )


def _private_paths(diagnosis: Diagnosis) -> list[tuple[str, str]]:
    """(path, kind) of everything the store keeps that should be private: the agent dir, the
    databases with their side, lock and moved-aside files, the demo marker, and every folder
    and file of sessions/, blobs/ and terminal-sessions/."""
    agent_dir = diagnosis.paths["agent_dir"]
    found = [(agent_dir, "folder")]
    try:
        names = sorted(os.listdir(agent_dir))
    except OSError:
        names = []
    databases = (HISTORY_DB_NAME, INDEX_DB_NAME)
    found += [
        (os.path.join(agent_dir, name), "file")
        for name in names
        if name.startswith(databases) or name == DEMO_MARKER
    ]
    for top in (SESSIONS_DIRNAME, BLOBS_DIRNAME, TERMINAL_SESSIONS_DIRNAME):
        for folder, folders, files in os.walk(os.path.join(agent_dir, top)):
            found.append((folder, "folder"))
            folders.sort()
            found += [(os.path.join(folder, name), "file") for name in sorted(files)]
    return found


def _check_permissions(diagnosis: Diagnosis) -> None:
    bad = 0
    for path, kind in _private_paths(diagnosis):
        try:
            mode = stat.S_IMODE(os.lstat(path).st_mode)
        except OSError:
            continue
        diagnosis.checked += 1
        if not mode & 0o077:
            continue
        bad += 1
        if len(diagnosis.permission_problems) < MAX_LISTED_PROBLEMS:
            expected = DIR_MODE if kind == "folder" else FILE_MODE
            diagnosis.permission_problems.append(PermissionProblem(path, kind, mode, expected))
    diagnosis.more_permission_problems = bad - len(diagnosis.permission_problems)
    if bad:
        agent_dir = _quote(diagnosis.paths["agent_dir"])
        diagnosis.problems.append(
            f"{bad} path(s) can be read by other users (sessions hold prompts, code and keys): "
            f"run `chmod -R go-rwx {agent_dir}`"
        )
