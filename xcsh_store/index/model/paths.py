"""Entries as the index holds them, and the paths through a session's tree: the rows of an
entry, its path to the root (by chain or by parent ids), and its JSON object read again from
the file. Both rooms stand on these: the reads (trees, contexts) and the writes (a resumed
read's default model, an oh-my-pi branch's name)."""

from abc import ABC, abstractmethod
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass, fields
from typing import Any

import apsw

from xcsh_store.agents import (
    UNREAD_TYPE,
    XCSH_AGENTS,
    Agent,
    SessionFacts,
    kind_of,
    read_entry,
    reader_named,
    records_at,
)
from xcsh_store.errors import EntryNotFoundError
from xcsh_store.format.blobs import BlobStore
from xcsh_store.format.entries import TITLE_CHANGE_TYPE, title_change_name
from xcsh_store.format.jsonl import parse_line
from xcsh_store.format.loader import sanitize_openai_replay_metadata
from xcsh_store.format.persist import rehydrate_entry
from xcsh_store.index.archive.sources import ArchivedSources, opened_source, readable_copy


@dataclass(frozen=True, slots=True)
class IndexedEntry:
    """An entry as the index knows it; ``offset``/``length`` locate its line in the file."""

    pk: int
    seq: int
    id: str | None
    parent_id: str | None
    type: str | None
    timestamp: str | None
    role: str | None
    provider: str | None
    model: str | None
    tool_name: str | None
    custom_type: str | None
    offset: int
    length: int
    part: int


# Its fields are columns of entries (model/columns.py), read in this order.
_ENTRY_COLUMNS = ", ".join(field.name for field in fields(IndexedEntry))


def entry_rows(connection: apsw.Connection, file_id: int) -> list[IndexedEntry]:
    return [
        IndexedEntry(*row)
        for row in connection.execute(
            f"SELECT {_ENTRY_COLUMNS} FROM entries WHERE session = ? ORDER BY seq", (file_id,)
        )
    ]


_WALK_SQL = (
    "WITH RECURSIVE walk(pk, id, parent_id, type, depth) AS ("
    "  SELECT pk, id, parent_id, type, 0 FROM entries WHERE session = ?1 AND id = ?2"
    "  UNION ALL"
    "  SELECT e.pk, e.id, e.parent_id, e.type, walk.depth + 1"
    "  FROM walk JOIN entries AS e ON e.session = ?1 AND e.id = walk.parent_id"
    "  WHERE walk.depth < (SELECT count(*) FROM entries WHERE session = ?1)"
    ") SELECT pk, id, parent_id, type FROM walk"
)


def walk_to_root(
    connection: apsw.Connection, file_id: int, leaf_id: str
) -> list[tuple[int, str, str | None, str | None]]:
    """(pk, id, parent_id, type) from the root to ``leaf_id``, by one recursive CTE.

    The walk can never be longer than the session has entries, so a cycle in the parent ids
    ends it (compatibility: Cycles end every walk); the repeat is cut off here. Rows come out
    leaf first, one per step (the CTE's queue is first-in first-out); that order is checked, and
    rebuilt if it ever differs.
    """
    rows = list(connection.execute(_WALK_SQL, (file_id, leaf_id)))
    if not rows:
        raise EntryNotFoundError(leaf_id)
    seen: set[int] = set()
    path: list[Any] = []
    for row in rows:
        if row[0] in seen or (path and row[1] != path[-1][2]):
            break
        seen.add(row[0])
        path.append(row)
    path.reverse()
    return path


def rows_by_pk(connection: apsw.Connection, pks: list[int]) -> dict[int, IndexedEntry]:
    found: dict[int, IndexedEntry] = {}
    for start in range(0, len(pks), 500):
        chunk = pks[start : start + 500]
        marks = ",".join("?" * len(chunk))
        for row in connection.execute(
            f"SELECT {_ENTRY_COLUMNS} FROM entries WHERE pk IN ({marks})", chunk
        ):
            found[row[0]] = IndexedEntry(*row)
    return found


def branch_rows(connection: apsw.Connection, file_id: int, leaf_id: str) -> list[IndexedEntry]:
    """Root -> leaf entries of one branch."""
    return [row for _, row in entry_path(connection, file_id, leaf_id).rows()]


# Where an entry is on a path: (run, seq) for a ChainPath, (0, index) for a ListPath.
Position = tuple[int, int]

_RUNS_SQL = (
    "WITH RECURSIVE runs(chain, last, hops) AS ("
    "  SELECT chain, seq, 0 FROM entries WHERE session = ?1 AND id = ?2"
    "  UNION ALL"
    "  SELECT parent.chain, parent.seq, runs.hops + 1"
    "  FROM runs JOIN entries AS head ON head.pk = runs.chain"
    "  JOIN entries AS parent ON parent.session = ?1 AND parent.id = head.parent_id"
    "  WHERE runs.hops < (SELECT count(*) FROM entries WHERE session = ?1)"
    ") SELECT chain, last FROM runs"
)


