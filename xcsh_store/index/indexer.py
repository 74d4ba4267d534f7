"""Reading one session file into index rows, from a byte offset, in bounded transactions."""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO

import apsw
import orjson

from xcsh_store.errors import EntryNotFoundError
from xcsh_store.files import open_regular_file
from xcsh_store.format.entries import (
    NAMED_TITLE_SOURCE,
    SESSION_INFO_TYPE,
    content_text,
    session_info_name,
    sets_default_model,
)
from xcsh_store.format.jsonl import BOM, iter_lines, parse_line
from xcsh_store.format.versions import (
    HEADER_TYPE,
    KNOWN_ENTRY_TYPES,
    TITLE_TYPE,
    IdFactory,
    migrate_session_entries,
    session_version,
    synthetic_ids_for,
)
from xcsh_store.index.rows import (
    SURROGATE_ESCAPE,
    EntryFacts,
    blob_refs_in,
    replace_lone_surrogates,
)
from xcsh_store.index.scan import (
    KnownFile,
    SeenFile,
    SkippedLines,
    SyncReport,
    sha1_hex,
)
from xcsh_store.js import stringify
from xcsh_store.times import iso_millis, iso_now

HEAD_BYTES = 1024
TAIL_BYTES = 4096
COMMIT_EVERY_VALUES = 20_000
COMMIT_EVERY_BYTES = 16 << 20


@dataclass
class _Totals:
    """Per-session figures kept up to date as lines are added."""

    entry_count: int = 0
    message_count: int = 0
    first_message: str | None = None
    last_entry_id: str | None = None
    usage: list[int | float] = field(default_factory=lambda: [0, 0, 0, 0, 0, 0])
    compaction_title: str | None = None
    # The name of the newest session_info entry read this time (compatibility: pi's session_info
    # names the session); not kept on resume, as the sessions row already holds the names read
    # before.
    session_name: str | None = None


# (provider, model) as the index columns hold them.
_Model = tuple[str | None, str | None]
# The default model after an entry: (the model, whether a model_change set it); a callable
# when it must be looked up in the index and no one has needed it yet.
_Default = tuple[_Model | None, bool]
_NO_DEFAULT: _Default = (None, False)


class _DefaultModels:
    """The default model in effect after each entry of one read, so that an assistant message
    naming no model is counted under the model its session was using (compatibility: Assistant
    rows inherit the default model).

    Parents from an earlier read are looked up in the index, and only when an assistant
    message needs them: appending to a session costs nothing while its messages name models.
    """

    def __init__(self, lookup: Callable[[str], _Default] | None) -> None:
        self.after: dict[str, _Default | Callable[[], _Default]] = {}
        self.lookup = lookup

    def add(self, facts: EntryFacts, value: dict[str, Any]) -> _Model | None:
        """Record the entry; returns the model an unnamed assistant message inherits."""
        parent = self._at(facts.parent_id)
        inherited = None
        if facts.type == "model_change":
            if sets_default_model(value):
                parent = ((facts.provider, facts.model), True)
        elif facts.role == "assistant":
            if facts.provider and facts.model:
                parent = _named_after(parent, (facts.provider, facts.model))
            else:
                parent = _resolved(parent)
                inherited = parent[0]
        if facts.id is not None:
            self.after[facts.id] = parent
        return inherited

    def _at(self, parent_id: str | None) -> _Default | Callable[[], _Default]:
        if parent_id is None:
            return _NO_DEFAULT
        found = self.after.get(parent_id)
        if found is not None:
            return found
        lookup = self.lookup
        if lookup is None:
            return _NO_DEFAULT
        return functools.cache(lambda: lookup(parent_id))


def _resolved(default: _Default | Callable[[], _Default]) -> _Default:
    return default() if callable(default) else default


