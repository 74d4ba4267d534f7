"""Reading session files: lenient parse, header check, migration, blob rehydration."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from xcsh_store.blobs import BLOB_REF_PREFIX, BlobStore
from xcsh_store.jsonl import BOM, iter_lines, parse_jsonl_bytes, parse_line
from xcsh_store.migrate import (
    IdFactory,
    is_valid_session,
    migrate_session_entries,
    random_entry_id,
)
from xcsh_store.persist import rehydrate_entry
from xcsh_store.storage import FileSessionStorage, SessionStorage

_BLOB_MARKER = BLOB_REF_PREFIX.encode()


@dataclass(slots=True)
class SessionFileContents:
    """Every object of a session file in order, and which of them mention a blob ref."""

    entries: list[dict[str, Any]] = field(default_factory=list)
    with_blob_refs: list[int] = field(default_factory=list)


def parse_session_entries(text: str) -> list[dict[str, Any]]:
    """Every JSON object in JSONL ``text``, leniently, without checking for a header."""
    return parse_jsonl_bytes(text.encode("utf-8", "surrogatepass"))


def read_session_file(path: str, storage: SessionStorage | None = None) -> SessionFileContents:
    """All objects of a file. A missing file reads as empty; other OS errors propagate."""
    contents = SessionFileContents()
    try:
        if storage is None or isinstance(storage, FileSessionStorage):
            with open(path, "rb") as stream:
                for _offset, line in iter_lines(stream):
                    _add_line(contents, line)
        else:
            for line in storage.read_bytes(path).removeprefix(BOM).split(b"\n"):
                _add_line(contents, line)
    except FileNotFoundError:
        return SessionFileContents()
    return contents


def _add_line(contents: SessionFileContents, line: bytes) -> None:
    if not line or line.isspace():
        return
    values = parse_line(line)
    if values and _BLOB_MARKER in line:
        first = len(contents.entries)
        contents.with_blob_refs.extend(range(first, first + len(values)))
    contents.entries.extend(values)


def load_entries_from_file(
    path: str, storage: SessionStorage | None = None
) -> list[dict[str, Any]]:
    """The file's objects (title records, header, entries), or [] when it is not a session.

    Missing, empty, or without a valid header (a ``session`` record with a string id, after
    optional ``title`` records) all give []. No migration happens here.
    """
    entries = read_session_file(path, storage).entries
    return entries if is_valid_session(entries) else []


@dataclass(slots=True)
class LoadedSession:
    entries: list[dict[str, Any]]
    migrated: bool


def load_session(
    path: str,
    storage: SessionStorage | None = None,
    blob_store: BlobStore | None = None,
    new_id: IdFactory = random_entry_id,
) -> LoadedSession:
    """A session ready for use: migrated, blob refs resolved, OpenAI replay data sanitised.

    ``entries`` is empty when the file is missing or not a valid session.
    """
    contents = read_session_file(path, storage)
    if not is_valid_session(contents.entries):
        return LoadedSession([], False)
    migrated = migrate_session_entries(contents.entries, new_id)
    if blob_store is not None:
        for index in contents.with_blob_refs:
            rehydrate_entry(contents.entries[index], blob_store)
    sanitize_openai_replay_metadata(contents.entries)
    return LoadedSession(contents.entries, migrated)


def sanitize_openai_replay_metadata(entries: list[dict[str, Any]]) -> bool:
    """Drop stale OpenAI replay data from loaded assistant messages, in memory only (D17).

    Assistant messages whose ``providerPayload`` is an ``openaiResponsesHistory`` lose it, and
    their thinking blocks lose ``thinkingSignature``. The message is replaced by a copy.
    """
    changed = False
    for entry in entries:
        message = entry.get("message")
        if entry.get("type") != "message" or type(message) is not dict:
            continue
        payload = message.get("providerPayload")
        if message.get("role") != "assistant" or type(payload) is not dict:
            continue
        if payload.get("type") != "openaiResponsesHistory":
            continue
        copy = {key: value for key, value in message.items() if key != "providerPayload"}
        if type(copy.get("content")) is list:
            copy["content"] = [_without_thinking_signature(block) for block in copy["content"]]
        entry["message"] = copy
        changed = True
    return changed


def _without_thinking_signature(block: Any) -> Any:
    if type(block) is dict and block.get("type") == "thinking" and "thinkingSignature" in block:
        return {key: value for key, value in block.items() if key != "thinkingSignature"}
    return block
