"""Prompt history: ``history.db`` (SQLite + FTS5), file-compatible with xcsh's HistoryStorage.

Layout and SQL follow the reference (compatibility: Prompt history as in the reference), so a
``history.db`` written by xcsh opens and searches as is. Where we differ: ``add()`` hands prompts
to a background writer thread instead of a 100 ms timer (compatibility: Prompts are written by a
background thread), deletes and updates keep the FTS index right through two extra triggers
(compatibility: Delete and update triggers), and every ``open()`` returns a new instance
(compatibility: One HistoryStorage per open).
"""

from __future__ import annotations

import functools
import logging
import math
import operator
import os
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from numbers import Real

import apsw

from xcsh_store.errors import HistoryError
from xcsh_store.history.schema import Refusals, adopt, check_schema, history_migrations
from xcsh_store.history.search import (
    RECENT_SQL,
    Row,
    index_tokenizer,
    newest_matches,
    query_tokens,
    ranked_matches,
)
from xcsh_store.js import trim, well_formed
from xcsh_store.paths import FILE_MODE, ensure_private_dir, get_history_db_path
from xcsh_store.sql_migrations import SQLiteLedger, apply_pending, immediate_transaction

log = logging.getLogger("xcsh_store")

BUSY_TIMEOUT_MS = 5000
MAX_LIMIT = 1000
# Rows per write transaction: large enough that a burst of prompts costs few commits, small
# enough that another process waiting for the write lock is not held up for long.
MAX_BATCH = 1000

_INSERT_SQL = "INSERT INTO history (prompt, cwd) VALUES (?, ?)"
# A busy or locked database clears up by itself; anything else (corruption, I/O, a schema that
# changed under us) is reported instead of being shown as an empty history.
_TRANSIENT_ERRORS = (apsw.BusyError, apsw.LockedError, apsw.InterruptError)
SEARCH_ORDERS = ("recent", "rank")


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    """One stored prompt; ``created_at`` is in epoch seconds."""

    id: int
    prompt: str
    created_at: int
    cwd: str | None


def normalize_limit(limit: float) -> int:
    """As in the reference: non-finite → 0, then floor, then clamp to ``[0, MAX_LIMIT]``."""
    if isinstance(limit, bool) or not isinstance(limit, Real):
        raise TypeError(f"limit must be a number, not {type(limit).__name__}")
    if not isinstance(limit, int):
        if not math.isfinite(limit):
            return 0
        limit = math.floor(limit)
    return max(0, min(MAX_LIMIT, limit))


def backdate_prompts(db_path: str, created_at: Mapping[int, int]) -> None:
    """Give the prompts with these ids the time they were typed (epoch seconds): ``add`` dates
    a prompt by its insert. The FTS index follows the text only, so this is a plain update."""
    connection = _open_database(db_path)
    try:
        with immediate_transaction(connection):
            connection.executemany(
                "UPDATE history SET created_at = ? WHERE id = ?",
                [(moment, prompt_id) for prompt_id, moment in created_at.items()],
            )
    finally:
        connection.close()


