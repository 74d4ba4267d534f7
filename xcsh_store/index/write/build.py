"""Reading one session file into chunks of index rows, without touching the index: the work a
sync's worker processes do (and the writer itself, for appends and small syncs)."""

from __future__ import annotations

import functools
import itertools
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO, NamedTuple, Protocol

import orjson

from xcsh_store.agents import (
    Agent,
    QuotaReading,
    SessionFacts,
    read_entry,
    reader_for,
    reader_named,
    xcsh_agent_of,
)
from xcsh_store.agents import records as plugin_records
from xcsh_store.agents.prices.costs import NO_COST, settle
from xcsh_store.agents.prices.pricing import Request
from xcsh_store.format.entries import (
    NAMED_TITLE_SOURCE,
    SESSION_INFO_TYPE,
    content_text,
    session_info_name,
    sets_default_model,
)
from xcsh_store.format.jsonl import BOM, iter_lines
from xcsh_store.format.versions import (
    HEADER_TYPE,
    KNOWN_ENTRY_TYPES,
    TITLE_TYPE,
    IdFactory,
    migrate_session_entries,
    session_version,
    synthetic_ids_for,
)
from xcsh_store.index.archive.capture import ByteCapture, CapturedPiece, KeptPieces, capture_start
from xcsh_store.index.model.columns import USAGE_FIGURES
from xcsh_store.index.model.facts import EntryFacts, SkippedLines, blob_refs_in, storable_values
from xcsh_store.index.write.scan import sha1_hex
from xcsh_store.js import stringify
from xcsh_store.times import canonical_iso, iso_millis

HEAD_BYTES = 1024
TAIL_BYTES = 4096
# A read hands its rows over in chunks of at most this many objects or this many bytes of the
# file; the writer commits only between chunks, so every commit ends on a line boundary.
CHUNK_VALUES = 20_000
CHUNK_BYTES = 16 << 20

# (offset, the line's bytes, the objects on it, whether the line holds a \u escape)
_Record = tuple[int, bytes, list[dict[str, Any]], bool]
# (provider, model) as the index columns hold them.
_Model = tuple[str | None, str | None]
# The default model after an entry: (the model, whether a model_change set it); a callable
# when it must be looked up in the index and no one has needed it yet.
_Default = tuple[_Model | None, bool]
NO_DEFAULT: _Default = (None, False)
# Six usage figures (input, output, cache read, cache write, premium requests, cost), then how
# the cost is known (cost_estimated, list_cost: agents/prices/costs.py).
_NO_USAGE = (None, None, None, None, None, None, *NO_COST)
# (st_size, st_mtime_ns, st_ino, st_ctime_ns) of a file as its reader opened it.
FileStat = tuple[int, int, int, int]


def _request(facts: EntryFacts, usage: tuple[Any, ...]) -> Request:
    """The request an entry's usage is of, as a price applies to it."""
    sent, received, cache_read, cache_write = (int(value or 0) for value in usage[:4])
    return Request(
        facts.model, facts.timestamp, sent, received, cache_read, cache_write,
        provider=facts.provider,
    )  # fmt: skip


