"""Reading session files: lenient parse, header check, migration, blob rehydration."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO

import orjson

from xcsh_store.files import open_regular_file
from xcsh_store.format.blobs import BLOB_REF_PREFIX, BlobStore
from xcsh_store.format.jsonl import BOM, READ_CHUNK, parse_jsonl_bytes, parse_line
from xcsh_store.format.persist import rehydrate_entry
from xcsh_store.format.storage import FileSessionStorage, SessionStorage
from xcsh_store.format.versions import (
    IdFactory,
    is_valid_session,
    migrate_session_entries,
    random_entry_id,
)

_BLOB_MARKER = BLOB_REF_PREFIX.encode()
_REPLAY_MARKER = b'"openaiResponsesHistory"'
_ESCAPE_MARKER = b"\\u"


@dataclass(slots=True)
class SessionFileContents:
    """Every object of a session file in order, and which of them need a second look: those
    that mention a blob ref, and those that may carry OpenAI replay metadata. ``unterminated``:
    the file does not end with a newline (its last line was cut by a crash or a full disk, or
    its writer left the final newline out)."""

    entries: list[dict[str, Any]] = field(default_factory=list)
    with_blob_refs: list[int] = field(default_factory=list)
    with_replay_metadata: list[int] = field(default_factory=list)
    unterminated: bool = False


def parse_session_entries(text: str) -> list[dict[str, Any]]:
    """Every JSON object in JSONL ``text``, leniently, without checking for a header."""
    return parse_jsonl_bytes(text.encode("utf-8", "surrogatepass"))


def read_session_file(path: str, storage: SessionStorage | None = None) -> SessionFileContents:
    """All objects of a file. A missing file reads as empty; other OS errors propagate."""
    contents = SessionFileContents()
    try:
        with _collector_paused():
            if storage is None or isinstance(storage, FileSessionStorage):
                with open_regular_file(path) as stream:
                    for lines, buffer in _line_batches(stream):
                        _add_lines(contents, lines, buffer)
                        contents.unterminated = not buffer.endswith(b"\n")
            else:
                data = storage.read_bytes(path).removeprefix(BOM)
                _add_lines(contents, data.split(b"\n"), data)
                contents.unterminated = bool(data) and not data.endswith(b"\n")
    except FileNotFoundError:
        return SessionFileContents()
    return contents


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Run a parse without the cyclic garbage collector.

    Parsing creates millions of objects and no reference cycles, and the collector would walk
    the growing heap again and again (about a third of the time of opening a big session).
    Afterwards the new objects go straight to the oldest generation: freeze() then unfreeze()
    moves every tracked object there without walking any of them. Skipped when the host
    application has frozen objects itself, since unfreeze() would release them.
    """
    if not gc.isenabled() or gc.get_freeze_count():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.unfreeze()
        gc.enable()


def _line_batches(stream: BinaryIO) -> Iterator[tuple[list[bytes], bytes]]:
    """The lines of a file a chunk at a time, split in C rather than line by line in Python,
    each batch with the bytes it came from. A leading BOM is skipped; the last line may lack
    its newline."""
    # The pieces of a line that has not ended yet, joined once when it ends (see iter_lines).
    pending: list[bytes] = []
    first = True
    while chunk := stream.read(READ_CHUNK):
        if first:
            chunk = chunk.removeprefix(BOM)
            first = False
            if not chunk:
                continue
        if b"\n" not in chunk:
            pending.append(chunk)
            continue
        buffer = b"".join([*pending, chunk]) if pending else chunk
        lines = buffer.split(b"\n")
        rest = lines.pop()
        pending = [rest] if rest else []
        yield lines, buffer
    if pending:
        rest = b"".join(pending)
        yield [rest], rest


def _add_lines(contents: SessionFileContents, lines: list[bytes], buffer: bytes) -> None:
    """Parse ``lines``; the marker searches run per line only if ``buffer`` holds a marker."""
    entries = contents.entries
    append = entries.append
    loads = orjson.loads
    marked = [
        (marker, found)
        for marker, found in (
            (_BLOB_MARKER, contents.with_blob_refs),
            # A \u escape can spell any character of a ref: such lines get the second look too.
            (_ESCAPE_MARKER, contents.with_blob_refs),
            (_REPLAY_MARKER, contents.with_replay_metadata),
        )
        if marker in buffer
    ]
    for line in lines:
        if not line or line.isspace():
            continue
        # The common case (one object per line) inline: this loop runs for every line of a
        # session and a call plus a one-element list per line is measurable on big files.
        try:
            value = loads(line)
        except orjson.JSONDecodeError:
            values = parse_line(line)
        else:
            if type(value) is not dict:
                continue
            if not marked:
                append(value)
                continue
            values = [value]
        for marker, found in marked:
            if marker in line and not (found and found[-1] >= len(entries)):
                found.extend(range(len(entries), len(entries) + len(values)))
        entries.extend(values)


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
    unterminated: bool = False


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
    sanitize_openai_replay_metadata([contents.entries[i] for i in contents.with_replay_metadata])
    return LoadedSession(contents.entries, migrated, contents.unterminated)


def sanitize_openai_replay_metadata(entries: list[dict[str, Any]]) -> bool:
    """Drop stale OpenAI replay data from loaded assistant messages, in memory only
    (compatibility: OpenAI replay data dropped in memory only).

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
