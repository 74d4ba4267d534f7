"""The lean read of a file whose usage lines the agent's own reader reads (Gemini CLI, Qwen
Code, GitHub Copilot CLI): the lines at the head of the file that name the session, then only
the lines a byte search finds a key of usage (or of the facts usage needs) in, each parsed as
the full read parses it and read by the reader, in file order. Every other line (the prompts,
the answers' text, the tools' output) is neither parsed nor read, and no entry row is written.

Each format's needles are what its reader needs beside the head (a JSON string cannot hold an
unescaped quote, so a quoted needle matches only a key or a whole string value):

* Gemini CLI: a ``gemini`` message's ``"tokens"``; the ``<session_context>`` record that names
  the cwd (gemini.py: the file names no cwd; found by the tag's name, brackets escaped or
  not). Line 1, the metadata, names the session.
* Qwen Code: an assistant line's ``"usageMetadata"``; the head is read to the first line that
  names a cwd (the first line names the session).
* GitHub Copilot CLI: ``"session.shutdown"`` (the only usage), and the events that change the
  model it is counted under (``session.start``, ``session.model_change``, ``session.resume``).

A Gemini CLI ``gemini`` record and a Qwen Code ``assistant`` line of the usual shape are not
given to the reader: msgspec decodes the few fields its usage comes from (the rest, the
answer's text, thoughts and tool calls, is skipped without making a Python object of it), and
the reader's own function prices them (gemini_usage, qwen_usage); any other line, or one of a
shape the reader might read otherwise (a ``$set`` in a record, thoughts that are not a list),
is the reader's. A record read here counts as the full read counts it: a later record of the
same entry id or usage key replaces an earlier one (found.counted).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec

from xcsh_store.agents import Agent, SessionFacts, read_entry
from xcsh_store.agents.base import text_of
from xcsh_store.agents.copilot import READER as COPILOT
from xcsh_store.agents.gemini import CONTEXT_TAG, REWIND_KEY, SET_KEY, TOOL_RESULT_KEY, gemini_usage
from xcsh_store.agents.gemini import READER as GEMINI
from xcsh_store.agents.qwen import READER as QWEN
from xcsh_store.agents.qwen import qwen_usage
from xcsh_store.index.model.facts import storable_values
from xcsh_store.index.write.build import agent_entry_id
from xcsh_store.index.write.lean.codex import line_starts
from xcsh_store.index.write.lean.found import (
    SEQS_PER_BYTE,
    UsageRead,
    UsageRequest,
    counted,
    line_end,
)
from xcsh_store.times import canonical_iso

# A line's request from the typed decoding (None: the reader reads the line).
Typed = Callable[[bytes, int], UsageRequest | None]


@dataclass(frozen=True)
class LeanFormat:
    """An agent whose usage lines its reader reads: the needles of those lines, when the head
    of a file has said what the reader learns of the session from it, and the typed decoding
    of the usual usage line (after the head)."""

    reader: Agent
    needles: tuple[bytes, ...]
    head_read: Callable[[SessionFacts], bool]
    typed: Typed | None = None


_ABSENT = msgspec.Raw(b"")
# What GeminiReader._gemini iterates: a list, null or nothing (a truthy scalar would fail it).
_ITERABLE = (b"", b"[", b"n")


class _GeminiRecord(msgspec.Struct):
    type: Any = None
    id: Any = None
    timestamp: Any = None
    model: Any = None
    tokens: Any = None
    thoughts: msgspec.Raw = _ABSENT
    toolCalls: msgspec.Raw = _ABSENT  # (Gemini CLI's names)
    tool_result: msgspec.Raw = msgspec.field(default=_ABSENT, name=TOOL_RESULT_KEY)
    set_fields: msgspec.Raw = msgspec.field(default=_ABSENT, name=SET_KEY)
    rewind: msgspec.Raw = msgspec.field(default=_ABSENT, name=REWIND_KEY)


_GEMINI_DECODER = msgspec.json.Decoder(_GeminiRecord)


def _gemini_request(line: bytes, seq: int) -> UsageRequest | None:
    """A ``gemini`` message record's request, as GeminiReader.read gives it."""
    try:
        record = _GEMINI_DECODER.decode(line)
    except msgspec.DecodeError:
        return None
    if (
        record.type != "gemini"
        or len(record.tool_result) + len(record.set_fields) + len(record.rewind)
        or bytes(record.thoughts)[:1] not in _ITERABLE
        or bytes(record.toolCalls)[:1] not in _ITERABLE
    ):
        return None
    entry_id, model = text_of(record.id), text_of(record.model)
    timestamp, tokens = text_of(record.timestamp), record.tokens
    if type(tokens) is not dict or entry_id is None:
        return UsageRequest(seq, entry_id, timestamp, model, None, None)
    usage = gemini_usage(tokens, model, timestamp)
    return UsageRequest(seq, entry_id, timestamp, model, usage, f"gemini:{entry_id}")


