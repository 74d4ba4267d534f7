"""A session as a tree (its entries with their children) and the context of a leaf, over the
entry paths of the core (index/model/paths.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import apsw

from xcsh_store.format.blobs import BlobStore
from xcsh_store.format.context import (
    SessionContext,
    build_session_context,
    compaction_keeps_history,
    context_of_path,
)
from xcsh_store.format.loader import load_session
from xcsh_store.format.versions import find_header_index, synthetic_ids_for
from xcsh_store.index.archive.sources import ArchivedSources, readable_copy
from xcsh_store.index.model.paths import (
    EntryPath,
    FileChangedError,
    IndexedEntry,
    Position,
    entry_path,
    read_entries,
)


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
