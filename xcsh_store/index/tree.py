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
from xcsh_store.index.sync import synthetic_ids_for
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


def branch_rows(connection: apsw.Connection, file_id: int, leaf_id: str) -> list[IndexedEntry]:
    """Root -> leaf. ``UNION`` (not ``UNION ALL``) drops a row already produced, so a cycle in
    the parent ids ends the walk instead of looping (D5)."""
    rows = connection.execute(
        "WITH RECURSIVE walk(pk, parent_id) AS ("
        "  SELECT pk, parent_id FROM entries WHERE session = ?1 AND id = ?2"
        "  UNION"
        "  SELECT e.pk, e.parent_id FROM walk JOIN entries AS e"
        "  ON e.session = ?1 AND e.id = walk.parent_id"
        f") SELECT {_ENTRY_COLUMNS} FROM entries WHERE pk IN (SELECT pk FROM walk)",
        (file_id, leaf_id),
    ).fetchall()
    if not rows:
        raise EntryNotFoundError(leaf_id)
    by_id = {row[2]: IndexedEntry(*row) for row in rows}
    path = [by_id[leaf_id]]
    seen = {leaf_id}
    while True:
        parent = by_id.get(path[-1].parent_id) if path[-1].parent_id else None
        if parent is None or parent.id in seen:
            break
        seen.add(parent.id)  # type: ignore[arg-type]
        path.append(parent)
    path.reverse()
    return path


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
    with open(path, "rb") as stream:
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


def context_from_index(
    connection: apsw.Connection,
    file_id: int,
    path: str,
    leaf_id: str | None,
    legacy: bool,
    blob_store: BlobStore | None,
) -> SessionContext:
    """``build_session_context`` of one leaf, reading only the lines that can matter.

    The path comes from the index. Behind the newest compaction, only the entries it keeps and
    the state changes (thinking level, models, mode, rules) are read; every other entry there is
    stood in for by what the index knows of it (its type, and the model of an assistant message,
    which is all the context takes from those).
    """
    if legacy:
        # v1/v2 files: ids exist only after migration, which needs the whole file.
        loaded = load_session(path, blob_store=blob_store, new_id=synthetic_ids_for(path))
        entries = loaded.entries[find_header_index(loaded.entries) + 1 :]
        return build_session_context(entries, leaf_id) if entries else SessionContext()
    if leaf_id is None:
        return SessionContext()
    rows = branch_rows(connection, file_id, leaf_id)
    compactions = [index for index, row in enumerate(rows) if row.type == "compaction"]
    if not compactions:
        return context_of_path(read_entries(path, rows, blob_store))
    last = compactions[-1]
    (compaction,) = read_entries(path, [rows[last]], blob_store)
    keep_from = last + 1
    if compaction_keeps_history(compaction):
        first_kept = compaction.get("firstKeptEntryId")
        for index in range(last):
            if first_kept is not None and rows[index].id == first_kept:
                keep_from = index
                break
    wanted = [
        row for index, row in enumerate(rows)
        if (index >= keep_from and index != last) or row.type in STATE_TYPES
    ]  # fmt: skip
    values = dict(
        zip((row.pk for row in wanted), read_entries(path, wanted, blob_store), strict=True)
    )
    values[rows[last].pk] = compaction
    return context_of_path([values.get(row.pk) or _stand_in(row) for row in rows])


def _stand_in(row: IndexedEntry) -> dict[str, Any]:
    """An entry the context will not emit: its type, and the model of an assistant message."""
    entry: dict[str, Any] = {"type": row.type, "id": row.id, "parentId": row.parent_id}
    if row.type == "message" and row.role == "assistant":
        message: dict[str, Any] = {"role": "assistant"}
        if row.provider is not None:
            message["provider"] = row.provider
        if row.model is not None:
            message["model"] = row.model
        entry["message"] = message
    return entry
