"""Writing the rows of session files into the index in bounded transactions: from chunks that
worker processes built, or by reading a file here (appends, small syncs, verify and repair)."""

from __future__ import annotations

from typing import Any

import apsw
import orjson

from xcsh_store.agents import XCSH_AGENTS
from xcsh_store.agents.registry import reader_revisions
from xcsh_store.index.archive.keeper import Keeper, Place
from xcsh_store.index.model.columns import ENTRY_ROW, names, written
from xcsh_store.index.model.facts import SkippedLines
from xcsh_store.index.usage_ranks import settle_ranks
from xcsh_store.index.write.build import Chunk
from xcsh_store.index.write.scan import KnownFile, SeenFile, SyncReport
from xcsh_store.index.write.stale_search import leave_behind
from xcsh_store.index.write.summaries import note_pending
from xcsh_store.times import iso_now

COMMIT_EVERY_VALUES = 20_000
COMMIT_EVERY_BYTES = 16 << 20

# A session row as a sync writes it (model/columns.py): the columns of its file, of its header
# (written once), its figures (at every read); its file's own title is its first title.
_FROM_FILE, _HEADER, _FIGURES = written("file"), written("header"), written("figures")
_INSERTED = (*_FROM_FILE, *_HEADER, *_FIGURES, "file_title", "file_title_source")
_INSERT_SESSION = (
    f"INSERT INTO sessions ({', '.join(_INSERTED)}) VALUES ({', '.join('?' * len(_INSERTED))})"
)
# The figures of a file read again, and what its reader learnt of its session (each set once).
# (SET reads the row as it was: the title falls back on the file's own.)
_NAME, _SOURCE = len(_FIGURES) + 1, len(_FIGURES) + 2
_UPDATE_SESSION = (
    "UPDATE sessions SET"
    f" {', '.join(f'{column} = ?{number}' for number, column in enumerate(_FIGURES, 1))},"
    f" file_title = coalesce(?{_NAME}, file_title),"
    f" file_title_source = iif(?{_NAME} IS NULL, file_title_source, ?{_SOURCE}),"
    f" title = coalesce(?{_NAME}, file_title),"
    f" title_source = iif(?{_NAME} IS NULL, file_title_source, ?{_SOURCE}),"
    f" cwd = coalesce(cwd, ?{_SOURCE + 1}), created_at = coalesce(created_at, ?{_SOURCE + 2}),"
    f" parent_session_id = coalesce(parent_session_id, ?{_SOURCE + 3})"
    f" WHERE file_id = ?{_SOURCE + 4}"
)
# An entry row as build.py makes it: the entries columns (model/columns.py) in their order, but
# these last (its usage and how its cost is known stay side by side, and the chain, last, is
# the row's key or an earlier one's); the statement adds the key and the file id in front.
_ENTRY_LAST = ("usage_key", "prompt_hash", "chain")
_ENTRY_WRITTEN = (
    *(column for column in names(ENTRY_ROW) if column not in _ENTRY_LAST),
    *_ENTRY_LAST,
)
_ENTRY_COLUMNS = ", ".join(_ENTRY_WRITTEN)


# A later line of the same model response counts its usage instead (build.py usage keys).
_DROP_USAGE = (
    "UPDATE entries SET input_tokens = NULL, output_tokens = NULL, cache_read_tokens = NULL,"
    " cache_write_tokens = NULL, premium_requests = NULL, cost = NULL, cost_estimated = NULL,"
    " list_cost = NULL WHERE pk = ?"
)