def _named_after(
    parent: _Default | Callable[[], _Default], model: _Model
) -> _Default | Callable[[], _Default]:
    """After a named assistant message: its model, unless a model_change set one (compatibility:
    Explicit model changes win)."""
    if callable(parent):
        pending = parent
        return functools.cache(lambda: _resolved(_named_after(pending(), model)))
    return parent if parent[1] else (model, False)


_ENTRY_INSERT = (
    "INSERT INTO entries (pk, session, seq, id, parent_id, type, timestamp, role, provider,"
    " model, tool_name, custom_type, offset, length, part, input_tokens, output_tokens,"
    " cache_read_tokens, cache_write_tokens, premium_requests, cost, prompt_hash, chain)"
    " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
)


class WriteBatch:
    """One write transaction shared by many small files, committed every few MB.

    Each file is written inside a savepoint, so a failure undoes that file alone; a big file
    commits part-way (always on a line boundary, with its offset) to keep transactions bounded.
    """

    def __init__(self, connection: apsw.Connection) -> None:
        self.connection = connection
        self.values = 0
        self.bytes = 0

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

    def commit(self) -> None:
        if self.connection.in_transaction:
            self.connection.execute("COMMIT")
        self.values = self.bytes = 0

    @contextlib.contextmanager
    def file(self) -> Iterator[None]:
        """The work on one file: all of it, or (on an error) none of it since the last commit."""
        self.begin()
        self.connection.execute("SAVEPOINT file")
        try:
            yield
        except BaseException:
            if self.connection.in_transaction:
                self.connection.execute("ROLLBACK TO file")
                self.connection.execute("RELEASE file")
            raise
        self.connection.execute("RELEASE file")

    def commit_within_file(self) -> None:
        """Commit now, in the middle of a file, and carry on in a new savepoint."""
        self.connection.execute("RELEASE file")
        self.commit()
        self.begin()
        self.connection.execute("SAVEPOINT file")


class FileIndexer:
    """Indexes one file from a byte offset; commits always end on a line boundary."""

    def __init__(
        self,
        connection: apsw.Connection,
        next_pk: Callable[[], int],
        report: SyncReport,
    ) -> None:
        self.connection = connection
        self.next_pk = next_pk
        self.report = report
        self.batch = WriteBatch(connection)

    # -- entry point ------------------------------------------------------------------------

    def index(self, seen: SeenFile, known: KnownFile | None, full: bool) -> None:
        """Index one file within the current batch (the caller commits the batch)."""
        with open_regular_file(seen.path) as stream, self.batch.file():
            info = os.fstat(stream.fileno())
            seen.size, seen.mtime_ns, seen.inode = info.st_size, info.st_mtime_ns, info.st_ino
            seen.ctime_ns = info.st_ctime_ns
            self.report.read_paths.append(seen.path)
            file_id = self._file_row(seen, known)
            resume = None if full or known is None else self._resume_point(stream, known)
            if resume is None:
                if known is not None:
                    self.report.entries_removed += drop_file_rows(self.connection, file_id)
                self.report.files_reindexed += 1
                self._index_from_start(stream, seen, file_id)
            else:
                self._index_from(stream, seen, file_id, known, resume)
        self.report.files_changed += 1

    def _file_row(self, seen: SeenFile, known: KnownFile | None) -> int:
        if known is not None:
            return known.id
        self.connection.execute(
            "INSERT INTO files (path, root, project_dir, size, mtime_ns, inode, status)"
            " VALUES (?, ?, ?, -1, 0, ?, 'ok')",
            (seen.path, seen.root, seen.project_dir, seen.inode),
        )
        return self.connection.last_insert_rowid()

    def _resume_point(self, stream: BinaryIO, known: KnownFile) -> tuple[bytes, bytes] | None:
        """The bytes around the old end when the file only grew; None when it must be re-read."""
        if known.legacy or known.status != "ok" or known.indexed_bytes == 0:
            return None
        size = os.fstat(stream.fileno()).st_size
        if size < known.indexed_bytes or size == known.size:
            # Shorter, or changed without growing: an edit in place, perhaps in the middle,
            # where neither hash looks.
            return None
        windows = indexed_windows(stream, known, self.report)
        if windows is None:
            return None
        head, tail = windows
        if not tail.endswith(b"\n"):
            # The last indexed line had no newline: what follows now continues that very line
            # (old appends glued objects that way), so the line must be parsed again whole.
            return None
        return head, tail

    # -- reading ----------------------------------------------------------------------------

    def _index_from_start(self, stream: BinaryIO, seen: SeenFile, file_id: int) -> None:
        records = _complete_records(stream, 0, self.report)
        leading, header = _read_until_header(records)
        state = _SessionState.new(seen.path)
        if _read_at(stream, 0, len(BOM)) == BOM:
            state.head = state.tail = BOM  # the hashes cover the raw bytes, BOM included
        state.version = session_version(header) if header is not None else None
        if state.version is not None and state.version < 3:
            # v1/v2: migrate the whole file in memory (deterministic ids), then index it.
            everything = leading + list(records)
            values = [value for record in everything for value in record.values]
            migrate_session_entries(values, synthetic_ids_for(seen.path))
            state.legacy = True
            records = iter(everything)
        else:
            records = itertools.chain(leading, records)
        writer = _RowWriter(self, file_id, seen, state)
        writer.add_records(records)
        writer.finish()

    def _index_from(
        self,
        stream: BinaryIO,
        seen: SeenFile,
        file_id: int,
        known: KnownFile,
        resume: tuple[bytes, bytes],
    ) -> None:
        state = _SessionState.resume(self.connection, file_id, known, seen.path, *resume)
        writer = _RowWriter(self, file_id, seen, state)
        writer.add_records(_complete_records(stream, known.indexed_bytes, self.report))
        writer.finish()