class Chunk(NamedTuple):
    """The rows of consecutive lines of one file, as the writer applies them.

    Entry keys (``pk`` and ``chain``) count from the read's first key; the writer moves them
    onto the keys it hands out, and adds the file id. ``progress`` is the file row's state once
    these lines are in: (indexed_bytes, head_hash, tail_hash, status, next_seq, last_id,
    legacy, lines, skipped_count, skipped_lines). Only plain values, so that a chunk crosses
    from a worker to the writer as a marshalled tuple.
    """

    # (key, seq, id, parent_id, type, timestamp, role, provider, model, tool_name,
    # custom_type, offset, length, part, 6 usage figures, cost_estimated, list_cost, usage_key,
    # prompt_hash, chain)
    entries: list[tuple[Any, ...]]
    texts: list[tuple[int, str]]
    blobs: list[tuple[int, str]]
    # Keys written by an earlier chunk of this read whose id a line of this one has again.
    replaced: list[int]
    # A resumed read: the entries' ids may be in the index from earlier reads too.
    look_up_ids: bool
    chained: bool
    # (header columns or None, figures (each by its column's name: model/columns.py's
    # ``header`` and ``figures``), the name read this time and who gave it, and the cwd,
    # creation time and parent session id learnt so far) of a session with a valid header or
    # another agent's file.
    session: tuple[Any, ...] | None
    progress: tuple[Any, ...]
    final: bool
    source_bytes: int
    # One past the last key this read has used so far.
    keys_end: int
    bytes_read: int
    skipped: list[int]
    # Keys of rows whose usage a later line of the same response replaced (see usage_key).
    superseded: list[int]
    # (seq, leaf entry id, summary) of the lines that summarise a conversation by its leaf.
    leaf_summaries: list[tuple[int, str, str]]
    # The bytes of these lines for the archive (a read that keeps them: archive/capture.py).
    archived: CapturedPiece | None = None
    # (seq, slot, observed_at, used_percent, window_minutes, resets_at, limit_id, plan_type):
    # the plan's usage-limit windows the lines report (quota_observations, migration 0015).
    quotas: list[tuple[Any, ...]] = []  # noqa: RUF012 (a NamedTuple default, never mutated)


class IndexedRows(Protocol):
    """What a resumed read asks the index about the rows earlier reads of the file wrote."""

    def awaited(self, entry_id: str) -> bool:
        """Whether an indexed entry names ``entry_id`` as its parent."""

    def parent(self, parent_id: str) -> list[tuple[int, int]]:
        """[(its chain, whether it has a child)] of an indexed entry."""

    def default_after(self, entry_id: str) -> _Default:
        """The default model in effect after an indexed entry."""

    def usage_of(self, usage_key: str) -> tuple[int, tuple[Any, ...]] | None:
        """(key, usage figures) of the indexed entry that counts the usage of ``usage_key``."""

    def turn_parents(self, entry_id: str) -> list[str | None]:
        """The parents of the user messages on the path to an indexed entry, in path order."""

    def counted(self, entry_ids: list[str]) -> tuple[int, int]:
        """(entries, messages): how many of ``entry_ids`` are indexed, and how many of those
        counted as messages."""


@dataclass
class Totals:
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
    session_name_source: str | None = None
    # The newest timestamp of the file's lines (UTC, times.canonical_iso): the session's last
    # activity, its modified time (the file's mtime only where no line has one).
    activity_at: str | None = None


@dataclass
class ReadState:
    """Where the parse of a file stands: header status, seq, last id, totals, edge bytes."""

    path: str
    indexed_bytes: int = 0
    next_seq: int = 0
    version: int | None = None
    status: str | None = None
    leading_title: dict[str, Any] | None = None
    last_id: str | None = None
    legacy: bool = False
    totals: Totals = field(default_factory=Totals)
    head: bytes = b""
    tail: bytes = b""
    ids: IdFactory | None = None
    # Whether every entry so far has a trustworthy chain (migration 0002).
    chained: bool = True
    # Lines read so far, and those of them that held no object (migration 0004).
    lines: int = 0
    skipped: SkippedLines = field(default_factory=SkippedLines)
    # Another agent's file: its reader's name, what it says of its session, and whether the
    # sessions row is written (an xcsh file's is written when its header is read).
    agent: str | None = None
    session: SessionFacts | None = None
    session_written: bool = False
    # Which of the xcsh family wrote a file of that format (agents.xcsh_agent_of), decided
    # when the line that decides validity is read; a resumed read keeps the index's.
    family_agent: str | None = None


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
            return NO_DEFAULT
        found = self.after.get(parent_id)
        if found is not None:
            return found
        lookup = self.lookup
        if lookup is None:
            return NO_DEFAULT
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


# --------------------------------------------------------------------------------------------
# Reading


class ReadTally:
    """The bytes a read took from the file, for the sync's report."""

    __slots__ = ("bytes",)

    def __init__(self) -> None:
        self.bytes = 0


def read_at(stream: BinaryIO, offset: int, size: int) -> bytes:
    return os.pread(stream.fileno(), size, offset) if size > 0 else b""