class EntryPath(ABC):
    """A root -> leaf path as runs, each a range of positions; subclasses read the runs.

    A position is (run, place in the run): comparable along the path, root first.
    """

    def __init__(self, lasts: list[int]) -> None:
        self.lasts = lasts  # the last place on the path of each run

    @abstractmethod
    def position_of(self, entry_id: str) -> Position | None:
        """Where ``entry_id`` is on the path; None when it is not on it."""

    @abstractmethod
    def run_rows(
        self, run: int, low: int, high: int, types: Collection[str], newest_first: bool
    ) -> Iterable[tuple[int, IndexedEntry]]:
        """(place, entry) of one run from ``low`` to ``high`` (inclusive)."""

    def rows(
        self,
        *,
        since: Position | None = None,
        before: Position | None = None,
        types: Collection[str] = (),
        newest_first: bool = False,
    ) -> Iterator[tuple[Position, IndexedEntry]]:
        """Entries of the path from ``since`` up to (not including) ``before``, optionally of
        some types only, in path order or newest first; lazily, so a caller can stop early."""
        order = range(len(self.lasts))
        for run in reversed(order) if newest_first else order:
            low, high = 0, self.lasts[run]
            if since is not None:
                if run < since[0]:
                    continue
                low = since[1] if run == since[0] else 0
            if before is not None:
                if run > before[0]:
                    continue
                high = before[1] - 1 if run == before[0] else high
            for place, row in self.run_rows(run, low, high, types, newest_first):
                yield (run, place), row


class ChainPath(EntryPath):
    """A path as runs of chains (migration 0002), read in SQL a seq range at a time.

    ``runs`` is (chain, last seq on the path) from the root down: the path holds each chain's
    entries up to that seq, so a deep linear session is one index range, never a walk.
    """

    def __init__(self, connection: apsw.Connection, file_id: int, runs: list[tuple[int, int]]):
        super().__init__([last for _, last in runs])
        self.connection = connection
        self.file_id = file_id
        self.chains = [chain for chain, _ in runs]
        self.run_of = {chain: run for run, chain in enumerate(self.chains)}

    def position_of(self, entry_id: str) -> Position | None:
        found = list(
            self.connection.execute(
                "SELECT chain, seq FROM entries WHERE session = ? AND id = ?",
                (self.file_id, entry_id),
            )
        )
        run = self.run_of.get(found[0][0]) if found else None
        if run is None or found[0][1] > self.lasts[run]:
            return None
        return run, found[0][1]

    def run_rows(
        self, run: int, low: int, high: int, types: Collection[str], newest_first: bool
    ) -> Iterator[tuple[int, IndexedEntry]]:
        kinds = f" AND type IN ({','.join('?' * len(types))})" if types else ""
        cursor = self.connection.execute(
            f"SELECT {_ENTRY_COLUMNS} FROM entries WHERE chain = ? AND seq BETWEEN ? AND ?{kinds}"
            f" ORDER BY seq{' DESC' if newest_first else ''}",
            (self.chains[run], low, high, *types),
        )
        for row in cursor:
            yield row[1], IndexedEntry(*row)


class ListPath(EntryPath):
    """A path held in memory, one run placed by list index: for files whose chains cannot be
    trusted."""

    def __init__(self, entries: list[IndexedEntry]) -> None:
        super().__init__([len(entries) - 1])
        self.entries = entries

    def position_of(self, entry_id: str) -> Position | None:
        return next(
            ((0, index) for index, row in enumerate(self.entries) if row.id == entry_id), None
        )

    def run_rows(
        self, run: int, low: int, high: int, types: Collection[str], newest_first: bool
    ) -> list[tuple[int, IndexedEntry]]:
        chosen = [
            (index, self.entries[index])
            for index in range(low, high + 1)
            if not types or self.entries[index].type in types
        ]
        return chosen[::-1] if newest_first else chosen


def entry_path(connection: apsw.Connection, file_id: int, leaf_id: str) -> EntryPath:
    """The path from the root to ``leaf_id``: by chains when the file has trustworthy ones,
    else by one recursive walk over the parent links."""
    found = connection.execute(
        "SELECT e.chain, f.chained FROM entries AS e JOIN files AS f ON f.id = e.session"
        " WHERE e.session = ? AND e.id = ?",
        (file_id, leaf_id),
    ).fetchall()
    if not found:
        raise EntryNotFoundError(leaf_id)
    chain, chained = found[0]
    if chained and chain is not None:
        runs = list(connection.execute(_RUNS_SQL, (file_id, leaf_id)))
        return ChainPath(connection, file_id, runs[::-1])
    walk = walk_to_root(connection, file_id, leaf_id)
    rows = rows_by_pk(connection, [row[0] for row in walk])
    return ListPath([rows[row[0]] for row in walk])


