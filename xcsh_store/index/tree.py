"""Tree walks in SQL: one branch by recursive CTE, the whole tree, and the context of a leaf."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import apsw

from xcsh_store.blobs import BlobStore
from xcsh_store.context import SessionContext, build_session_context, context_of_path
from xcsh_store.errors import EntryNotFoundError
from xcsh_store.files import open_regular_file
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


def read_entries(
    path: str, rows: list[IndexedEntry], blob_store: BlobStore | None
) -> list[dict[str, Any]]:
    """The JSON objects of ``rows``, read from the file by byte offset, ready for use."""
    values: dict[int, dict[str, Any]] = {}
    with open_regular_file(path) as stream:
        for row in sorted(rows, key=lambda item: item.offset):
            line = os.pread(stream.fileno(), row.length, row.offset)
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


def context_from_index(
    connection: apsw.Connection,
    file_id: int,
    path: str,
    leaf_id: str | None,
    legacy: bool,
    blob_store: BlobStore | None,
) -> SessionContext:
    """``build_session_context`` of one leaf, reading only the lines on its path."""
    if legacy:
        # v1/v2 files: ids exist only after migration, which needs the whole file.
        loaded = load_session(path, blob_store=blob_store, new_id=synthetic_ids_for(path))
        entries = loaded.entries[find_header_index(loaded.entries) + 1 :]
        return build_session_context(entries, leaf_id) if entries else SessionContext()
    if leaf_id is None:
        return SessionContext()
    return context_of_path(
        read_entries(path, branch_rows(connection, file_id, leaf_id), blob_store)
    )
