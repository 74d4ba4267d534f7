"""The lean read of a session kept as a JSON document or a tree of files, which its agent's
plugin lists (scan.SeenFile.agent): Gemini CLI's older whole-document chats and opencode's
sessions. Each is read as the full read reads it (build.read_source), but only the records
its usage comes from reach the reader:

* Gemini CLI document: the document is parsed whole (its messages are one JSON value), its
  records those of GeminiReader.records but the results of calls (no usage). A ``gemini``
  message of the usual shape is priced by the reader's own ``gemini_usage`` without the
  reader making its entry (the answer's text, thoughts and tool calls); the metadata, a
  ``user`` message that opens with ``<session_context>`` while the session has no cwd (the
  context that names it) and any message of another shape go to the reader; the others only
  count by id (a later message of an id replaces the usage of an earlier one: found.counted).
* opencode, its storage tree or its database (opencode.db): the session and its messages,
  not their parts (OpencodeReader.usage_records: the tree's message files, the database's
  message rows); the session is read by the reader, each assistant message's usage, model and
  provider taken by the reader's own ``message_usage`` without making its entry (the provider
  the one the message records, as in the full read).

Any other session of such an agent (an opencode export document) is left to the full read.
"""

from __future__ import annotations

from typing import Any

from xcsh_store.agents import Agent, SessionFacts
from xcsh_store.agents.base import text_of
from xcsh_store.agents.gemini import (
    CONTEXT_TAG,
    REWIND_KEY,
    SET_KEY,
    TOOL_RESULT_KEY,
    gemini_usage,
    message_texts,
)
from xcsh_store.agents.gemini import READER as GEMINI
from xcsh_store.agents.opencode import READER as OPENCODE
from xcsh_store.agents.opencode import created_at, message_usage
from xcsh_store.agents.opencode_db import MESSAGE_RECORD
from xcsh_store.index.write.build import agent_entry_id
from xcsh_store.index.write.lean.by_reader import read_value
from xcsh_store.index.write.lean.found import UsageRead, UsageRequest, counted
from xcsh_store.times import canonical_iso

# Keys that make GeminiReader.read read a record otherwise than as a message.
_ODD_KEYS = (TOOL_RESULT_KEY, SET_KEY, REWIND_KEY)


def read_source_usage(agent: Agent, path: str) -> UsageRead | None:
    """The requests of the session at ``path`` that ``agent``'s plugin lists, as the full read
    counts them; None when the session has no lean read (the full read reads it)."""
    if agent is GEMINI and GEMINI.kind_of(path) == "document":
        return _gemini_document(path)
    if agent is OPENCODE:
        records = OPENCODE.usage_records(path)
        if records is None:
            return None
        found = UsageRead(OPENCODE, SessionFacts(path), recorded_providers=True)
        read: list[UsageRequest] = []
        stamps: list[str] = []
        for locator, value in records:
            info = value.get("info")
            if value.get("type") == MESSAGE_RECORD and type(info) is dict:
                _opencode_message(info, path, locator, read, stamps)
            else:
                read_value(OPENCODE, value, locator, read, stamps, found.session)
        return _finished(found, read, stamps)
    return None


def _opencode_message(
    info: dict[str, Any], path: str, locator: int, read: list[UsageRequest], stamps: list[str]
) -> None:
    """A message record's request, as OpencodeReader.read gives it (its own id: opencode's
    entries have none, so no record replaces another's usage)."""
    timestamp = created_at(info)
    if timestamp is not None:
        stamps.append(timestamp)
    if info.get("role") != "assistant":
        return
    model, provider, usage = message_usage(info)
    if usage is None:
        return
    if model is None and info.get("summary") is True:
        provider = None  # (a compaction entry has no message to name it: build.py)
    entry_id = agent_entry_id(path, locator)
    read.append(UsageRequest(locator, entry_id, timestamp, model, usage, None, provider))


def _gemini_document(path: str) -> UsageRead:
    found = UsageRead(GEMINI, SessionFacts(path))
    session = found.session
    read: list[UsageRequest] = []
    stamps: list[str] = []
    for locator, value in GEMINI.records(path):
        if TOOL_RESULT_KEY in value:
            continue  # (a call's result: no usage, an id of its own)
        kind = value.get("type")
        usual = not any(key in value for key in _ODD_KEYS)
        if usual and kind == "gemini" and _iterable(value, "thoughts", "toolCalls"):
            request = _gemini_request(value, locator)
            if request.timestamp is not None:
                stamps.append(request.timestamp)
            if request.usage is not None or request.entry_id is not None:
                read.append(request)
        elif usual and kind is not None and not (kind == "user" and _may_name_cwd(value, session)):
            # (What the reader would make of it holds no usage: it counts only by its id.)
            entry_id, timestamp = text_of(value.get("id")), text_of(value.get("timestamp"))
            if timestamp is not None:
                stamps.append(timestamp)
            if entry_id is not None:
                read.append(UsageRequest(locator, entry_id, timestamp, None, None, None))
        else:
            read_value(GEMINI, value, locator, read, stamps, session)
    return _finished(found, read, stamps)


def _may_name_cwd(message: dict[str, Any], session: SessionFacts) -> bool:
    """Whether the reader may learn the session's cwd from a ``user`` message: while it has
    none, one whose first text opens with ``<session_context>`` (GeminiReader._user)."""
    if session.cwd is not None:
        return False
    texts = message_texts(message)
    return bool(texts) and texts[0].lstrip().startswith(CONTEXT_TAG)


def _iterable(value: dict[str, Any], *keys: str) -> bool:
    """Whether each of ``keys`` is what GeminiReader._gemini iterates as the JSONL read's typed
    decoding takes it: a list, null or nothing."""
    return all(type(value.get(key)) in (list, type(None)) for key in keys)


def _gemini_request(value: dict[str, Any], locator: int) -> UsageRequest:
    """A ``gemini`` message's request, as GeminiReader.read gives it."""
    entry_id, model = text_of(value.get("id")), text_of(value.get("model"))
    timestamp, tokens = text_of(value.get("timestamp")), value.get("tokens")
    if type(tokens) is not dict or entry_id is None:
        return UsageRequest(locator, entry_id, timestamp, model, None, None)
    usage = gemini_usage(tokens, model, timestamp)
    return UsageRequest(locator, entry_id, timestamp, model, usage, f"gemini:{entry_id}")


def _finished(found: UsageRead, read: list[UsageRequest], stamps: list[str]) -> UsageRead:
    if found.session.created_at:
        stamps.append(found.session.created_at)
    known = [stamp for stamp in map(canonical_iso, stamps) if stamp is not None]
    found.activity_at = max(known) if known else None
    found.requests = [request for request in counted(read) if request.usage is not None]
    return found
