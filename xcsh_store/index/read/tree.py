"""Tree walks in SQL: one branch by recursive CTE, the whole tree, and the context of a leaf."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass, field
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
from xcsh_store.format.context import (
    SessionContext,
    build_session_context,
    compaction_keeps_history,
    context_of_path,
)
from xcsh_store.format.entries import TITLE_CHANGE_TYPE, title_change_name
from xcsh_store.format.jsonl import parse_line
from xcsh_store.format.loader import load_session, sanitize_openai_replay_metadata
from xcsh_store.format.persist import rehydrate_entry
from xcsh_store.format.versions import find_header_index, synthetic_ids_for
from xcsh_store.index.archive.sources import ArchivedSources, opened_source, readable_copy

_ENTRY_COLUMNS = (
    "pk, seq, id, parent_id, type, timestamp, role, provider, model, tool_name, custom_type,"
    " offset, length, part"
)


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


@dataclass
class SessionTree:
    """Every entry of a session with its children; roots, leaves and branch points."""

    entries: dict[str, IndexedEntry]
    children: dict[str, list[str]] = field(default_factory=dict)
    roots: list[str] = field(default_factory=list)

    @property
    def leaves(self) -> list[str]:
        return [entry_id for entry_id in self.entries if not self.children.get(entry_id)]

    @property
    def branch_points(self) -> list[str]:
        return [entry_id for entry_id, kids in self.children.items() if kids and len(kids) > 1]


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


def build_tree(rows: list[IndexedEntry]) -> SessionTree:
    """Children in timestamp order (stable); orphans and self-parented entries are roots."""
    entries = {row.id: row for row in rows if row.id is not None}
    tree = SessionTree(entries)
    for row in sorted(entries.values(), key=lambda entry: (entry.timestamp or "", entry.seq)):
        parent = row.parent_id
        if parent is None or parent == row.id or parent not in entries:
            continue
        tree.children.setdefault(parent, []).append(row.id)  # type: ignore[arg-type]
    tree.roots = [
        row.id  # type: ignore[misc]
        for row in sorted(entries.values(), key=lambda entry: entry.seq)
        if row.parent_id is None or row.parent_id == row.id or row.parent_id not in entries
    ]
    return tree


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


# Entry types whose content matters to the context wherever they are on the path.
STATE_TYPES = ("thinking_level_change", "model_change", "mode_change", "ttsr_injection")


def context_from_index(
    connection: apsw.Connection,
    file_id: int,
    file: str,
    leaf_id: str | None,
    legacy: bool,
    blobs: BlobStore | None,
    agent: str | None = None,
    archive: ArchivedSources | None = None,
) -> SessionContext:
    """``build_session_context`` of one leaf, reading only the lines that can matter.

    The path comes from the index. Behind the newest compaction, only the entries it keeps and
    the state changes (thinking level, models, mode, rules) are read; of the rest, the context
    only takes the model of the newest assistant message, which the index knows. ``agent``
    names the reader of another agent's file: its compactions (a Claude Code compact summary,
    a Codex ``compacted`` line) are what the model saw of the path before them.
    """
    if legacy:
        # v1/v2 files: ids exist only after migration, which needs the whole file.
        with readable_copy(file, archive) as readable:
            loaded = load_session(readable, blob_store=blobs, new_id=synthetic_ids_for(file))
        header = find_header_index(loaded.entries)
        if header is None:  # the file was replaced by one without a header since the sync
            raise FileChangedError(file)
        entries = loaded.entries[header + 1 :]
        return build_session_context(entries, leaf_id) if entries else SessionContext()
    if leaf_id is None:
        return SessionContext()
    path = entry_path(connection, file_id, leaf_id)
    newest = next(path.rows(types=("compaction",), newest_first=True), None)
    if newest is None:
        rows = [row for _, row in path.rows()]
        return context_of_path(read_entries(file, rows, blobs, agent, archive))
    start, compaction_row = newest
    (compaction,) = read_entries(file, [compaction_row], blobs, agent, archive)
    first_kept = compaction.get("firstKeptEntryId")
    if compaction_keeps_history(compaction) and isinstance(first_kept, str):
        kept = path.position_of(first_kept)
        if kept is not None and kept < start:
            start = kept
    # Before start nothing is emitted: only state changes and the default model of assistant
    # messages count there, and the index knows those models.
    state = list(path.rows(before=start, types=STATE_TYPES))
    tail = [row for _, row in path.rows(since=start)]
    values = read_entries(file, [row for _, row in state] + tail, blobs, agent, archive)
    earlier = [(position, value) for (position, _), value in zip(state, values, strict=False)]
    earlier += [(position, _stand_in(row)) for position, row in _named_assistants(path, start)]
    earlier.sort(key=lambda item: item[0])
    return context_of_path([value for _, value in earlier] + values[len(state) :])


def _named_assistants(path: EntryPath, before: Position) -> list[tuple[Position, IndexedEntry]]:
    """The first and the last assistant message before ``before`` naming a provider and a
    model: the first places the ``default`` key (compatibility: Assistant messages without a
    model), the last gives its fallback value (compatibility: Explicit model changes win)."""
    found: dict[Position, IndexedEntry] = {}
    for newest_first in (False, True):
        for position, row in path.rows(
            before=before, types=("message",), newest_first=newest_first
        ):
            if row.role == "assistant" and row.provider and row.model:
                found[position] = row
                break
    return list(found.items())


def _stand_in(row: IndexedEntry) -> dict[str, Any]:
    """An assistant message the context will not emit: only its model matters."""
    message: dict[str, Any] = {"role": "assistant"}
    if row.provider is not None:
        message["provider"] = row.provider
    if row.model is not None:
        message["model"] = row.model
    return {"type": "message", "id": row.id, "parentId": row.parent_id, "message": message}