class WriteBatch:
    """One write transaction shared by many small files, committed every few MB.

    A file whose rows come in more than one chunk is written inside a savepoint, so a failure
    undoes that file alone; a big file commits part-way (always on a line boundary, with its
    offset) to keep transactions bounded. A file of one chunk needs no savepoint (its rows are
    all there before the first is written), and takes none: FTS5 writes out its pending terms
    at every savepoint, which made thousands of small segments for it to merge.

    The search rows wait here and go into entries_fts together, just before the commit: applying
    the chunks of 200 MB of sessions took a fifth less CPU so (2.6-3.3 s against 3.5-3.8 s in
    turns), the entries' b-trees and FTS5's term hash no longer pushing each other out of the
    caches.
    """

    def __init__(self, connection: apsw.Connection) -> None:
        self.connection = connection
        self.values = 0
        self.bytes = 0
        # (statement, rows) of search rows not yet written, in key order.
        self.texts: list[tuple[str, list[tuple[int, str]]]] = []
        # The archive's writer: its bytes reach the disk before each commit records them.
        self.keeper: Keeper | None = None

    def begin(self) -> None:
        if self.connection.in_transaction:
            return
        self.connection.execute("BEGIN IMMEDIATE")

    def added(self, values: int, size: int) -> None:
        self.values += values
        self.bytes += size

    @property
    def full(self) -> bool:
        return self.values >= COMMIT_EVERY_VALUES or self.bytes >= COMMIT_EVERY_BYTES

    def add_texts(self, statement: str, rows: list[tuple[int, str]]) -> None:
        if rows:
            self.texts.append((statement, rows))

    def write_texts(self) -> None:
        """Write the search rows waiting (before anything reads or deletes some of them)."""
        for statement, rows in self.texts:
            self.connection.executemany(statement, rows)
        self.texts = []

    def commit(self) -> None:
        if self.connection.in_transaction:
            self.write_texts()
            note_pending(self.connection)
            settle_ranks(self.connection)
            if self.keeper is not None:
                self.keeper.sync()
            self.connection.execute("COMMIT")
            if self.keeper is not None:
                self.keeper.committed()
        self.values = self.bytes = 0

    def rollback(self) -> None:
        """Give up everything since the last commit."""
        self.texts = []
        if self.connection.in_transaction:
            self.connection.execute("ROLLBACK")
        if self.keeper is not None:
            self.keeper.rolled_back()
        self.values = self.bytes = 0

    def begin_file(self) -> None:
        self.begin()
        # What waits now is earlier files': undoing this one must not lose it.
        self.write_texts()
        self.connection.execute("SAVEPOINT file")

    def end_file(self) -> None:
        self.connection.execute("RELEASE file")

    def undo_file(self) -> None:
        """Undo the file's writes since its savepoint (or since the last commit within it)."""
        self.texts = []  # only the file's own (see begin_file)
        if self.connection.in_transaction:
            self.connection.execute("ROLLBACK TO file")
            self.connection.execute("RELEASE file")
            if self.keeper is not None:
                self.keeper.undone()

    def commit_within_file(self) -> None:
        """Commit now, in the middle of a file, and carry on in a new savepoint."""
        self.end_file()
        self.commit()
        self.begin_file()


class KeyCounter:
    """Entry keys after the highest in use, looked up when first needed."""

    def __init__(self, connection: apsw.Connection) -> None:
        self.connection = connection
        self._next: int | None = None

    def peek(self) -> int:
        """The next key to hand out."""
        if self._next is None:
            self._next = max_pk(self.connection) + 1
        return self._next

    def advance(self, count: int) -> None:
        self._next = self.peek() + count


def pk_counter(connection: apsw.Connection) -> KeyCounter:
    return KeyCounter(connection)


class FileWriter:
    """What the writes of a sync's files share: the connection, its write batch, the entry
    keys, the report; the read stage (stages/read.py: ``FileIndexer``) hands each file's
    chunks to a ``FileWrite`` of it."""

    def __init__(
        self,
        connection: apsw.Connection,
        keys: KeyCounter,
        report: SyncReport,
        with_text: bool = True,
        keeper: Keeper | None = None,
    ) -> None:
        self.connection = connection
        self.keys = keys
        self.report = report
        self.batch = WriteBatch(connection)
        # False: files read whole get no search rows yet, and are marked text_pending
        # (text_later.py); appends always get theirs.
        self.with_text = with_text
        self.keeper = self.batch.keeper = keeper
        # The revision of each agent's reader, recorded with the rows it makes (migration 0016).
        self.revisions = reader_revisions()


