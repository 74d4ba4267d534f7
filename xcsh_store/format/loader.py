"""Reading session files: lenient parse, header check, migration, blob rehydration."""

from __future__ import annotations

import bisect
import contextlib
import gc
import itertools
import operator
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

# What makes an entry worth a second look on load: a blob ref, a \u escape (which can spell
# any character of a ref), and OpenAI replay metadata. The first two fill with_blob_refs.
_MARKERS = (BLOB_REF_PREFIX.encode(), b"\\u", b'"openaiResponsesHistory"')


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


def read_session_file(
    path: str, storage: SessionStorage | None = None, *, markers: bool = True
) -> SessionFileContents:
    """All objects of a file. A missing file reads as empty; other OS errors propagate.

    ``markers``: also note which objects need a second look (``with_blob_refs``,
    ``with_replay_metadata``); a caller that only wants the objects saves a search of every
    byte for each marker.
    """
    contents = SessionFileContents()
    try:
        with _collector_paused():
            if storage is None or isinstance(storage, FileSessionStorage):
                with open_regular_file(path) as stream:
                    for lines, buffer in _line_batches(stream):
                        _add_lines(contents, lines, buffer, markers)
                        contents.unterminated = not buffer.endswith(b"\n")
            else:
                data = storage.read_bytes(path).removeprefix(BOM)
                lines = data.split(b"\n")
                if not lines[-1]:
                    lines.pop()  # the empty piece after the last newline
                _add_lines(contents, lines, data, markers)
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


def _add_lines(
    contents: SessionFileContents, lines: list[bytes], buffer: bytes, markers: bool
) -> None:
    """Parse one batch of ``lines`` cut from ``buffer`` (their bytes, newlines included).

    Almost every line is one JSON object. Runs of such lines are parsed by a loop that does
    nothing else (the loader stays close to a bare orjson line loop), and the lines of a run
    that mention a marker are found by searching the buffer, not line by line. A line that
    fails goes to the careful loop alone, and so does a run holding a value that is not an
    object (parsed again there: rare, and correct whatever the bytes).
    """
    # Where each line ends (just past its newline), to tell which line a marker is on.
    ends = (
        list(map(operator.add, itertools.accumulate(map(len, lines)), itertools.count(1)))
        if markers
        else []
    )
    start = 0
    while start < len(lines):
        values = _objects_until_a_failure(lines, start)
        stop = start + len(values)
        if all(type(value) is dict for value in values):
            if markers:
                _mark_run(contents, buffer, ends, start, stop)
            contents.entries.extend(values)
        else:
            _add_irregular_lines(contents, lines[start:stop], buffer, markers)
        if stop < len(lines):
            _add_irregular_lines(contents, lines[stop : stop + 1], buffer, markers)
        start = stop + 1


def _objects_until_a_failure(lines: list[bytes], start: int) -> list[Any]:
    """The values of ``lines[start:]`` up to the first line orjson cannot parse, alone."""
    values: list[Any] = []
    append = values.append
    loads = orjson.loads
    # One try around the loop: it costs nothing until a line fails, which ends the run.
    with contextlib.suppress(orjson.JSONDecodeError):
        for line in itertools.islice(lines, start, None):
            append(loads(line))
    return values


def _mark_run(
    contents: SessionFileContents, buffer: bytes, ends: list[int], start: int, stop: int
) -> None:
    """Note the objects of lines ``start`` to ``stop`` (one object each, about to be appended
    to the entries) that mention a marker."""
    first = len(contents.entries) - start  # the entry index of line i is first + i
    begin = ends[start - 1] if start else 0
    limit = ends[stop - 1] if stop else 0
    blob, escape, replay = (
        _marked_lines(buffer, ends, marker, begin, limit) for marker in _MARKERS
    )
    if blob and escape:
        blob = sorted({*blob, *escape})
    contents.with_blob_refs.extend(first + line for line in blob or escape)
    contents.with_replay_metadata.extend(first + line for line in replay)


def _marked_lines(
    buffer: bytes, ends: list[int], marker: bytes, begin: int, limit: int
) -> list[int]:
    """The indices of the lines holding ``marker`` between byte ``begin`` and ``limit`` of
    ``buffer``, in order; line ``i`` ends at ``ends[i]``."""
    lines: list[int] = []
    position = buffer.find(marker, begin, limit)
    while position >= 0:
        line = bisect.bisect_right(ends, position)
        lines.append(line)
        position = buffer.find(marker, ends[line], limit)
    return lines


def _add_irregular_lines(
    contents: SessionFileContents, lines: list[bytes], buffer: bytes, markers: bool
) -> None:
    """Parse ``lines`` one by one, recovering what ``parse_line`` can; the marker searches run
    per line only if ``buffer`` holds a marker."""
    entries = contents.entries
    append = entries.append
    loads = orjson.loads
    marked = [
        (marker, found)
        for marker, found in zip(
            _MARKERS,
            (contents.with_blob_refs, contents.with_blob_refs, contents.with_replay_metadata),
            strict=True,
        )
        if markers and marker in buffer
    ]
    for line in lines:
        if not line or line.isspace():
            continue
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
    entries = read_session_file(path, storage, markers=False).entries
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