class HistoryStorage:
    """The prompt history of one ``history.db``: non-blocking adds, recent list, FTS search.

    Writes (adds, deletes, prunes) go through one background thread with its own connection, in
    the order they were requested; reads use a second connection and see everything committed,
    which after ``flush()`` includes every earlier ``add()``. Call ``close()`` (or use ``with``);
    an instance that is still open at interpreter exit or when garbage-collected is closed then,
    and a write error at that point is logged.
    """

    def __init__(self, db_path: str) -> None:
        self.db_path = db_path
        _create_private_file(db_path)
        writer_connection = _open_database(db_path)
        try:
            _prepare_schema(writer_connection, db_path)
            self._last_prompt = _newest_prompt(writer_connection, db_path)
            self._reader = _open_database(db_path)
            self._tokenizer = index_tokenizer(self._reader)
        except BaseException:
            writer_connection.close()
            raise
        _make_private(db_path)
        self._read_lock = threading.Lock()
        self._add_lock = threading.Lock()
        self._writer = _Writer(writer_connection, db_path)
        self._finalizer = weakref.finalize(
            self, _close_quietly, self._writer, self._reader, self._read_lock, db_path
        )

    @classmethod
    def open(cls, db_path: str | os.PathLike[str] | None = None) -> HistoryStorage:
        """Open (creating if needed) ``db_path``, by default ``<agent dir>/history.db``."""
        return cls(os.fspath(db_path) if db_path is not None else get_history_db_path())

    def __enter__(self) -> HistoryStorage:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "open" if self._finalizer.alive else "closed"
        return f"<HistoryStorage {self.db_path!r} {state}>"

    def add(self, prompt: str, cwd: str | None = None) -> None:
        """Queue ``prompt`` (trimmed) for saving and return at once.

        Empty prompts and a prompt equal to the previous one (cwd ignored) are dropped. A write
        error surfaces from the next ``flush()`` or ``close()``.
        """
        trimmed = well_formed(trim(prompt))
        if not trimmed:
            return
        with self._add_lock:
            if trimmed == self._last_prompt:
                return
            self._writer.submit(_Add(trimmed, None if cwd is None else well_formed(cwd)))
            self._last_prompt = trimmed

    def flush(self) -> None:
        """Wait until every prompt added before this call is committed.

        Raises HistoryError if a write failed since the previous ``flush()``; the prompts of the
        failed batch are not retried.
        """
        self._check_open()
        self._writer.flush()

    def get_recent(self, limit: float) -> list[HistoryEntry]:
        """The newest ``limit`` prompts (clamped to 0..1000), newest first."""
        count = normalize_limit(limit)
        if count == 0:
            return []
        return self._read("list recent prompts", _recent_rows, count)

    def search(self, query: str, limit: float, order: str = "recent") -> list[HistoryEntry]:
        """Prompts containing every word of ``query`` as a word prefix, at most ``limit``.

        ``order="recent"`` (xcsh's order) puts the newest first; ``order="rank"`` puts the best
        bm25 match first, newest first among equals (FTS5 ranks every match for that, so it is
        the slower order on a large history).
        """
        if order not in SEARCH_ORDERS:
            raise ValueError(f"order must be one of {', '.join(SEARCH_ORDERS)}, not {order!r}")
        count = normalize_limit(limit)
        tokens = query_tokens(query)
        if count == 0 or not tokens:
            return []
        if order == "rank":
            return self._read("search prompts", ranked_matches, tokens, count)
        return self._read("search prompts", newest_matches, self._tokenizer, tokens, count)

    def delete(self, ids: Iterable[int]) -> int:
        """Delete the prompts with these ids; returns how many existed.

        Runs on the writer after every prompt added before it, and waits for it.
        """
        id_list = [int(entry_id) for entry_id in ids]
        if not id_list:
            return 0

        def delete_rows(connection: apsw.Connection) -> int:
            deleted = 0
            for entry_id in id_list:
                connection.execute("DELETE FROM history WHERE id = ?", (entry_id,))
                deleted += connection.changes()
            return deleted

        return self._write("delete prompts", delete_rows)

    def prune(
        self,
        older_than: datetime | timedelta | float | None = None,
        keep_last: int | None = None,
    ) -> int:
        """Delete old prompts; returns how many were deleted.

        ``older_than`` deletes prompts created before a point in time: a ``datetime`` (naive
        means local time), a ``timedelta`` back from now, or epoch seconds. ``keep_last`` deletes
        all but the ``keep_last`` newest prompts. Given both, a prompt goes if either says so.
        Runs on the writer after every prompt added before it, and waits for it.
        """
        if older_than is None and keep_last is None:
            raise ValueError("prune needs older_than, keep_last or both")
        if keep_last is not None and (isinstance(keep_last, bool) or operator.index(keep_last) < 0):
            raise ValueError(f"keep_last must be a non-negative integer, not {keep_last!r}")
        cutoff = None if older_than is None else _epoch_seconds(older_than)

        def prune_rows(connection: apsw.Connection) -> int:
            deleted = 0
            if cutoff is not None:
                connection.execute("DELETE FROM history WHERE created_at < ?", (cutoff,))
                deleted += connection.changes()
            if keep_last is not None:
                connection.execute(
                    "DELETE FROM history WHERE id NOT IN (SELECT id FROM history"
                    " ORDER BY created_at DESC, id DESC LIMIT ?)",
                    (keep_last,),
                )
                deleted += connection.changes()
            return deleted

        return self._write("prune prompts", prune_rows)

    def close(self) -> None:
        """Save everything queued, stop the writer and close the database; safe to repeat."""
        if self._finalizer.detach() is None:
            return
        _close_resources(self._writer, self._reader, self._read_lock)

    def _check_open(self) -> None:
        if not self._finalizer.alive:
            raise HistoryError(f"prompt history {self.db_path} is closed")

    def _read(
        self, action: str, fetch: Callable[..., list[Row]], *arguments: object
    ) -> list[HistoryEntry]:
        self._check_open()
        try:
            with self._read_lock:
                rows = fetch(self._reader, *arguments)
        except _TRANSIENT_ERRORS as error:
            log.warning("could not %s in %s: %s", action, self.db_path, error)
            return []
        except apsw.Error as error:
            raise _history_error(self.db_path, action, error) from error
        return [HistoryEntry(*row) for row in rows]

    def _write(self, action: str, work: Callable[[apsw.Connection], int]) -> int:
        self._check_open()
        return self._writer.run(action, work)