class FileWrite:
    """The writes of one read of one file, chunk by chunk.

    Keys of the chunks count from ``first_key``; the rows get the keys the counter hands out
    when the first chunk arrives, so that they are the same whichever process built them.
    The file row, and the removal of the rows of an earlier read, wait for that first chunk
    too: a file that cannot be read writes nothing.
    """

    def __init__(
        self,
        indexer: FileWriter,
        seen: SeenFile,
        known: KnownFile | None,
        fresh: bool,
        first_key: int,
    ) -> None:
        self.indexer = indexer
        self.connection = indexer.connection
        self.batch = indexer.batch
        self.report = indexer.report
        self.seen = seen
        self.known = known
        self.fresh = fresh
        self.first_key = first_key
        self.keys_end = first_key
        self.file_id: int | None = None
        self.in_savepoint = False
        # Whether rows already written (by an earlier read, or chunk) may hold chains.
        self.chains_written = fresh or (known is not None and known.chained)
        self.statements: tuple[str, str, str] = ("", "", "")
        self.offset = 0
        # A whole read without search text leaves the file's text pending (text_later.py).
        self.text_pending = fresh and not indexer.with_text
        # Where its lines are read again (branch names): the file, or its archive's copy.
        self.read_path = seen.path

    def apply(self, chunk: Chunk) -> bool:
        """Write one chunk; True when it replaced rows of earlier reads (found in the index)."""
        if self.file_id is None:
            self._start(chunk.final)
        assert self.file_id is not None
        keeper = self.indexer.keeper
        if chunk.archived is not None and keeper is not None:
            # Before the rows: the archive records what the rows are made of.
            keeper.append(self.file_id, place(self.seen), *chunk.archived)
        connection = self.connection
        offset = self.offset
        replaced = [key + offset for key in chunk.replaced]
        found = chunk.look_up_ids and self._indexed_duplicates(chunk.entries, replaced)
        self._delete(replaced)
        if chunk.superseded:
            connection.executemany(_DROP_USAGE, [(key + offset,) for key in chunk.superseded])
        if chunk.leaf_summaries:
            connection.executemany(
                "INSERT INTO leaf_summaries (file_id, seq, leaf_id, summary) VALUES (?, ?, ?, ?)",
                [(self.file_id, *summary) for summary in chunk.leaf_summaries],
            )
        if chunk.quotas:
            connection.executemany(
                "INSERT OR REPLACE INTO quota_observations (file_id, seq, slot, observed_at,"
                " used_percent, window_minutes, resets_at, limit_id, plan_type)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(self.file_id, *reading) for reading in chunk.quotas],
            )
        rows = chunk.entries
        if not (chunk.chained and not found):
            if self.chains_written:
                # An unchained file has no chains, whenever it lost them.
                connection.execute(
                    "UPDATE entries SET chain = NULL WHERE session = ? AND chain IS NOT NULL",
                    (self.file_id,),
                )
                self.chains_written = False
            if chunk.chained:
                rows = [row if row[-1] is None else (*row[:-1], None) for row in rows]
        if rows:
            entry_sql, text_sql, blob_sql = self.statements
            connection.executemany(entry_sql, rows)
            self.batch.add_texts(text_sql, chunk.texts)
            connection.executemany(blob_sql, chunk.blobs)
            self.report.entries_added += len(rows)
        self._write_session(chunk)
        self._write_file_row(chunk, chunk.chained and not found)
        self.batch.added(len(rows), chunk.source_bytes)
        self._count_read(chunk)
        self.keys_end = chunk.keys_end
        if chunk.final:
            if self.fresh:
                forget_usage_lines(connection, self.file_id)
            if chunk.progress[-1] in XCSH_AGENTS:
                self._rename_by_branch()
            self._finish()
        elif self.batch.full:
            self.batch.commit_within_file()
        return found

    def abandon(self) -> None:
        """The read failed: undo what the file wrote since its savepoint or last commit."""
        if self.in_savepoint:
            self.batch.undo_file()
        # Keys of rows that were committed stay taken.
        self.indexer.keys.advance(self.keys_end - self.first_key)

    def _start(self, final: bool) -> None:
        if final:
            self.batch.begin()
        else:
            self.batch.begin_file()
            self.in_savepoint = True
        self.file_id = self._file_row()
        if self.fresh:
            if self.known is not None:
                # (A file's usage-first rows count until its last rows are written.)
                self.report.entries_removed += drop_file_rows(
                    self.connection, self.file_id, usage_lines=False
                )
            self.report.files_reindexed += 1
        # The keys and the file id go into the statements as numbers: the rows stay as the
        # builder made them (rebuilding each one would cost the writer more than preparing
        # three statements per file).
        offset = self.offset = self.indexer.keys.peek() - self.first_key
        key = f"?+{offset}"
        marks = ",".join("?" * (len(_ENTRY_WRITTEN) - 3))  # but the key, the file, the chain
        self.statements = (
            f"INSERT INTO entries ({_ENTRY_COLUMNS}) VALUES ({key},{self.file_id},{marks},{key})",
            f"INSERT INTO entries_fts (rowid, text) VALUES ({key}, ?)",
            f"INSERT OR IGNORE INTO blob_refs (entry, hash) VALUES ({key}, ?)",
        )

    def _rename_by_branch(self) -> None:
        """An oh-my-pi ``title_change`` on the branch of the session's last entry names it
        (D28), over the file's own title; whenever the file has one, the branch is walked
        again (a later line may have moved the leaf off it, or onto another)."""
        # (Imported here: a sync that meets no title_change, or no read resumed past a model,
        # never pays for the tree walks.)
        from xcsh_store.index.model.paths import branch_name_of

        assert self.file_id is not None  # _start gave the file its row

        connection = self.connection
        renamed = list(
            connection.execute(
                "SELECT s.last_entry_id FROM sessions AS s WHERE s.file_id = ?1 AND EXISTS"
                " (SELECT 1 FROM entries WHERE session = ?1 AND type = 'title_change')",
                (self.file_id,),
            )
        )
        if not renamed or renamed[0][0] is None:
            return
        named = branch_name_of(connection, self.file_id, self.read_path, renamed[0][0])
        if named is not None:
            connection.execute(
                "UPDATE sessions SET title = ?, title_source = ? WHERE file_id = ?",
                (*named, self.file_id),
            )

    def _finish(self) -> None:
        if self.in_savepoint:
            self.batch.end_file()
            self.in_savepoint = False
        self.indexer.keys.advance(self.keys_end - self.first_key)
        self.report.files_changed += 1

    def _file_row(self) -> int:
        if self.known is not None:
            return self.known.id
        seen = self.seen
        self.connection.execute(
            "INSERT INTO files (path, root, project_dir, size, mtime_ns, inode, status)"
            " VALUES (?, ?, ?, -1, 0, ?, 'ok')",
            (seen.path, seen.root, seen.project_dir, seen.inode),
        )
        # A file forgotten on purpose that its agent wrote to again is a new session.
        self.connection.execute("DELETE FROM forgotten WHERE path = ?", (seen.path,))
        return self.connection.last_insert_rowid()

    def _indexed_duplicates(self, rows: list[tuple[Any, ...]], replaced: list[int]) -> bool:
        """An id already in the index for this file: the later line wins, like the reference.
        Adds the keys of those rows to ``replaced``; True when there were any."""
        ids = [row[2] for row in rows if row[2] is not None]
        before = len(replaced)
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            marks = ",".join("?" * len(part))
            replaced += [
                pk
                for (pk,) in self.connection.execute(
                    f"SELECT pk FROM entries WHERE session = ? AND id IN ({marks})",
                    (self.file_id, *part),
                )
            ]
        return len(replaced) > before

    def _delete(self, keys: list[int]) -> None:
        if not keys:
            return
        self.batch.write_texts()  # a row replaced may be one still waiting
        connection = self.connection
        leave_behind(connection, "SELECT value FROM json_each(?)", (orjson.dumps(keys).decode(),))
        for pk in keys:
            connection.execute("DELETE FROM blob_refs WHERE entry = ?", (pk,))
            connection.execute("DELETE FROM entries WHERE pk = ?", (pk,))
        self.report.entries_removed += len(keys)

    def _write_session(self, chunk: Chunk) -> None:
        if chunk.session is None:
            return
        header, figures, name, name_source, learnt = chunk.session
        counted = [figures[column] for column in _FIGURES]
        if header is None:
            self.connection.execute(
                _UPDATE_SESSION, (*counted, name, name_source, *learnt, self.file_id)
            )
            return
        from_file = {
            "file_id": self.file_id,
            "path": self.seen.path,
            "project_dir": self.seen.project_dir,
        }
        self.connection.execute(
            _INSERT_SESSION,
            (
                *(from_file[column] for column in _FROM_FILE),
                *(header[column] for column in _HEADER),
                *counted,
                header["title"],
                header["title_source"],
            ),
        )

    def _write_file_row(self, chunk: Chunk, chained: bool) -> None:
        seen = self.seen
        (indexed_bytes, head_hash, tail_hash, status, next_seq, last_id, legacy, lines,
         skipped_count, skipped_lines, agent) = chunk.progress  # fmt: skip
        # Until the last commit of this read, size -1 makes the next sync carry on from here.
        size = seen.size if chunk.final else -1
        self.connection.execute(
            "UPDATE files SET size = ?, mtime_ns = ?, inode = ?, ctime_ns = ?, indexed_bytes = ?,"
            " head_hash = ?,"
            " tail_hash = ?, status = ?, error = NULL, indexed_at = ?, next_seq = ?, last_id = ?,"
            " legacy = ?, chained = ?, root = ?, project_dir = ?, lines = ?, skipped_count = ?,"
            " skipped_lines = ?, agent = ?, text_pending = iif(?, ?, text_pending), gone_at = NULL,"
            " reader_revision = ? WHERE id = ?",
            (
                size, seen.mtime_ns, seen.inode, seen.ctime_ns, indexed_bytes, head_hash,
                tail_hash, status, iso_now(), next_seq, last_id, legacy, int(chained),
                seen.root, seen.project_dir, lines, skipped_count, skipped_lines, agent,
                int(self.fresh), int(self.text_pending),
                self.indexer.revisions.get(agent, 1), self.file_id,
            ),
        )  # fmt: skip

    def _count_read(self, chunk: Chunk) -> None:
        report = self.report
        report.bytes_read += chunk.bytes_read
        if chunk.skipped:
            found = report.skipped_lines.setdefault(self.seen.path, SkippedLines())
            for number in chunk.skipped:
                found.add(number)