def drop_file_rows(connection: apsw.Connection, file_id: int) -> int:
    """Delete every row derived from a file's content; returns how many entries went."""
    count = connection.execute("SELECT count(*) FROM entries WHERE session = ?", (file_id,))
    removed = count.fetchall()[0][0]
    connection.execute(
        "DELETE FROM blob_refs WHERE entry IN (SELECT pk FROM entries WHERE session = ?)",
        (file_id,),
    )
    connection.execute(
        "DELETE FROM entries_fts WHERE rowid IN (SELECT pk FROM entries WHERE session = ?)",
        (file_id,),
    )
    connection.execute("DELETE FROM entries WHERE session = ?", (file_id,))
    connection.execute("DELETE FROM sessions WHERE file_id = ?", (file_id,))
    # size -1: until the file is read again, no sync may take it for unchanged (a sync killed
    # right after this transaction would otherwise leave the file without rows for good).
    connection.execute(
        "UPDATE files SET indexed_bytes = 0, next_seq = 0, last_id = NULL, legacy = 0, chained = 0,"
        " head_hash = NULL, tail_hash = NULL, size = -1 WHERE id = ?",
        (file_id,),
    )
    return removed


def indexed_windows(
    stream: BinaryIO, known: KnownFile, report: SyncReport
) -> tuple[bytes, bytes] | None:
    """The first and last bytes of what was indexed of ``known``, read from ``stream``, when
    they still hash as they did; None when the file no longer starts with what was indexed."""
    head = _read_at(stream, 0, min(HEAD_BYTES, known.indexed_bytes))
    tail_start = max(0, known.indexed_bytes - TAIL_BYTES)
    tail = _read_at(stream, tail_start, known.indexed_bytes - tail_start)
    report.bytes_read += len(head) + len(tail)
    if sha1_hex(head) != known.head_hash or sha1_hex(tail) != known.tail_hash:
        return None
    return head, tail


def _read_at(stream: BinaryIO, offset: int, size: int) -> bytes:
    return os.pread(stream.fileno(), size, offset) if size > 0 else b""


@dataclass(slots=True)
class _Record:
    offset: int
    data: bytes
    values: list[dict[str, Any]]


