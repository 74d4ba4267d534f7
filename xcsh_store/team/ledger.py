"""What this machine last pushed of each session file: ``team-pushed.db`` beside index.db, so
that a push of a file that grew sends the entries that are new or changed, not the whole file.

For each (host, file) it keeps the watermark and tier the server was given with the file's
rows, their form (the tier and the redaction they were made with: disclosure.py ``form``), and
a mark of each entry row sent (index/read/export.py ``entry_marks``: the entry's key,
place and values, no text). It is a hint, never trusted alone: a push uses it only when the
server's watermark and tier of the file are the very ones kept here, so the server holds
exactly the rows the marks describe; any other server, a restored backup, a push by another
client or a lost ledger costs one replacement of the file's rows, as before. Written after the
server committed: a push killed between the two leaves an old watermark here, which no longer
matches, and the file is replaced next time. A row that cannot be read is taken as no row, and
one whose marks the server turns out not to hold (a ledger copied, restored or edited) is
forgotten by the push that finds it (upload.py): the file is sent whole. Nothing in it leaves
the machine; an error it raises names it.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from xcsh_store.paths import FILE_MODE
from xcsh_store.team.errors import TeamIndexError

LEDGER_FILE_NAME = "team-pushed.db"
_COLUMNS = ("host", "path", "watermark", "tier", "form", "marks")


@dataclass(frozen=True)
class Pushed:
    """One file as the server was given it: its watermark, tier, form and entry marks by
    seq."""

    watermark: str
    tier: str
    form: str
    marks: dict[int, int]


class PushLedger:
    """``team-pushed.db`` in ``folder`` (made on first use, 0600)."""

    def __init__(self, folder: str) -> None:
        self.path = path = os.path.join(folder, LEDGER_FILE_NAME)
        with self._named():
            try:
                self.connection = _opened(path)
            except sqlite3.DatabaseError:
                # Not a database (damaged): kept aside for its owner; a hint, so begun again.
                os.replace(path, f"{path}.unreadable")
                self.connection = _opened(path)
            columns = [row[1] for row in self.connection.execute("PRAGMA table_info(pushed)")]
            if columns and columns != list(_COLUMNS):
                # Another version's: a hint only, made again as files are pushed.
                self.connection.execute("DROP TABLE pushed")
            self.connection.execute(
                "CREATE TABLE IF NOT EXISTS pushed (host TEXT NOT NULL, path TEXT NOT NULL,"
                " watermark TEXT NOT NULL, tier TEXT NOT NULL, form TEXT NOT NULL,"
                " marks BLOB NOT NULL,"
                " PRIMARY KEY (host, path)) WITHOUT ROWID"
            )

    def close(self) -> None:
        self.connection.close()

    def pushed(self, host: str, path: str) -> Pushed | None:
        """What the server was given of the file, or None: not pushed from here, or a row that
        cannot be read (of another type, marks that are no pairs of numbers)."""
        with self._named():
            row = self.connection.execute(
                "SELECT watermark, tier, form, marks FROM pushed WHERE host = ? AND path = ?",
                (host, path),
            ).fetchone()
        if row is None:
            return None
        watermark, tier, form, marks = row
        pairs = array("q")
        try:
            pairs.frombytes(marks)
        except (TypeError, ValueError):
            return None
        if not all(isinstance(value, str) for value in (watermark, tier, form)) or len(pairs) % 2:
            return None
        return Pushed(watermark, tier, form, dict(zip(pairs[::2], pairs[1::2], strict=True)))

    def record(self, host: str, files: Iterable[tuple[str, Pushed]]) -> None:
        """Files the server now holds: (path, what it holds of it) each."""
        rows = [
            (host, path, pushed.watermark, pushed.tier, pushed.form, _packed(pushed.marks))
            for path, pushed in files
        ]
        with self._transaction():
            self.connection.executemany(
                "INSERT OR REPLACE INTO pushed VALUES (?, ?, ?, ?, ?, ?)", rows
            )

    def forget(self, host: str, paths: Iterable[str]) -> None:
        with self._transaction():
            self.connection.executemany(
                "DELETE FROM pushed WHERE host = ? AND path = ?", ((host, p) for p in paths)
            )

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        with self._named():
            self.connection.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                self.connection.execute("ROLLBACK")
                raise
            self.connection.execute("COMMIT")

    @contextlib.contextmanager
    def _named(self) -> Iterator[None]:
        """An SQLite error of the ledger as a TeamIndexError that names it."""
        try:
            yield
        except sqlite3.Error as error:
            raise TeamIndexError(
                f"The push ledger {self.path} cannot be used ({error}): it only saves sending"
                " files whole, so it may be deleted"
            ) from error


def _opened(path: str) -> sqlite3.Connection:
    os.close(os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, FILE_MODE))
    # isolation_level None: the transactions below are the ones written out.
    connection = sqlite3.connect(path, timeout=30, isolation_level=None)
    try:
        connection.execute("PRAGMA journal_mode = WAL")
    except BaseException:
        connection.close()
        raise
    return connection


def _packed(marks: dict[int, int]) -> bytes:
    pairs = array("q")
    for seq in sorted(marks):
        pairs.extend((seq, marks[seq]))
    return pairs.tobytes()