def complete_records(stream: BinaryIO, start: int, tally: ReadTally) -> Iterator[_Record]:
    """Lines from ``start`` that are complete: newline-terminated, or a last line that parses.

    A line still being written (cut JSON without its newline) is left for a later sync.
    """
    for offset, line in iter_lines(stream, start):
        tally.bytes += len(line)
        if line[-1:] != b"\n":
            try:
                orjson.loads(line)
            except orjson.JSONDecodeError:
                return
        escaped = b"\\u" in line
        yield offset, line, storable_values(line, escaped), escaped


def _read_until_header(records: Iterator[_Record]) -> tuple[list[_Record], dict[str, Any] | None]:
    """The records up to the one that decides validity, and the header if it is one."""
    leading: list[_Record] = []
    for record in records:
        leading.append(record)
        for value in record[2]:
            if value.get("type") == TITLE_TYPE:
                continue
            return leading, value if value.get("type") == HEADER_TYPE else None
    return leading, None


# emit(chunk) hands a chunk to the writer; True when the writer found, in the index, rows of
# earlier reads that the chunk's entries replace (only a resumed read can have any).
Emit = Callable[[Chunk], bool]


def read_from_start(
    stream: BinaryIO,
    path: str,
    mtime_ns: int,
    emit: Emit,
    chunk_values: int = CHUNK_VALUES,
    chunk_bytes: int = CHUNK_BYTES,
    first_key: int = 0,
    *,
    with_text: bool = True,
    kept: KeptPieces | None = None,
) -> None:
    """Read a whole file (its rows in the index, if any, are about to go); without search
    text when not ``with_text`` (text_later.py adds it afterwards). ``kept``: the pieces its
    archive keeps (None: the file is not archived); the chunks carry the bytes read after
    them, or all of them when the file no longer begins with those."""
    tally = ReadTally()
    capture = None
    if kept is not None:
        start = capture_start(stream.fileno(), kept)
        capture = ByteCapture(start, mtime_ns)
        if start == 0 and read_at(stream, 0, len(BOM)) == BOM:
            capture.add(0, BOM)  # (the lines are read after it)
    records: Iterator[_Record] = complete_records(stream, 0, tally)
    leading, header = _read_until_header(records)
    state = ReadState(path, ids=synthetic_ids_for(path))
    if read_at(stream, 0, len(BOM)) == BOM:
        state.head = state.tail = BOM  # the hashes cover the raw bytes, BOM included
    state.version = session_version(header) if header is not None else None
    if state.version is not None and state.version < 3:
        # v1/v2: migrate the whole file in memory (deterministic ids), then index it.
        everything = leading + list(records)
        values = [value for record in everything for value in record[2]]
        migrate_session_entries(values, synthetic_ids_for(path))
        state.legacy = True
        records = iter(everything)
    else:
        records = itertools.chain(leading, records)
    builder = RowBuilder(state, mtime_ns, first_key, None, emit, chunk_values, chunk_bytes)
    builder.with_text = with_text
    builder.capture = capture
    builder.add_records(records, tally)


def chunks_of(stream: BinaryIO, path: str, mtime_ns: int) -> list[Chunk]:
    """Every chunk of a whole read of the file at ``path`` (open as ``stream``)."""
    chunks: list[Chunk] = []

    def emit(chunk: Chunk) -> bool:
        chunks.append(chunk)
        return False

    read_from_start(stream, path, mtime_ns, emit)
    return chunks


def read_source(
    agent: Agent,
    path: str,
    mtime_ns: int,
    emit: Emit,
    first_key: int = 0,
    records_from: str | None = None,
) -> None:
    """Read a whole session of an agent whose sessions are not JSONL files (Agent.kind): its
    records, in order, each kept by its locator (in the offset column; no length); read from
    the copy at ``records_from`` when given (one made from the archive)."""
    tally = ReadTally()
    state = ReadState(path, status="ok", agent=agent.name, session=SessionFacts(path))
    builder = RowBuilder(state, mtime_ns, first_key, None, emit, CHUNK_VALUES, CHUNK_BYTES)
    builder.reader = agent
    found = plugin_records(agent, path, records_from)
    records = ((locator, b"", [value], False) for locator, value in found)
    builder.add_records(records, tally)