def _complete_records(stream: BinaryIO, start: int, report: SyncReport) -> Iterator[_Record]:
    """Lines from ``start`` that are complete: newline-terminated, or a last line that parses.

    A line still being written (cut JSON without its newline) is left for a later sync.
    """
    for offset, line in iter_lines(stream, start):
        report.bytes_read += len(line)
        if not line.endswith(b"\n"):
            try:
                orjson.loads(line)
            except orjson.JSONDecodeError:
                return
        values = [] if line.isspace() else parse_line(line)
        if b"\\u" in line and SURROGATE_ESCAPE.search(line):
            # \ud800-style escapes decode to lone surrogates, which SQLite cannot store.
            values = [replace_lone_surrogates(value) for value in values]
        yield _Record(offset, line, values)


def _read_until_header(
    records: Iterator[_Record],
) -> tuple[list[_Record], dict[str, Any] | None]:
    """The records up to the one that decides validity, and the header if it is one."""
    leading: list[_Record] = []
    for record in records:
        leading.append(record)
        for value in record.values:
            if value.get("type") == TITLE_TYPE:
                continue
            return leading, value if value.get("type") == HEADER_TYPE else None
    return leading, None


@dataclass
class _SessionState:
    """Where the parse of a file stands: header status, seq, last id, totals, edge bytes."""

    path: str
    indexed_bytes: int = 0
    next_seq: int = 0
    version: int | None = None
    status: str | None = None
    leading_title: dict[str, Any] | None = None
    last_id: str | None = None
    legacy: bool = False
    totals: _Totals = field(default_factory=_Totals)
    head: bytes = b""
    tail: bytes = b""
    ids: IdFactory | None = None
    fresh: bool = True
    # Whether every entry so far has a trustworthy chain (migration 0002).
    chained: bool = True
    # Lines read so far, and those of them that held no object (migration 0004).
    lines: int = 0
    skipped: SkippedLines = field(default_factory=SkippedLines)

    @classmethod
    def new(cls, path: str) -> _SessionState:
        return cls(path, ids=synthetic_ids_for(path))

    @classmethod
    def resume(
        cls,
        connection: apsw.Connection,
        file_id: int,
        known: KnownFile,
        path: str,
        head: bytes,
        tail: bytes,
    ) -> _SessionState:
        state = cls(
            path,
            indexed_bytes=known.indexed_bytes,
            next_seq=known.next_seq,
            status=known.status,
            last_id=known.last_id,
            head=head,
            tail=tail,
            ids=synthetic_ids_for(path),
            fresh=False,
            chained=known.chained,
        )
        row = connection.execute(
            "SELECT entry_count, message_count, first_message, last_entry_id, input_tokens,"
            " output_tokens, cache_read_tokens, cache_write_tokens, premium_requests, cost,"
            " compaction_title FROM sessions WHERE file_id = ?",
            (file_id,),
        ).fetchall()
        if row:
            values = row[0]
            state.totals = _Totals(
                values[0], values[1], values[2], values[3], list(values[4:10]), values[10]
            )
        ((lines, skipped_count, skipped_lines),) = connection.execute(
            "SELECT lines, skipped_count, skipped_lines FROM files WHERE id = ?", (file_id,)
        ).fetchall()
        state.lines = lines
        state.skipped = SkippedLines(skipped_count, orjson.loads(skipped_lines or "[]"))
        return state