class _QwenLine(msgspec.Struct):
    type: Any = None
    uuid: Any = None
    timestamp: Any = None
    model: Any = None
    usageMetadata: Any = None  # (Qwen Code's name)


_QWEN_DECODER = msgspec.json.Decoder(_QwenLine)


def _qwen_request(line: bytes, seq: int) -> UsageRequest | None:
    """An ``assistant`` line's request, as QwenReader.read gives it (its head read: the
    session's id and cwd known)."""
    try:
        decoded = _QWEN_DECODER.decode(line)
    except msgspec.DecodeError:
        return None
    if decoded.type != "assistant":
        return None
    entry_id, model = text_of(decoded.uuid), text_of(decoded.model)
    timestamp, usage = text_of(decoded.timestamp), decoded.usageMetadata
    if type(usage) is not dict:
        return UsageRequest(seq, entry_id, timestamp, model, None, None)
    figures = qwen_usage(usage, model, timestamp)
    return UsageRequest(seq, entry_id, timestamp, model, figures, f"qwen:{entry_id}")


def _named(session: SessionFacts) -> bool:
    return session.session_id is not None


def _named_with_cwd(session: SessionFacts) -> bool:
    return session.session_id is not None and session.cwd is not None


# The tag's name without its brackets: a writer may escape ``<`` and ``>`` (``\u003c``).
_CONTEXT_NAME = CONTEXT_TAG.strip("<>").encode()
_COPILOT_NEEDLES = (
    b'"session.shutdown"', b'"session.start"', b'"session.model_change"', b'"session.resume"'
)  # fmt: skip
FORMATS = {
    lean.reader.name: lean
    for lean in (
        LeanFormat(GEMINI, (b'"tokens"', _CONTEXT_NAME), _named, _gemini_request),
        LeanFormat(QWEN, (b'"usageMetadata"',), _named_with_cwd, _qwen_request),
        LeanFormat(COPILOT, _COPILOT_NEEDLES, _named),
    )
}


def read_by_reader(lean: LeanFormat, path: str, data: bytes) -> UsageRead:
    """The requests of a file of ``lean``'s agent, as its reader reads them."""
    reader = lean.reader
    found = UsageRead(reader, SessionFacts(path))
    session = found.session
    stamps: list[str] = []
    # Entries without usage too: a later record of an id replaces its usage (found.counted).
    read: list[UsageRequest] = []
    head = 0
    while head < len(data) and not lean.head_read(session):
        end = line_end(data, head, head)
        if end is None:
            break
        _read_line(reader, None, data[head:end], head, read, stamps, session)
        head = end + 1
    for start in line_starts(data, lean.needles):
        if start < head:
            continue
        end = line_end(data, start, start)
        if end is None:
            break
        _read_line(reader, lean.typed, data[start:end], start, read, stamps, session)
    if session.created_at:
        stamps.append(session.created_at)
    known = [stamp for stamp in map(canonical_iso, stamps) if stamp is not None]
    found.activity_at = max(known) if known else None
    found.requests = [request for request in counted(read) if request.usage is not None]
    return found


def _read_line(
    reader: Agent, typed: Typed | None, line: bytes, start: int, read: list[UsageRequest],
    stamps: list[str], session: SessionFacts,
) -> None:  # fmt: skip
    """Read the line that begins at ``start`` (by ``typed`` when it can)."""
    seq = start * SEQS_PER_BYTE
    request = None if typed is None else typed(line, seq)
    if request is not None:
        if request.timestamp is not None:
            stamps.append(request.timestamp)
        if request.usage is not None or request.entry_id is not None:
            read.append(request)
        return
    for part, value in enumerate(storable_values(line, b"\\u" in line)):
        read_value(reader, value, seq + part, read, stamps, session)


def read_value(
    reader: Agent, value: dict[str, Any], seq: int, read: list[UsageRequest],
    stamps: list[str], session: SessionFacts,
) -> None:  # fmt: skip
    """Read one record as the full read reads it: its request (an entry without usage too,
    for found.counted) into ``read``, its time into ``stamps``."""
    found = read_entry(reader, value, session)
    entry = found.entry
    entry_id = text_of(entry.get("id"))
    if not reader.has_ids or found.chained:
        # (An id unlike any other file's, as the full read gives.)
        entry_id = agent_entry_id(session.path, seq)
    timestamp = text_of(entry.get("timestamp"))
    if timestamp is not None:
        stamps.append(timestamp)
    if found.usage is not None or entry_id is not None:
        usage = found.usage
        key = found.usage_key if usage is not None else None
        read.append(UsageRequest(seq, entry_id, timestamp, found.model, usage, key, found.provider))