def place(seen: SeenFile) -> Place:
    """Where a file the scan found is, as the archive names it."""
    return Place(seen.path, seen.root, seen.project_dir)


def drop_file_rows(connection: apsw.Connection, file_id: int, usage_lines: bool = True) -> int:
    """Delete every row derived from a file's content; returns how many entries went.
    ``usage_lines`` false: the rows of a usage-first read stay (a whole read that replaces them
    deletes them with its last rows: entries_later.py)."""
    ((removed,),) = connection.execute("SELECT count(*) FROM entries WHERE session = ?", (file_id,))
    connection.execute(
        "DELETE FROM blob_refs WHERE entry IN (SELECT pk FROM entries WHERE session = ?)",
        (file_id,),
    )
    leave_behind(connection, "SELECT pk FROM entries WHERE session = ?", (file_id,))
    connection.execute("DELETE FROM entries WHERE session = ?", (file_id,))
    connection.execute("DELETE FROM leaf_summaries WHERE file_id = ?", (file_id,))
    connection.execute("DELETE FROM quota_observations WHERE file_id = ?", (file_id,))
    connection.execute("DELETE FROM sessions WHERE file_id = ?", (file_id,))
    if usage_lines:
        forget_usage_lines(connection, file_id)
    note_pending(connection)
    # size -1: until the file is read again, no sync may take it for unchanged (a sync killed
    # right after this transaction would otherwise leave the file without rows for good).
    connection.execute(
        "UPDATE files SET indexed_bytes = 0, next_seq = 0, last_id = NULL, legacy = 0, chained = 0,"
        " head_hash = NULL, tail_hash = NULL, size = -1 WHERE id = ?",
        (file_id,),
    )
    return removed


def forget_usage_lines(connection: apsw.Connection, file_id: int) -> None:
    """The rows a usage-first read wrote for a file (migration 0018), and its mark."""
    connection.execute("DELETE FROM usage_lines WHERE session = ?", (file_id,))
    connection.execute("DELETE FROM usage_sessions WHERE file_id = ?", (file_id,))
    connection.execute(
        "UPDATE files SET entries_pending = 0 WHERE id = ? AND entries_pending = 1", (file_id,)
    )


def max_pk(connection: apsw.Connection) -> int:
    """The highest entry key in use, counting search rows: the stale rows of entries that are
    gone (stale_search.py) keep their keys until they are deleted."""
    # ORDER BY rowid DESC LIMIT 1 is answered by FTS5 itself; max(rowid) would scan the table.
    return connection.execute(
        "SELECT max((SELECT coalesce(max(pk), 0) FROM entries),"
        " coalesce((SELECT rowid FROM entries_fts ORDER BY rowid DESC LIMIT 1), 0))"
    ).get
