"""What other programs can do with index.db through the SQLite they bring (index.md, guarantee
5): Python's sqlite3 module (sqlite-utils and Datasette read with it) and the ``sqlite3``
command, each asked in a child process (guarantee 6: one SQLite library per process), and
whether Datasette is here with xcsh-store's plugin (text and snippets of search hits)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from importlib import metadata
from urllib.parse import quote

from xcsh_store.index.db import remove_side_files

PLUGIN_MODULE = "xcsh_store.index.read.datasette_plugin"
# How long a reader may take to read one row of every table (a bound for a hang).
PROBE_TIMEOUT = 60
# A query on entries_fts that needs FTS5 and the options entries_fts is declared with.
MATCH_PROBE = "SELECT rowid FROM entries_fts WHERE entries_fts MATCH '\"xcsh\"' LIMIT 1"
_ERROR_PREFIX = re.compile(r"^(?:Parse error|Runtime error|Error)(?: near line \d+)?: ")
_TABLES = "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') ORDER BY name"

# Run by the Python found (sys.executable) with the database's URI: reads a row of every table
# and view, then the probe of full-text search; prints what happened as JSON.
_PYTHON_PROBE = f"""
import json, sqlite3, sys
found = {{"sqlite": sqlite3.sqlite_version, "error": None, "unreadable": {{}}, "match": None}}
try:
    db = sqlite3.connect(sys.argv[1], uri=True)
    for (name,) in db.execute({_TABLES!r}).fetchall():
        try:
            db.execute('SELECT * FROM "' + name.replace('"', '""') + '" LIMIT 1').fetchall()
        except sqlite3.Error as error:
            found["unreadable"][name] = str(error)
    try:
        db.execute({MATCH_PROBE!r}).fetchall()
    except sqlite3.Error as error:
        found["match"] = str(error)
    db.close()
except sqlite3.Error as error:
    found["error"] = str(error)
print(json.dumps(found))
"""


@dataclass(frozen=True, slots=True)
class OutsideReader:
    """What one reader did with index.db: ``error`` when it could not open it at all, the
    tables and views it could not read (with why), and why full-text search failed (None: it
    worked)."""

    name: str
    sqlite_version: str
    error: str | None = None
    unreadable: dict[str, str] = field(default_factory=dict)
    match_error: str | None = None

    @property
    def reads_every_table(self) -> bool:
        return self.error is None and not self.unreadable

    @property
    def searches(self) -> bool:
        return self.error is None and self.match_error is None


@dataclass(frozen=True, slots=True)
class OutsideReaders:
    """The readers found on this machine, and Datasette with the plugin (None: not installed)."""

    readers: list[OutsideReader]
    datasette_version: str | None
    plugin: bool


def check_outside_readers(db_path: str) -> OutsideReaders:
    """Ask each reader found on this machine to read ``db_path``, read-only; the ``-wal``/``-shm``
    files their read-only connections leave behind go again (as db.ReaderConnection does)."""
    side_files_absent = not any(os.path.exists(db_path + suffix) for suffix in ("-wal", "-shm"))
    try:
        readers = [_python_sqlite3(db_path)]
        command = shutil.which("sqlite3")
        if command is not None:
            readers.append(_sqlite3_command(command, db_path))
    finally:
        if side_files_absent:
            remove_side_files(db_path)
    version = _datasette_version()
    return OutsideReaders(readers, version, version is not None and _plugin_registered())


def _python_sqlite3(db_path: str) -> OutsideReader:
    uri = f"file:{quote(os.path.abspath(db_path))}?mode=ro"
    result = subprocess.run(
        [sys.executable, "-c", _PYTHON_PROBE, uri],
        capture_output=True, text=True, timeout=PROBE_TIMEOUT, check=False,
    )  # fmt: skip
    if result.returncode != 0:
        # A traceback (a Python without its sqlite3 module): its last line says what failed.
        lines = result.stderr.strip().splitlines() or ["it printed nothing"]
        return OutsideReader("Python sqlite3", "?", error=lines[-1])
    found = json.loads(result.stdout)
    return OutsideReader(
        "Python sqlite3", found["sqlite"], found["error"], found["unreadable"], found["match"]
    )


def _sqlite3_command(command: str, db_path: str) -> OutsideReader:
    def run(sql: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [command, "-readonly", "-bail", "-batch", "-noheader", "-list", db_path],
            input=sql, capture_output=True, text=True, errors="replace", timeout=PROBE_TIMEOUT,
            check=False,
        )  # fmt: skip

    listed = run(f"SELECT sqlite_version();\n{_TABLES};\n")
    if listed.returncode != 0 or not listed.stdout:
        return OutsideReader("sqlite3 command", "?", error=_error_of(listed.stderr))
    version, *names = listed.stdout.splitlines()
    reads = [f'SELECT * FROM "{name.replace(chr(34), chr(34) * 2)}" LIMIT 1;' for name in names]
    unreadable = {}
    if run("\n".join(reads)).returncode != 0:
        # One at a time, to name the ones it cannot read.
        for name, sql in zip(names, reads, strict=True):
            failed = run(sql)
            if failed.returncode != 0:
                unreadable[name] = _error_of(failed.stderr)
    match = run(MATCH_PROBE + ";")
    match_error = None if match.returncode == 0 else _error_of(match.stderr)
    return OutsideReader("sqlite3 command", version, None, unreadable, match_error)


def _error_of(stderr: str) -> str:
    """The message of the first error a reader printed, without its "near line N" prefix (the
    sqlite3 command then shows the statement, which says nothing more)."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    return _ERROR_PREFIX.sub("", lines[0]) if lines else "it printed nothing"


def _datasette_version() -> str | None:
    try:
        return metadata.version("datasette")
    except metadata.PackageNotFoundError:
        return None


def _plugin_registered() -> bool:
    """Whether Datasette, in this environment, loads xcsh-store's plugin."""
    return any(point.value == PLUGIN_MODULE for point in metadata.entry_points(group="datasette"))
