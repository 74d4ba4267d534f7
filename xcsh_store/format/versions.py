"""Session format versions: v1 -> v2 -> v3, plus the repairs of odd headers and missing ids.

(compatibility: Session file format as in the reference; Header versions read leniently; A second
header is an opaque record; Entries without id or parentId)
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Collection
from typing import Any

from xcsh_store.paths import new_entry_id

CURRENT_SESSION_VERSION = 3

HEADER_TYPE = "session"
TITLE_TYPE = "title"

# The entry types xcsh writes. Records of other types are kept as they are (compatibility: Entry
# types beyond the eleven).
KNOWN_ENTRY_TYPES = frozenset(
    {
        "message",
        "thinking_level_change",
        "service_tier_change",
        "mode_change",
        "model_change",
        "context_change",
        "session_init",
        "compaction",
        "branch_summary",
        "custom",
        "custom_message",
        "label",
        "ttsr_injection",
        "mcp_tool_selection",
    }
)

# Makes a new entry id, given the ids in use and the entry's position in the list.
IdFactory = Callable[[Collection[str], int], str]


def random_entry_id(existing: Collection[str], position: int) -> str:
    return new_entry_id(existing)


class _SyntheticIds:
    """Deterministic entry ids for files that need them (v1, missing ids), so any re-parse
    agrees: the index shows the ids a later ``migrate`` writes into the file (compatibility:
    Deterministic ids for files without them).

    The id of the object at position ``seq`` of a file depends only on the file name and that
    position.
    """

    def __init__(self, seed: str) -> None:
        self.seed = seed

    def __call__(self, existing: Collection[str], position: int) -> str:
        attempt = 0
        while True:
            seed = f"{self.seed}:{position}:{attempt}".encode()
            candidate = hashlib.sha1(seed).hexdigest()[:8]
            if candidate not in existing:
                return candidate
            attempt += 1


def synthetic_ids_for(path: str) -> IdFactory:
    """The deterministic id factory of the session file at ``path`` (seeded by its name)."""
    return _SyntheticIds(os.path.basename(path))


def find_header_index(entries: list[dict[str, Any]]) -> int | None:
    """Position of the header: the first ``session`` record; ``title`` records may come first
    (compatibility: Title records before the header)."""
    for index, entry in enumerate(entries):
        if entry.get("type") == HEADER_TYPE:
            return index
    return None


def is_valid_session(entries: list[dict[str, Any]]) -> bool:
    """A session starts with its header (after optional ``title`` records) and has a string id."""
    for entry in entries:
        kind = entry.get("type")
        if kind == TITLE_TYPE:
            continue
        return kind == HEADER_TYPE and isinstance(entry.get("id"), str)
    return False


def session_version(header: dict[str, Any]) -> int:
    """The header's version: absent or not a positive integer counts as 1 (compatibility: Header
    versions read leniently)."""
    version = header.get("version")
    if isinstance(version, str) and version.strip().isascii() and version.strip().isdigit():
        version = int(version)
    elif isinstance(version, float) and version.is_integer():
        version = int(version)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        return 1
    return version


def migrate_session_entries(
    entries: list[dict[str, Any]], new_id: IdFactory = random_entry_id
) -> bool:
    """Bring ``entries`` (title records, header, entries) to the current version in place.

    Returns whether anything changed. ``new_id`` makes new entry ids; the index passes a
    deterministic one so that re-parsing a file gives the same ids.
    """
    header_index = find_header_index(entries)
    if header_index is None:
        return False
    header = entries[header_index]
    body = entries[header_index + 1 :]
    version = session_version(header)
    changed = False
    if version < 2:
        _migrate_v1_to_v2(entries, header_index, new_id)
        changed = True
    if version < 3:
        header["version"] = CURRENT_SESSION_VERSION
        for entry in body:
            message = entry.get("message")
            if (
                entry.get("type") == "message"
                and isinstance(message, dict)
                and message.get("role") == "hookMessage"
            ):
                message["role"] = "custom"
        changed = True
    if _repair_missing_links(entries, header_index, new_id):
        changed = True
    return changed


def _migrate_v1_to_v2(entries: list[dict[str, Any]], header_index: int, new_id: IdFactory) -> None:
    header = entries[header_index]
    header["version"] = 2
    assigned: set[str] = set()
    previous_id: str | None = None
    for position in range(header_index + 1, len(entries)):
        entry = entries[position]
        if entry.get("type") == HEADER_TYPE:
            continue  # (compatibility: A second header is an opaque record)
        entry_id = new_id(assigned, position)
        assigned.add(entry_id)
        entry["id"] = entry_id
        entry["parentId"] = previous_id
        previous_id = entry_id
        if entry.get("type") == "compaction" and "firstKeptEntryIndex" in entry:
            _convert_first_kept_index(entry, entries, header_index)


def _convert_first_kept_index(
    compaction: dict[str, Any], entries: list[dict[str, Any]], header_index: int
) -> None:
    index = compaction["firstKeptEntryIndex"]
    if isinstance(index, bool) or not isinstance(index, (int, float)):
        return
    del compaction["firstKeptEntryIndex"]
    # The legacy index counts the header as 0. Later entries have no new id yet, so they give
    # whatever id they had before (usually none), exactly as the reference does.
    if isinstance(index, float) and not index.is_integer():
        return
    position = header_index + int(index)
    if int(index) < 0 or position >= len(entries):
        return
    target = entries[position]
    if target.get("type") == HEADER_TYPE:
        return
    target_id = target.get("id")
    if target_id is not None:
        compaction["firstKeptEntryId"] = target_id


def _repair_missing_links(
    entries: list[dict[str, Any]], header_index: int, new_id: IdFactory
) -> bool:
    """Entries without ``id`` get one; records without ``parentId`` follow the previous one
    (compatibility: Entries without id or parentId)."""
    body = entries[header_index + 1 :]
    if all("id" in entry and "parentId" in entry for entry in body if _is_tree_record(entry)):
        return False
    existing = {entry["id"] for entry in body if isinstance(entry.get("id"), str)}
    changed = False
    previous_id: str | None = None
    for position in range(header_index + 1, len(entries)):
        entry = entries[position]
        if entry.get("type") == HEADER_TYPE:
            continue
        if "id" not in entry and entry.get("type") in KNOWN_ENTRY_TYPES:
            entry["id"] = new_id(existing, position)
            existing.add(entry["id"])
            changed = True
        if "id" not in entry:
            continue
        if "parentId" not in entry:
            entry["parentId"] = previous_id
            changed = True
        previous_id = entry["id"]
    return changed


def _is_tree_record(entry: dict[str, Any]) -> bool:
    kind = entry.get("type")
    return kind in KNOWN_ENTRY_TYPES or ("id" in entry and kind != HEADER_TYPE)