class _RowWriter:
    """Turns records into rows and commits them in bounded transactions."""

    def __init__(
        self, indexer: FileIndexer, file_id: int, seen: SeenFile, state: _SessionState
    ) -> None:
        self.indexer = indexer
        self.connection = indexer.connection
        self.file_id = file_id
        self.seen = seen
        self.state = state
        self.indexed_bytes = state.indexed_bytes
        self.entry_rows: list[tuple[Any, ...]] = []
        self.text_rows: list[tuple[int, str]] = []
        self.blob_rows: list[tuple[int, str]] = []
        self.batch_ids: dict[str, int] = {}
        self.run_ids: set[str] = set()
        self.pending_bytes = 0
        self.header_row: dict[str, Any] | None = None
        self.recent = [state.tail]
        # Chains (migration 0002): entries of this read that have no child yet, with their
        # chain; entries from earlier reads that got their first child in this one; parents
        # named but not seen so far.
        self.chain_tails: dict[str, int] = {}
        self.adopted: set[str] = set()
        self.missing_parents: set[str] = set()
        self.chains_written = state.chained
        self.defaults = _DefaultModels(None if state.fresh else self._indexed_default)

    def add_records(self, records: Any) -> None:
        state = self.state
        for record in records:
            state.lines += 1
            if not record.values and not record.data.isspace():
                self._skip(state.lines)
            for part, value in enumerate(record.values):
                line = record.data if len(record.values) == 1 else stringify(value)
                self._add_value(record, part, value, line)
            self.indexed_bytes = record.offset + len(record.data)
            self._keep_edges(record)
            self.pending_bytes += len(record.data)
            if (
                len(self.entry_rows) >= COMMIT_EVERY_VALUES
                or self.pending_bytes >= COMMIT_EVERY_BYTES
            ):
                self._flush(final=False)
                if self.indexer.batch.full:
                    self.indexer.batch.commit_within_file()

    def _skip(self, number: int) -> None:
        """A line that holds no object: every reader skips it; the index says where it is."""
        self.state.skipped.add(number)
        found = self.indexer.report.skipped_lines
        found.setdefault(self.seen.path, SkippedLines()).add(number)

    def _keep_edges(self, record: _Record) -> None:
        """Remember the first KiB and the records covering the last 4 KiB, for the hashes."""
        state = self.state
        if len(state.head) < HEAD_BYTES:
            state.head += record.data[: HEAD_BYTES - len(state.head)]
        recent = self.recent
        recent.append(record.data)
        if len(recent) > 64:
            self.recent = [b"".join(recent)[-TAIL_BYTES:]]

    def _add_value(self, record: _Record, part: int, value: dict[str, Any], line: bytes) -> None:
        state = self.state
        seq = state.next_seq
        state.next_seq += 1
        is_header_record = False
        kind = value.get("type")
        if state.status is None:
            if kind == TITLE_TYPE:
                is_header_record = True
                state.leading_title = value
            else:
                valid = kind == HEADER_TYPE and isinstance(value.get("id"), str)
                state.status = "ok" if valid else "invalid_header"
                if valid:
                    is_header_record = True
                    self.header_row = value
        elif kind == HEADER_TYPE:
            is_header_record = True  # (compatibility: A second header is an opaque record)
        elif not state.legacy:
            self._repair_links(value, seq)
        facts = EntryFacts(value, is_header_record)
        if not is_header_record:
            inherited = self.defaults.add(facts, value)
            if inherited is not None:
                facts.provider, facts.model = inherited
            self._count(value, facts)
        pk = self.indexer.next_pk()
        usage = facts.usage or (None, None, None, None, None, None)
        chain = self._chain(facts.id, facts.parent_id, pk)
        self.entry_rows.append(
            (pk, self.file_id, seq, facts.id, facts.parent_id, facts.type, facts.timestamp,
             facts.role, facts.provider, facts.model, facts.tool_name, facts.custom_type,
             record.offset, len(record.data), part, *usage, facts.prompt_hash, chain)
        )  # fmt: skip
        if facts.id is not None:
            previous = self.batch_ids.get(facts.id)
            if previous is not None:
                self.state.chained = False
                self._forget(previous)
            self.batch_ids[facts.id] = len(self.entry_rows) - 1
        if facts.text:
            self.text_rows.append((pk, facts.text))
        for digest in blob_refs_in(line, value):
            self.blob_rows.append((pk, digest))

    def _chain(self, entry_id: str | None, parent_id: str | None, pk: int) -> int | None:
        """The chain of a new entry: its parent's when it is the parent's first child, else a
        new one (its own pk); a parent missing from the file makes the entry a root.

        An entry that some earlier line named as its parent, or that is its own parent, ends
        the file's chains: only a walk over the parent links follows such a file (compatibility:
        Cycles end every walk).
        """
        if entry_id is None or not self.state.chained:
            return None
        if entry_id == parent_id or self._awaited(entry_id):
            self.state.chained = False
            return None
        if parent_id is None:
            chain = pk
        elif parent_id in self.chain_tails:
            chain = self.chain_tails.pop(parent_id)
        else:
            chain = self._chain_below(parent_id, pk)
        self.chain_tails[entry_id] = chain
        return chain

    def _awaited(self, entry_id: str) -> bool:
        """Whether an entry read before names ``entry_id`` as its parent."""
        if entry_id in self.missing_parents:
            return True
        if self.state.fresh:
            return False
        found = self.connection.execute(
            "SELECT 1 FROM entries WHERE session = ? AND parent_id = ? LIMIT 1",
            (self.file_id, entry_id),
        )
        return bool(found.fetchall())

    def _chain_below(self, parent_id: str, pk: int) -> int:
        """The chain of a child of ``parent_id``, a parent that is not a chain tail of this read."""
        if parent_id in self.batch_ids or parent_id in self.run_ids or parent_id in self.adopted:
            return pk  # the parent already has a child
        found = [] if self.state.fresh else self._indexed_parent(parent_id)
        if not found:
            self.missing_parents.add(parent_id)
            return pk
        parent_chain, has_child = found[0]
        if has_child:
            return pk
        self.adopted.add(parent_id)
        return parent_chain

    def _indexed_parent(self, parent_id: str) -> list[tuple[int, int]]:
        """[(its chain, whether it has a child)] of a parent indexed by an earlier read."""
        return self.connection.execute(
            "SELECT chain, EXISTS (SELECT 1 FROM entries WHERE session = ?1 AND parent_id = ?2)"
            " FROM entries WHERE session = ?1 AND id = ?2",
            (self.file_id, parent_id),
        ).fetchall()

    def _indexed_default(self, entry_id: str) -> _Default:
        """The default model after an entry of an earlier read, from its path in the index:
        the newest model_change with role default, else the newest assistant's model.

        Only the part of the path read before the entry counts (each parent earlier in the
        file than its child), as when the whole file is read in one go.
        """
        from xcsh_store.index.tree import ChainPath, entry_path, read_entries  # tree imports us

        try:
            path = entry_path(self.connection, self.file_id, entry_id)
        except EntryNotFoundError:
            return _NO_DEFAULT
        # Chains exist only where every parent comes before its children.
        kinds = ("model_change", "message") if isinstance(path, ChainPath) else ()
        below = None
        assistant: _Default = _NO_DEFAULT
        for _, row in path.rows(types=kinds, newest_first=True):
            if below is not None and row.seq > below:
                break
            below = row.seq
            if row.type == "model_change":
                (change,) = read_entries(self.seen.path, [row], None)
                if sets_default_model(change):
                    return (row.provider, row.model), True
            elif (
                assistant is _NO_DEFAULT and row.role == "assistant" and row.provider and row.model
            ):
                assistant = (row.provider, row.model), False
        return assistant

    def _forget(self, row_index: int) -> None:
        """A later entry with the same id replaces an earlier one in the same batch."""
        pk = self.entry_rows[row_index][0]
        self.entry_rows[row_index] = None  # type: ignore[call-overload]
        self.text_rows = [row for row in self.text_rows if row[0] != pk]
        self.blob_rows = [row for row in self.blob_rows if row[0] != pk]

    def _repair_links(self, value: dict[str, Any], seq: int) -> None:
        """For v3 files: entries without ``id`` get one, without ``parentId`` a parent
        (compatibility: Entries without id or parentId)."""
        state = self.state
        if "id" not in value and value.get("type") in KNOWN_ENTRY_TYPES:
            value["id"] = state.ids((), seq)  # type: ignore[misc]
        if "id" not in value:
            return
        if "parentId" not in value:
            value["parentId"] = state.last_id
        state.last_id = value["id"] if isinstance(value["id"], str) else state.last_id

    def _count(self, value: dict[str, Any], facts: EntryFacts) -> None:
        totals = self.state.totals
        totals.entry_count += 1
        if facts.id is not None:
            totals.last_entry_id = facts.id
        if facts.usage is not None:
            totals.usage = [a + b for a, b in zip(totals.usage, facts.usage, strict=True)]
        kind = facts.type
        if kind == "message":
            message = value.get("message")
            if message:
                totals.message_count += 1
                if totals.first_message is None and facts.role == "user":
                    text = content_text(message.get("content")) if type(message) is dict else ""
                    if text:
                        totals.first_message = text
        elif kind == "compaction" and isinstance(value.get("shortSummary"), str):
            totals.compaction_title = value["shortSummary"]
        elif kind == SESSION_INFO_TYPE:
            totals.session_name = session_info_name(value) or totals.session_name

    # -- committing -------------------------------------------------------------------------

    def finish(self) -> None:
        self._flush(final=True)

    def _flush(self, final: bool) -> None:
        """Write the pending rows, the session figures and the file's offset (one batch)."""
        rows = [row for row in self.entry_rows if row is not None]
        if rows:
            self._replace_duplicates(rows)
            if not self.state.chained:
                rows = self._unchained(rows)
            self.connection.executemany(_ENTRY_INSERT, rows)
            self.connection.executemany(
                "INSERT INTO entries_fts (rowid, text) VALUES (?, ?)", self.text_rows
            )
            self.connection.executemany(
                "INSERT OR IGNORE INTO blob_refs (entry, hash) VALUES (?, ?)", self.blob_rows
            )
            self.indexer.report.entries_added += len(rows)
        self._write_session()
        self._write_file_row(final)
        self.indexer.batch.added(len(rows), self.pending_bytes)
        self.entry_rows, self.text_rows, self.blob_rows = [], [], []
        self.run_ids.update(self.batch_ids)
        self.batch_ids = {}
        self.pending_bytes = 0

    def _unchained(self, rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
        """The rows without chains, and the file's rows already written cleared of theirs: an
        unchained file has none, whenever it lost them."""
        if self.chains_written:
            self.connection.execute(
                "UPDATE entries SET chain = NULL WHERE session = ? AND chain IS NOT NULL",
                (self.file_id,),
            )
            self.chains_written = False
        return [row if row[-1] is None else (*row[:-1], None) for row in rows]

    def _replace_duplicates(self, rows: list[tuple[Any, ...]]) -> None:
        """An id already in the index for this file: the later line wins, like the reference."""
        ids = [row[3] for row in rows if row[3] is not None]
        if self.state.fresh:
            ids = [entry_id for entry_id in ids if entry_id in self.run_ids]
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            stale = self.connection.execute(
                f"SELECT pk FROM entries WHERE session = ? AND id IN ({marks})",
                (self.file_id, *chunk),
            ).fetchall()
            for (pk,) in stale:
                self.state.chained = False
                self.connection.execute("DELETE FROM blob_refs WHERE entry = ?", (pk,))
                self.connection.execute("DELETE FROM entries_fts WHERE rowid = ?", (pk,))
                self.connection.execute("DELETE FROM entries WHERE pk = ?", (pk,))
                self.indexer.report.entries_removed += 1

    def _write_session(self) -> None:
        state = self.state
        if state.status != "ok":
            return
        totals = state.totals
        figures = (
            totals.entry_count, totals.message_count, totals.first_message, totals.last_entry_id,
            *totals.usage, totals.compaction_title, iso_millis(self.seen.mtime_ns / 1e9),
        )  # fmt: skip
        header = self.header_row
        name = totals.session_name
        if header is None:
            self.connection.execute(
                "UPDATE sessions SET entry_count = ?, message_count = ?, first_message = ?,"
                " last_entry_id = ?, input_tokens = ?, output_tokens = ?, cache_read_tokens = ?,"
                " cache_write_tokens = ?, premium_requests = ?, cost = ?, compaction_title = ?,"
                " modified_at = ?, title = coalesce(?, title),"
                " title_source = coalesce(?, title_source) WHERE file_id = ?",
                (*figures, name, NAMED_TITLE_SOURCE if name else None, self.file_id),
            )
            return
        title, title_source = (
            (name, NAMED_TITLE_SOURCE) if name else _title_of(header, state.leading_title)
        )
        self.connection.execute(
            "INSERT INTO sessions (file_id, session_id, path, cwd, project_dir, title,"
            " title_source, parent_session, version, created_at, entry_count, message_count,"
            " first_message, last_entry_id, input_tokens, output_tokens, cache_read_tokens,"
            " cache_write_tokens, premium_requests, cost, compaction_title, modified_at)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                self.file_id, header["id"], self.seen.path, _text(header.get("cwd")),
                self.seen.project_dir, title, title_source, _text(header.get("parentSession")),
                state.version, _text(header.get("timestamp")), *figures,
            ),
        )  # fmt: skip
        self.header_row = None

    def _write_file_row(self, final: bool) -> None:
        state = self.state
        state.tail = b"".join(self.recent)[-TAIL_BYTES:]
        # Until the last commit of this read, size -1 makes the next sync carry on from here.
        size = self.seen.size if final else -1
        self.connection.execute(
            "UPDATE files SET size = ?, mtime_ns = ?, inode = ?, ctime_ns = ?, indexed_bytes = ?,"
            " head_hash = ?,"
            " tail_hash = ?, status = ?, error = NULL, indexed_at = ?, next_seq = ?, last_id = ?,"
            " legacy = ?, chained = ?, root = ?, project_dir = ?, lines = ?, skipped_count = ?,"
            " skipped_lines = ? WHERE id = ?",
            (
                size, self.seen.mtime_ns, self.seen.inode, self.seen.ctime_ns, self.indexed_bytes,
                sha1_hex(state.head[: min(HEAD_BYTES, self.indexed_bytes)]),
                sha1_hex(state.tail[-min(TAIL_BYTES, self.indexed_bytes) :]),
                state.status or "invalid_header", iso_now(), state.next_seq, state.last_id,
                int(state.legacy), int(state.chained), self.seen.root, self.seen.project_dir,
                state.lines, state.skipped.count,
                orjson.dumps(state.skipped.lines).decode() if state.skipped.count else None,
                self.file_id,
            ),
        )  # fmt: skip


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _title_of(
    header: dict[str, Any], leading_title: dict[str, Any] | None
) -> tuple[str | None, str | None]:
    """The header's title, else the title record's, with who set it (compatibility: Title
    records before the header)."""
    title = header.get("title")
    if isinstance(title, str) and title:
        return title, _text(header.get("titleSource"))
    if leading_title is not None:
        record_title = leading_title.get("title")
        if isinstance(record_title, str) and record_title:
            return record_title, _text(leading_title.get("source"))
    return None, None


def max_pk(connection: apsw.Connection) -> int:
    """The highest entry key in use, counting search rows (a damaged index may have orphans)."""
    # ORDER BY rowid DESC LIMIT 1 is answered by FTS5 itself; max(rowid) would scan the table.
    return connection.execute(
        "SELECT max((SELECT coalesce(max(pk), 0) FROM entries),"
        " coalesce((SELECT rowid FROM entries_fts ORDER BY rowid DESC LIMIT 1), 0))"
    ).fetchall()[0][0]


def pk_counter(connection: apsw.Connection) -> Callable[[], int]:
    """Entry keys after the highest in use, looked up on the first call."""
    current: int | None = None

    def next_pk() -> int:
        nonlocal current
        current = (max_pk(connection) if current is None else current) + 1
        return current

    return next_pk