def read_appended(
    stream: BinaryIO,
    state: ReadState,
    mtime_ns: int,
    first_key: int,
    indexed: IndexedRows,
    emit: Emit,
    *,
    archive: bool = False,
) -> None:
    """Read what was appended to a file since ``state`` (the index's view of it); with
    ``archive``, the chunks carry those bytes for the archive too."""
    tally = ReadTally()
    builder = RowBuilder(state, mtime_ns, first_key, indexed, emit, CHUNK_VALUES, CHUNK_BYTES)
    if archive:
        builder.capture = ByteCapture(state.indexed_bytes, mtime_ns)
    builder.add_records(complete_records(stream, state.indexed_bytes, tally), tally)


# --------------------------------------------------------------------------------------------
# Rows


class RowBuilder:
    """Turns records into rows and hands them over in chunks.

    ``indexed`` is None for a fresh read (no rows of the file are in the index): then nothing
    is ever looked up, and the builder runs anywhere.
    """

    def __init__(
        self,
        state: ReadState,
        mtime_ns: int,
        first_key: int,
        indexed: IndexedRows | None,
        emit: Emit,
        chunk_values: int,
        chunk_bytes: int,
    ) -> None:
        self.state = state
        self.modified_at = iso_millis(mtime_ns / 1e9)
        self.next_key = first_key
        self.indexed = indexed
        self.emit = emit
        self.chunk_values = chunk_values
        self.chunk_bytes = chunk_bytes
        self.indexed_bytes = state.indexed_bytes
        self.entry_rows: list[tuple[Any, ...] | None] = []
        self.text_rows: list[tuple[int, str]] = []
        self.blob_rows: list[tuple[int, str]] = []
        # Ids of this chunk -> their row's position; ids of earlier chunks -> their row's key.
        self.batch_ids: dict[str, int] = {}
        self.run_keys: dict[str, int] = {}
        self.pending_bytes = 0
        self.skipped: list[int] = []
        self.bytes_reported = 0
        self.header_row: dict[str, Any] | None = None
        self.recent = [state.tail]
        # Chains (migration 0002): entries of this read that have no child yet, with their
        # chain; entries from earlier reads that got their first child in this one; parents
        # named but not seen so far.
        self.chain_tails: dict[str, int] = {}
        self.adopted: set[str] = set()
        self.missing_parents: set[str] = set()
        self.defaults = _DefaultModels(None if indexed is None else indexed.default_after)
        self.reader: Agent | None = reader_named(state.agent)
        # Usage keys of this read -> (the row's key, its figures); the key of this chunk's
        # first row; rows of earlier chunks whose usage a later line replaced.
        self.usage_keys: dict[str, tuple[int, tuple[Any, ...]]] = {}
        self.chunk_first_key = first_key
        self.superseded: list[int] = []
        self.leaf_summaries: list[tuple[int, str, str]] = []
        self.quotas: list[tuple[Any, ...]] = []
        # Each entry id this read counted, and whether as a message: a later line of the same
        # id replaces that entry, and its count with it. A resumed read asks the index about
        # the ids new to it once per chunk (unchecked), before it hands the chunk over.
        self.counted: dict[str, bool] = {}
        self.unchecked: list[str] = []
        # Of a format without ids: the parent of each user turn on the current path, oldest
        # first (what a rollback goes back to). A resumed read starts with this read's turns
        # and puts the earlier ones of the path in front only when a rollback reaches them.
        self.turn_parents: list[str | None] = []
        self.earlier_turns_read = indexed is None
        self.resumed_after = state.last_id
        # False: the chunks carry no search text (a usage-first read, text_later.py).
        self.with_text = True
        # Set: the lines' bytes go to the archive with their chunks.
        self.capture: ByteCapture | None = None

    def add_records(self, records: Iterable[_Record], tally: ReadTally) -> None:
        state = self.state
        add_value = self._add_value
        capture = self.capture
        for record in records:
            offset, data, values, escaped = record
            if capture is not None:
                capture.add(offset, data)
            state.lines += 1
            if len(values) == 1:
                add_value(offset, data, 0, values[0], data, escaped)
            elif not values:
                if not data.isspace():
                    # A line that holds no object: every reader skips it; the index says where.
                    state.skipped.add(state.lines)
                    self.skipped.append(state.lines)
            else:
                for part, value in enumerate(values):
                    add_value(offset, data, part, value, stringify(value), None)
            self.indexed_bytes = offset + len(data)
            self._keep_edges(data)
            self.pending_bytes += len(data)
            if len(self.entry_rows) >= self.chunk_values or self.pending_bytes >= self.chunk_bytes:
                self._flush(False, tally)
        self._flush(True, tally)

    def _keep_edges(self, data: bytes) -> None:
        """Remember the first KiB and the records covering the last 4 KiB, for the hashes."""
        state = self.state
        if len(state.head) < HEAD_BYTES:
            state.head += data[: HEAD_BYTES - len(state.head)]
        recent = self.recent
        recent.append(data)
        if len(recent) > 64:
            self.recent = [b"".join(recent)[-TAIL_BYTES:]]

    def _add_value(
        self,
        offset: int,
        data: bytes,
        part: int,
        value: dict[str, Any],
        line: bytes,
        escaped: bool | None,
    ) -> None:
        state = self.state
        seq = state.next_seq
        state.next_seq += 1
        is_header_record = False
        kind = value.get("type")
        if state.status is None and kind != TITLE_TYPE and kind != HEADER_TYPE:
            self._recognize(value)
        if self.reader is not None:
            self._add_agent_value(offset, data, part, value, seq)
            return
        if state.status is None:
            if kind == TITLE_TYPE:
                is_header_record = True
                state.leading_title = value
            else:
                valid = kind == HEADER_TYPE and isinstance(value.get("id"), str)
                state.status = "ok" if valid else "invalid_header"
                state.family_agent = xcsh_agent_of(state.path, state.leading_title is not None)
                if valid:
                    is_header_record = True
                    self.header_row = value
        elif kind == HEADER_TYPE:
            is_header_record = True  # (compatibility: A second header is an opaque record)
        elif not state.legacy:
            self._repair_links(value, seq)
        facts = EntryFacts(value, is_header_record, self.with_text)
        if not is_header_record:
            inherited = self.defaults.add(facts, value)
            if inherited is not None:
                facts.provider, facts.model = inherited
            self._count(value, facts)
        key = self._append_row(facts, seq, offset, len(data), part, None)
        digests = blob_refs_in(line, value, escaped=escaped)
        if digests:
            self.blob_rows.extend([(key, digest) for digest in digests])

    def _recognize(self, first: dict[str, Any]) -> None:
        """Whether the file's first object is another agent's: then its reader reads the file
        (there is no header to look for)."""
        reader = reader_for(first)
        if reader is not None:
            state = self.state
            self.reader = reader
            state.agent = reader.name
            state.status = "ok"
            state.session = SessionFacts(state.path)

    def _add_agent_value(
        self, offset: int, data: bytes, part: int, value: dict[str, Any], seq: int
    ) -> None:
        state = self.state
        assert self.reader is not None and state.session is not None
        found = read_entry(self.reader, value, state.session)
        entry = found.entry
        if not self.reader.has_ids or found.chained:
            entry["id"] = agent_entry_id(state.path, seq)
            if found.rewind_turns is not None:
                state.last_id = self._rewound(found.rewind_turns)
            entry.setdefault("parentId", state.last_id)
            state.last_id = entry["id"]
            message = entry.get("message")
            if type(message) is dict and message.get("role") == "user":
                self.turn_parents.append(entry["parentId"])
        facts = EntryFacts(entry, False, self.with_text)
        facts.custom_type = facts.custom_type or found.qualifier
        if found.model is not None:
            facts.model, facts.provider = found.model, found.provider
        facts.usage = found.usage
        usage_key = found.usage_key if found.usage is not None else None
        self._count(entry, facts, self.reader.records_costs)
        if found.title is not None:
            state.totals.session_name = found.title
            state.totals.session_name_source = found.title_source
        if found.leaf_summary is not None:
            self.leaf_summaries.append((seq, *found.leaf_summary))
        if found.quotas and facts.timestamp is not None:
            observed = canonical_iso(facts.timestamp)
            if observed is not None:
                self.quotas += [(seq, *_quota_row(observed, reading)) for reading in found.quotas]
        key = self._append_row(facts, seq, offset, len(data), part, usage_key)
        if usage_key is not None and facts.usage is not None:  # the key comes with usage
            self._supersede_usage(usage_key, key, facts.usage)

    def _rewound(self, turns: int) -> str | None:
        """Where a rollback of the last ``turns`` user turns goes back to (the first of them
        rolled back's parent); with fewer turns on the path, its start."""
        parents = self.turn_parents
        if len(parents) < turns and not self.earlier_turns_read:
            self.earlier_turns_read = True
            last = self.resumed_after
            assert self.indexed is not None
            parents[:0] = [] if last is None else self.indexed.turn_parents(last)
        kept = max(len(parents) - turns, 0)
        target = parents[kept] if kept < len(parents) else self.state.last_id
        del parents[kept:]
        return target

    def _supersede_usage(self, usage_key: str, key: int, usage: tuple[Any, ...]) -> None:
        """A line reporting a response an earlier line reported: only this one's usage counts
        (the rows of an entry keep its figures in the eight columns after ``part``)."""
        previous = self.usage_keys.get(usage_key)
        if previous is None and self.indexed is not None:
            previous = self.indexed.usage_of(usage_key)
        self.usage_keys[usage_key] = (key, usage)
        if previous is None:
            return
        old_key, old_usage = previous
        totals = self.state.totals
        totals.usage = [a - (b or 0) for a, b in zip(totals.usage, old_usage[:6], strict=True)]
        position = old_key - self.chunk_first_key
        row = self.entry_rows[position] if position >= 0 else None
        if row is not None:
            self.entry_rows[position] = (*row[:14], *_NO_USAGE, *row[22:])
        elif position < 0:
            self.superseded.append(old_key)

    def _append_row(
        self,
        facts: EntryFacts,
        seq: int,
        offset: int,
        length: int,
        part: int,
        usage_key: str | None,
    ) -> int:
        """Add the rows of one entry (but its blob refs); returns its key."""
        state = self.state
        entry_id = facts.id
        key = self.next_key
        self.next_key = key + 1
        stamp = facts.timestamp
        if stamp is not None:
            stamp = canonical_iso(stamp)
            totals = state.totals
            if stamp is not None and (totals.activity_at is None or stamp > totals.activity_at):
                totals.activity_at = stamp
        chain = None if entry_id is None else self._chain(entry_id, facts.parent_id, key)
        entry_rows = self.entry_rows
        entry_rows.append(
            (key, seq, entry_id, facts.parent_id, facts.type, facts.timestamp, facts.role,
             facts.provider, facts.model, facts.tool_name, facts.custom_type, offset, length,
             part, *(facts.usage or _NO_USAGE), usage_key, facts.prompt_hash, chain)
        )  # fmt: skip
        if entry_id is not None:
            previous = self.batch_ids.get(entry_id)
            if previous is not None:
                state.chained = False
                self._forget(previous)
            self.batch_ids[entry_id] = len(entry_rows) - 1
        if facts.text and self.with_text:
            self.text_rows.append((key, facts.text))
        return key

    def _chain(self, entry_id: str, parent_id: str | None, key: int) -> int | None:
        """The chain of a new entry: its parent's when it is the parent's first child, else a
        new one (its own key); a parent missing from the file makes the entry a root.

        An entry that some earlier line named as its parent, or that is its own parent, ends
        the file's chains: only a walk over the parent links follows such a file (compatibility:
        Cycles end every walk).
        """
        if not self.state.chained:
            return None
        if entry_id == parent_id or self._awaited(entry_id):
            self.state.chained = False
            return None
        if parent_id is None:
            chain = key
        elif parent_id in self.chain_tails:
            chain = self.chain_tails.pop(parent_id)
        else:
            chain = self._chain_below(parent_id, key)
        self.chain_tails[entry_id] = chain
        return chain

    def _awaited(self, entry_id: str) -> bool:
        """Whether an entry read before names ``entry_id`` as its parent."""
        if entry_id in self.missing_parents:
            return True
        return self.indexed is not None and self.indexed.awaited(entry_id)

    def _chain_below(self, parent_id: str, key: int) -> int:
        """The chain of a child of ``parent_id``, a parent that is not a chain tail of this read."""
        if parent_id in self.batch_ids or parent_id in self.run_keys or parent_id in self.adopted:
            return key  # the parent already has a child
        found = [] if self.indexed is None else self.indexed.parent(parent_id)
        if not found:
            self.missing_parents.add(parent_id)
            return key
        parent_chain, has_child = found[0]
        if has_child:
            return key
        self.adopted.add(parent_id)
        return parent_chain

    def _forget(self, row_index: int) -> None:
        """A later entry with the same id replaces an earlier one in the same chunk."""
        row = self.entry_rows[row_index]
        assert row is not None
        key = row[0]
        self.entry_rows[row_index] = None
        self.text_rows = [row for row in self.text_rows if row[0] != key]
        self.blob_rows = [row for row in self.blob_rows if row[0] != key]

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

    def _count(self, value: dict[str, Any], facts: EntryFacts, records_costs: bool = True) -> None:
        """Count an entry into its session's totals; its usage's cost settled first (its
        agent's recorded one, or the index's estimate: agents/prices/costs.py)."""
        totals = self.state.totals
        kind = facts.type
        message = value.get("message") if kind == "message" else None
        totals.entry_count += 1
        if facts.id is not None:
            totals.last_entry_id = facts.id
            self._uncount(facts.id)
            self.counted[facts.id] = bool(message)
        usage = facts.usage
        if usage is not None:
            priced = _request(facts, usage) if records_costs else None
            usage = facts.usage = settle(usage, records_costs, priced)
            # (A cost is None for a model without a price: it adds nothing.)
            totals.usage = [a + (b or 0) for a, b in zip(totals.usage, usage[:6], strict=True)]
        if kind == "message":
            if message:
                totals.message_count += 1
                if totals.first_message is None and facts.role == "user":
                    text = content_text(message.get("content")) if type(message) is dict else ""
                    if text:
                        totals.first_message = text
        elif kind == "compaction" and isinstance(value.get("shortSummary"), str):
            totals.compaction_title = value["shortSummary"]
        elif kind == SESSION_INFO_TYPE:
            name = session_info_name(value)
            if name:
                totals.session_name, totals.session_name_source = name, NAMED_TITLE_SOURCE

    def _uncount(self, entry_id: str) -> None:
        """A line with the id of an entry read before (in this read, or indexed by an earlier
        one: _uncount_indexed) replaces it: the counts lose that entry (its usage goes by its
        usage key)."""
        earlier = self.counted.get(entry_id)
        if earlier is not None:
            totals = self.state.totals
            totals.entry_count -= 1
            totals.message_count -= int(earlier)
        elif self.indexed is not None:
            self.unchecked.append(entry_id)

    def _uncount_indexed(self) -> None:
        """The counts lose the entries of earlier reads that lines of this chunk replace."""
        if self.unchecked and self.indexed is not None:
            entries, messages = self.indexed.counted(self.unchecked)
            totals = self.state.totals
            totals.entry_count -= entries
            totals.message_count -= messages
        self.unchecked = []

    # -- handing over -----------------------------------------------------------------------

    def _flush(self, final: bool, tally: ReadTally) -> None:
        """Hand over the pending rows with the session figures and the file's progress."""
        self._uncount_indexed()
        state = self.state
        rows = [row for row in self.entry_rows if row is not None]
        replaced = []
        if self.indexed is None and self.run_keys:
            # The index holds exactly this read's earlier chunks: the later line wins, like
            # the reference.
            run_keys = self.run_keys
            replaced = [run_keys[row[2]] for row in rows if row[2] in run_keys]
            if replaced:
                state.chained = False
        if not state.chained:
            rows = [row if row[-1] is None else (*row[:-1], None) for row in rows]
        state.tail = b"".join(self.recent)[-TAIL_BYTES:]
        indexed_bytes = self.indexed_bytes
        skipped = state.skipped
        progress = (
            indexed_bytes,
            sha1_hex(state.head[: min(HEAD_BYTES, indexed_bytes)]),
            sha1_hex(state.tail[-min(TAIL_BYTES, indexed_bytes) :]),
            state.status or "invalid_header", state.next_seq, state.last_id, int(state.legacy),
            state.lines, skipped.count,
            orjson.dumps(skipped.lines).decode() if skipped.count else None,
            state.agent or state.family_agent or xcsh_agent_of(state.path),
        )  # fmt: skip
        chunk = Chunk(
            rows,
            self.text_rows,
            self.blob_rows,
            replaced,
            self.indexed is not None,
            state.chained,
            self._session(),
            progress,
            final,
            self.pending_bytes,
            self.next_key,
            tally.bytes - self.bytes_reported,
            self.skipped,
            self.superseded,
            self.leaf_summaries,
            None if self.capture is None else self.capture.take(),
            self.quotas,
        )
        self.bytes_reported = tally.bytes
        run_keys = self.run_keys
        entry_rows = self.entry_rows
        for entry_id, position in self.batch_ids.items():
            run_keys[entry_id] = entry_rows[position][0]  # type: ignore[index]
        if self.emit(chunk):
            state.chained = False
        self.entry_rows, self.text_rows, self.blob_rows, self.skipped = [], [], [], []
        self.superseded = []
        self.leaf_summaries = []
        self.quotas = []
        self.chunk_first_key = self.next_key
        self.batch_ids = {}
        self.pending_bytes = 0

    def _session(self) -> tuple[Any, ...] | None:
        state = self.state
        if state.status != "ok":
            return None
        totals = state.totals
        figures = {
            "entry_count": totals.entry_count,
            "message_count": totals.message_count,
            "first_message": totals.first_message,
            "last_entry_id": totals.last_entry_id,
            **dict(zip(USAGE_FIGURES, totals.usage, strict=True)),
            "compaction_title": totals.compaction_title,
            "modified_at": totals.activity_at or self.modified_at,
            "activity_at": totals.activity_at,
        }
        name, source = totals.session_name, totals.session_name_source
        facts = state.session
        if facts is not None:
            learnt = (facts.cwd, facts.created_at, facts.parent_session_id)
            if state.session_written:
                return None, figures, name, source, learnt
            state.session_written = True
            session_id = facts.session_id or os.path.basename(state.path).removesuffix(".jsonl")
            columns: dict[str, Any] = {
                "session_id": session_id,
                "cwd": facts.cwd,
                "title": name,
                "title_source": source,
                "parent_session": facts.parent_session,
                "version": None,
                "created_at": facts.created_at,
                "agent": state.agent,
                "parent_session_id": facts.parent_session_id,
            }
            return columns, figures, name, source, learnt
        header = self.header_row
        if header is None:
            return None, figures, name, source, (None, None, None)
        self.header_row = None
        title, title_source = (name, source) if name else _title_of(header, state.leading_title)
        columns = {
            "session_id": header["id"],
            "cwd": _text(header.get("cwd")),
            "title": title,
            "title_source": title_source,
            "parent_session": _text(header.get("parentSession")),
            "version": state.version,
            "created_at": _text(header.get("timestamp")),
            "agent": state.family_agent,
            "parent_session_id": None,
        }
        return columns, figures, name, source, (None, None, None)


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


def _quota_row(observed: str, reading: QuotaReading) -> tuple[Any, ...]:
    """A reading as quota_observations holds it after (file_id, seq)."""
    return (
        reading.slot,
        observed,
        reading.used_percent,
        reading.window_minutes,
        reading.resets_at,
        reading.limit_id,
        reading.plan_type,
    )


def agent_entry_id(path: str, seq: int) -> str:
    """The id of the entry at ``seq`` of a file whose format has none: unique in the file,
    and unlike any other file's (usage_entries takes entries of the same id and time for
    copies of one another)."""
    return f"{agent_entry_id_prefix(path)}{seq:x}"


def agent_entry_id_prefix(path: str) -> str:
    """What every :func:`agent_entry_id` of a file begins with (a lean read's thousands of
    requests in a file hash its name once)."""
    return f"{sha1_hex(os.path.basename(path).encode())[:8]}-"
