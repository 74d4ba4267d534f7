"""Tree walks in SQL: one branch by recursive CTE, the whole tree, and the context of a leaf."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import apsw

from xcsh_store.blobs import BlobStore
from xcsh_store.context import (
    SessionContext,
    build_session_context,
    compaction_keeps_history,
    context_of_path,
)
from xcsh_store.errors import EntryNotFoundError
from xcsh_store.files import open_regular_file
from xcsh_store.index.indexer import synthetic_ids_for
from xcsh_store.jsonl import parse_line
from xcsh_store.loader import load_session, sanitize_openai_replay_metadata
from xcsh_store.migrate import find_header_index
from xcsh_store.persist import rehydrate_entry

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
    children: dict[str | None, list[str]] = field(default_factory=dict)
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
    ends it (D5); the repeat is cut off here. Rows come out leaf first, one per step (the CTE's
    queue is first-in first-out); that order is checked, and rebuilt if it ever differs.
    """
    rows = connection.execute(_WALK_SQL, (file_id, leaf_id)).fetchall()
    if not rows:
        raise EntryNotFoundError(leaf_id)
    seen: set[int] = set()
    path = []
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
    path = walk_to_root(connection, file_id, leaf_id)
    rows = rows_by_pk(connection, [row[0] for row in path])
    return [rows[row[0]] for row in path]


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


def read_entries(
    path: str, rows: list[IndexedEntry], blob_store: BlobStore | None
) -> list[dict[str, Any]]:
    """The JSON objects of ``rows``, read from the file by byte offset, ready for use."""
    values: dict[int, dict[str, Any]] = {}
    with open_regular_file(path) as stream:
        for start, end, members in _line_ranges(rows):
            chunk = os.pread(stream.fileno(), end - start, start)
            for row in members:
                line = chunk[row.offset - start : row.offset - start + row.length]
                parsed = parse_line(line)
                if row.part >= len(parsed):
                    raise FileChangedError(path)
                value = parsed[row.part]
                if row.id is not None:
                    # D25 repairs live in the index, not in the file.
                    value.setdefault("id", row.id)
                    value.setdefault("parentId", row.parent_id)
                if blob_store is not None and b"blob:sha256:" in line:
                    rehydrate_entry(value, blob_store)
                values[row.pk] = value
    ordered = [values[row.pk] for row in rows]
    sanitize_openai_replay_metadata(ordered)
    return ordered


class FileChangedError(EntryNotFoundError):
    """The file no longer has the line the index points at: sync first."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.args = (f"{path} changed since it was indexed; run sync",)


# Entry types whose content matters to the context wherever they are on the path.
STATE_TYPES = frozenset({"thinking_level_change", "model_change", "mode_change", "ttsr_injection"})
# How many messages before the kept part are fetched at once to find the newest assistant one.
MODEL_LOOKBACK = 64


def context_from_index(
    connection: apsw.Connection,
    file_id: int,
    file: str,
    leaf_id: str | None,
    legacy: bool,
    blobs: BlobStore | None,
) -> SessionContext:
    """``build_session_context`` of one leaf, reading only the lines that can matter.

    The path comes from the index. Behind the newest compaction, only the entries it keeps and
    the state changes (thinking level, models, mode, rules) are read; of the rest, the context
    only takes the model of the newest assistant message, which the index knows.
    """
    if legacy:
        # v1/v2 files: ids exist only after migration, which needs the whole file.
        loaded = load_session(file, blob_store=blobs, new_id=synthetic_ids_for(file))
        entries = loaded.entries[find_header_index(loaded.entries) + 1 :]
        return build_session_context(entries, leaf_id) if entries else SessionContext()
    if leaf_id is None:
        return SessionContext()
    path = walk_to_root(connection, file_id, leaf_id)
    compactions = [index for index, row in enumerate(path) if row[3] == "compaction"]
    if not compactions:
        return context_of_path(read_entries(file, branch_rows(connection, file_id, leaf_id), blobs))
    last = compactions[-1]
    (compaction,) = read_entries(
        file, list(rows_by_pk(connection, [path[last][0]]).values()), blobs
    )
    keep_from = last + 1
    if compaction_keeps_history(compaction):
        first_kept = compaction.get("firstKeptEntryId")
        for index in range(last):
            if first_kept is not None and path[index][1] == first_kept:
                keep_from = index
                break
    # Before keep_from nothing is emitted: only state changes and the newest assistant model
    # count there (a later assistant message overrides that model anyway).
    earlier = [row[0] for row in path[:keep_from] if row[3] in STATE_TYPES]
    messages = [row[0] for row in path[:keep_from] if row[3] == "message"]
    kept = [row[0] for index, row in enumerate(path) if index >= keep_from and index != last]
    rows = rows_by_pk(connection, earlier + kept + messages[-MODEL_LOOKBACK:])
    wanted = [rows[pk] for pk in earlier + kept]
    values = dict(zip(earlier + kept, read_entries(file, wanted, blobs), strict=True))
    values[path[last][0]] = compaction
    reduced = [values[pk] for pk in earlier]
    assistant = next(
        (rows[pk] for pk in reversed(messages[-MODEL_LOOKBACK:]) if rows[pk].role == "assistant"),
        None,
    )
    if assistant is None and messages[:-MODEL_LOOKBACK]:
        assistant = _newest_assistant(connection, messages[:-MODEL_LOOKBACK])
    if assistant is not None:
        reduced.append(_stand_in(assistant))
    reduced += [values[row[0]] for row in path[min(keep_from, last) :]]
    return context_of_path(reduced)


def _newest_assistant(connection: apsw.Connection, pks: list[int]) -> IndexedEntry | None:
    rows = rows_by_pk(connection, pks)
    return next((rows[pk] for pk in reversed(pks) if rows[pk].role == "assistant"), None)


def _stand_in(row: IndexedEntry) -> dict[str, Any]:
    """An assistant message the context will not emit: only its model matters."""
    message: dict[str, Any] = {"role": "assistant"}
    if row.provider is not None:
        message["provider"] = row.provider
    if row.model is not None:
        message["model"] = row.model
    return {"type": "message", "id": row.id, "parentId": row.parent_id, "message": message}