# Lines closer together than this are fetched with one read.
READ_GAP = 64 * 1024


def _line_ranges(rows: list[IndexedEntry]) -> list[tuple[int, int, list[IndexedEntry]]]:
    """Rows grouped into byte ranges to read at once: (start, end, rows in the range)."""
    ranges: list[tuple[int, int, list[IndexedEntry]]] = []
    for row in sorted(rows, key=lambda item: item.offset):
        end = row.offset + row.length
        if ranges and row.offset - ranges[-1][1] <= READ_GAP:
            start, previous_end, members = ranges[-1]
            members.append(row)
            ranges[-1] = (start, max(previous_end, end), members)
        else:
            ranges.append((row.offset, end, [row]))
    return ranges


def branch_name_of(
    connection: apsw.Connection, file_id: int, path: str, leaf_id: str
) -> tuple[str, str] | None:
    """The name the newest oh-my-pi ``title_change`` on the path of ``leaf_id`` gives the
    session (D28), read from the file; None when none there names it."""
    try:
        found = entry_path(connection, file_id, leaf_id)
    except EntryNotFoundError:
        return None
    for _, row in found.rows(types=(TITLE_CHANGE_TYPE,), newest_first=True):
        (entry,) = read_entries(path, [row], None)
        named = title_change_name(entry)
        if named is not None:
            return named
    return None


def read_entries(
    path: str,
    rows: list[IndexedEntry],
    blob_store: BlobStore | None,
    agent: str | None = None,
    archive: ArchivedSources | None = None,
) -> list[dict[str, Any]]:
    """The JSON objects of ``rows``, read from the file by byte offset, ready for use; those
    of another agent's file (``agent``: a plugin's name) as entries of the xcsh model. A file
    that is gone is read from ``archive`` when it keeps it."""
    reader = reader_named(agent)
    if reader is None and agent not in (None, *XCSH_AGENTS):
        raise FileChangedError(path)  # its plugin is gone: the next sync drops its rows
    if reader is not None and kind_of(reader, path) != "jsonl":
        with readable_copy(path, archive) as readable:
            return _source_entries(reader, readable, rows)
    values: dict[int, dict[str, Any]] = {}
    with opened_source(path, archive) as stream:
        for start, end, members in _line_ranges(rows):
            chunk = stream.pread(end - start, start)
            for row in members:
                line = chunk[row.offset - start : row.offset - start + row.length]
                parsed = parse_line(line)
                if row.part >= len(parsed):
                    raise FileChangedError(path)
                value = parsed[row.part]
                if reader is not None:
                    value = read_entry(reader, value, SessionFacts(path)).entry
                if row.id is not None and reader is not None:
                    # Another agent's entry sits where its read of the whole file put it (a
                    # Gemini record names no parent: its line alone cannot say).
                    value["id"], value["parentId"] = row.id, row.parent_id
                elif row.id is not None:
                    # Repaired ids live in the index, not in the file (compatibility:
                    # Deterministic ids for files without them).
                    value.setdefault("id", row.id)
                    value.setdefault("parentId", row.parent_id)
                if blob_store is not None and b"blob:sha256:" in line:
                    rehydrate_entry(value, blob_store)
                values[row.pk] = value
    ordered = [values[row.pk] for row in rows]
    sanitize_openai_replay_metadata(ordered)
    return ordered


def _source_entries(agent: Agent, path: str, rows: list[IndexedEntry]) -> list[dict[str, Any]]:
    """read_entries of a session its plugin reads itself: the records of the rows' locators
    (the offset column), as entries of the xcsh model; each an ``unread`` entry when the
    plugin fails to read them (its bug costs its records, not the question)."""
    try:
        found = records_at(agent, path, [row.offset for row in rows])
    except FileNotFoundError:
        raise FileChangedError(path) from None
    if found is None:
        return [{"type": UNREAD_TYPE, "id": row.id, "parentId": row.parent_id} for row in rows]
    ordered = []
    for row in rows:
        record = found.get(row.offset)
        if record is None:
            raise FileChangedError(path)
        value = read_entry(agent, record, SessionFacts(path)).entry
        if row.id is not None:
            if value.get("id", row.id) != row.id:
                raise FileChangedError(path)
            # The parent the read of the whole session gave it (a record read alone may not
            # know it: Gemini CLI's records name none).
            value["id"], value["parentId"] = row.id, row.parent_id
        ordered.append(value)
    return ordered


class FileChangedError(EntryNotFoundError):
    """The file no longer has the line the index points at: sync first."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.args = (f"{path} changed since it was indexed; run sync",)