@dataclass(slots=True)
class _Add:
    prompt: str
    cwd: str | None


class _Job:
    """A write that someone waits for: it runs alone in its transaction, in queue order."""

    __slots__ = ("done", "error", "result", "work")

    def __init__(self, work: Callable[[apsw.Connection], int]) -> None:
        self.work = work
        self.done = False
        self.result = 0
        self.error: Exception | None = None


class _Writer:
    """Owns the write connection and the daemon thread that commits queued work in order.

    It holds no reference to its HistoryStorage, so an unclosed instance can be collected.
    """

    def __init__(self, connection: apsw.Connection, db_path: str) -> None:
        self._connection = connection
        self._db_path = db_path
        self._cond = threading.Condition()
        self._queue: deque[_Add | _Job] = deque()
        self._submitted = 0
        self._finished = 0
        self._failure: Exception | None = None
        self._stopping = False
        self._alive = True
        self._thread = threading.Thread(
            target=self._run, name=f"xcsh-history-writer {db_path}", daemon=True
        )
        self._thread.start()

    def submit(self, item: _Add | _Job) -> None:
        with self._cond:
            if self._stopping or not self._alive:
                raise HistoryError(f"prompt history {self._db_path} is closed")
            self._queue.append(item)
            self._submitted += 1
            self._cond.notify_all()

    def run(self, action: str, work: Callable[[apsw.Connection], int]) -> int:
        job = _Job(work)
        self.submit(job)
        with self._cond:
            while not job.done and self._alive:
                self._cond.wait()
        if job.error is not None:
            raise _history_error(self._db_path, action, job.error) from job.error
        if not job.done:
            raise HistoryError(f"prompt history writer for {self._db_path} stopped")
        return job.result

    def flush(self) -> None:
        with self._cond:
            target = self._submitted
            while self._finished < target and self._alive:
                self._cond.wait()
            failure, self._failure = self._failure, None
            finished = self._finished >= target
        if failure is not None:
            raise _history_error(self._db_path, "save prompts", failure) from failure
        if not finished:
            raise HistoryError(f"prompt history writer for {self._db_path} stopped")

    def stop(self) -> None:
        """Let the thread drain the queue and end, then close the connection."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        self._thread.join()
        self._connection.close()

    def _run(self) -> None:
        try:
            while True:
                with self._cond:
                    while not self._queue and not self._stopping:
                        self._cond.wait()
                    if not self._queue:
                        return
                    work = self._take_work()
                if isinstance(work, _Job):
                    self._run_job(work)
                    finished = 1
                else:
                    self._insert(work)
                    finished = len(work)
                with self._cond:
                    self._finished += finished
                    self._cond.notify_all()
        finally:
            with self._cond:
                self._alive = False
                self._cond.notify_all()

    def _take_work(self) -> _Job | list[_Add]:
        """The next job alone, or the run of adds at the head of the queue (up to MAX_BATCH)."""
        head = self._queue.popleft()
        if isinstance(head, _Job):
            return head
        batch = [head]
        while self._queue and len(batch) < MAX_BATCH:
            head = self._queue[0]
            if not isinstance(head, _Add):
                break
            self._queue.popleft()
            batch.append(head)
        return batch

    def _insert(self, batch: list[_Add]) -> None:
        try:
            with immediate_transaction(self._connection):
                self._connection.executemany(_INSERT_SQL, [(add.prompt, add.cwd) for add in batch])
        except Exception as error:
            # Caught broadly so one bad batch never ends the thread and every later add.
            log.warning("could not save %d prompts to %s: %s", len(batch), self._db_path, error)
            with self._cond:
                if self._failure is None:
                    self._failure = error

    def _run_job(self, job: _Job) -> None:
        try:
            with immediate_transaction(self._connection):
                result = job.work(self._connection)
        except Exception as error:
            outcome: tuple[int, Exception | None] = (0, error)
        else:
            outcome = (result, None)
        with self._cond:
            job.result, job.error = outcome
            job.done = True


def _recent_rows(connection: apsw.Connection, count: int) -> list[Row]:
    return list(connection.execute(RECENT_SQL, (count,)))


def _close_resources(writer: _Writer, reader: apsw.Connection, read_lock: threading.Lock) -> None:
    try:
        writer.flush()
    finally:
        writer.stop()
        with read_lock:
            reader.close()


def _close_quietly(
    writer: _Writer, reader: apsw.Connection, read_lock: threading.Lock, db_path: str
) -> None:
    """Finalizer for instances nobody closed (at exit or on collection): never raises."""
    try:
        _close_resources(writer, reader, read_lock)
    except (HistoryError, apsw.Error) as error:
        log.warning("closing prompt history %s: %s", db_path, error)


def _create_private_file(db_path: str) -> None:
    """Create the folder and an empty database file owner-only before SQLite sees them.

    SQLite creates database files 0644 and gives its -wal/-shm files the database file's mode,
    so making the file ourselves (O_EXCL: an existing file is never truncated) keeps all of
    them private.
    """
    ensure_private_dir(os.path.dirname(os.path.abspath(db_path)))
    try:
        os.close(os.open(db_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE))
    except FileExistsError:
        pass
    except OSError as error:
        raise HistoryError(f"cannot create prompt history {db_path}: {error.strerror}") from error


def _make_private(db_path: str) -> None:
    """Tighten a file written by another program (xcsh leaves it 0644)."""
    for path in (db_path, db_path + "-wal", db_path + "-shm"):
        try:
            if os.stat(path).st_mode & 0o777 != FILE_MODE:
                os.chmod(path, FILE_MODE)
        except FileNotFoundError:
            pass
        except OSError as error:
            log.warning("cannot make %s private: %s", path, error.strerror)


def _open_database(db_path: str) -> apsw.Connection:
    try:
        connection = apsw.Connection(db_path)
    except apsw.Error as error:
        raise _history_error(db_path, "open", error) from error
    connection.set_busy_timeout(BUSY_TIMEOUT_MS)
    return connection


def _prepare_schema(connection: apsw.Connection, db_path: str) -> None:
    """The reference's schema plus our two triggers (history/schema.py), without writing to a
    file we cannot read."""
    try:
        # A plain read first: a corrupt or foreign file fails here, before any pragma or DDL
        # has written a byte to it.
        check_schema(connection, db_path)
        # busy_timeout, the reference's third pragma, is set on every connection we open.
        connection.execute("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;")
        migrations = history_migrations()
        adopted = functools.partial(adopt, migrations=migrations, db_path=db_path)
        ledger = SQLiteLedger(connection, migrations, adopted, dated=False)
        apply_pending(ledger, migrations, Refusals(db_path))
    except apsw.Error as error:
        raise _history_error(db_path, "open", error) from error


def _newest_prompt(connection: apsw.Connection, db_path: str) -> str | None:
    """The prompt of the highest id, which primes the consecutive-duplicate check."""
    try:
        row = connection.execute("SELECT prompt FROM history ORDER BY id DESC LIMIT 1").fetchone()
    except apsw.Error as error:
        raise _history_error(db_path, "open", error) from error
    return None if row is None else row[0]


def _epoch_seconds(moment: datetime | timedelta | float) -> float:
    if isinstance(moment, datetime):
        return moment.timestamp()
    if isinstance(moment, timedelta):
        return time.time() - moment.total_seconds()
    if isinstance(moment, bool) or not isinstance(moment, Real):
        raise TypeError(f"older_than must be a datetime, timedelta or number, not {moment!r}")
    return float(moment)


def _history_error(db_path: str, action: str, error: Exception) -> HistoryError:
    """One line a user can act on; corruption says the file was left as it was."""
    detail = " ".join(str(error).split()) or type(error).__name__
    if isinstance(error, (apsw.CorruptError, apsw.NotADBError)):
        return HistoryError(
            f"prompt history {db_path} is corrupt or not a SQLite database ({detail});"
            " the file was left unchanged"
        )
    return HistoryError(f"prompt history {db_path}: cannot {action}: {detail}")
