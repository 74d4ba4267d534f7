"""The lean read of a Claude Code file: the lines found by a byte search for ``"usage"`` (a
JSON string cannot hold an unescaped quote, so only a key matches), decoded into msgspec
structs that name the few fields usage needs (the rest of a line, its text and tool output, is
skipped without making a Python object of it), with orjson and the reader's own code for a
line of a shape the structs do not expect; the session's facts from the lines at its head and
the first that names another session by ``agentId`` (claude._learn_session)."""

from __future__ import annotations

from typing import Any

import msgspec

from xcsh_store.agents import SessionFacts
from xcsh_store.agents.base import text_of
from xcsh_store.agents.claude import READER as CLAUDE
from xcsh_store.agents.claude import _learn_session as learn_claude_session
from xcsh_store.index.model.facts import storable_values
from xcsh_store.index.write.lean.found import (
    SEQS_PER_BYTE,
    ClaudeUsage,
    UsageRead,
    UsageRequest,
    counted,
    line_end,
)
from xcsh_store.times import canonical_iso

_USAGE = b'"usage"'
_AGENT_ID = b'"agentId"'


class _ClaudeMessage(msgspec.Struct):
    id: str | None = None
    model: str | None = None
    usage: ClaudeUsage | None = None


class _ClaudeLine(msgspec.Struct):
    type: str | None = None
    uuid: str | None = None
    timestamp: str | None = None
    requestId: str | None = None  # (Claude Code's name)
    message: _ClaudeMessage | None = None


_DECODER = msgspec.json.Decoder(_ClaudeLine)


class _AgentLine(msgspec.Struct):
    """What claude._learn_session reads of a line with an ``agentId`` key (a nested one
    matches the byte search too: its line has none of its own)."""

    agentId: Any = msgspec.UNSET  # (Claude Code's names)
    sessionId: Any = None


_AGENT_DECODER = msgspec.json.Decoder(_AgentLine)


def _request_of_value(value: dict[str, Any], seq: int) -> UsageRequest | None:
    """A decoded object's request, as the Claude Code reader reads it (claude.py)."""
    message = value.get("message")
    if value.get("type") != "assistant" or type(message) is not dict:
        return None
    usage = message.get("usage")
    if type(usage) is not dict:
        return None
    model, timestamp = text_of(message.get("model")), text_of(value.get("timestamp"))
    message_id = text_of(message.get("id"))
    key = None if message_id is None else f"{message_id}:{value.get('requestId') or ''}"
    return UsageRequest(seq, text_of(value.get("uuid")), timestamp, model, usage, key)


def _requests_of_line(line: bytes, seq: int) -> list[UsageRequest]:
    """The requests of one line: the typed decoding of the fields usage needs, else (several
    objects, a field of another type) the full read's lenient parse and the reader's code."""
    try:
        decoded = _DECODER.decode(line)
    except msgspec.DecodeError:
        found = []
        for part, value in enumerate(storable_values(line, b"\\u" in line)):
            request = _request_of_value(value, seq + part)
            if request is not None:
                found.append(request)
        return found
    message = decoded.message
    if decoded.type != "assistant" or message is None or message.usage is None:
        return []
    model, timestamp = text_of(message.model), text_of(decoded.timestamp)
    message_id = text_of(message.id)
    key = None if message_id is None else f"{message_id}:{decoded.requestId or ''}"
    return [UsageRequest(seq, text_of(decoded.uuid), timestamp, model, message.usage, key)]


def read_claude(path: str, data: bytes) -> UsageRead:
    """The requests of a Claude Code file, as the Claude Code reader reads them."""
    found = UsageRead(CLAUDE, SessionFacts(path))
    session = found.session
    _learn_head(data, session)
    activity = [session.created_at] if session.created_at else []
    requests = found.requests
    decode = _DECODER.decode
    position = data.find(_USAGE)
    while position >= 0:
        start = data.rfind(b"\n", 0, position) + 1
        end: int | None = data.find(b"\n", position)
        if end == -1:
            end = line_end(data, start, position)
        if end is None:
            break
        # _requests_of_line's typed decoding, inline (60k lines on the 327 MB Claude tree)
        try:
            decoded = decode(data[start:end])
        except msgspec.DecodeError:
            for request in _requests_of_line(data[start:end], start * SEQS_PER_BYTE):
                requests.append(request)
                if request.timestamp is not None:
                    activity.append(request.timestamp)
        else:
            message = decoded.message
            if decoded.type == "assistant" and message is not None and message.usage is not None:
                timestamp = decoded.timestamp or None  # (text_of of a str or None)
                message_id = message.id or None
                key = None if message_id is None else f"{message_id}:{decoded.requestId or ''}"
                requests.append(UsageRequest(
                    start * SEQS_PER_BYTE, decoded.uuid or None, timestamp, message.model or None,
                    message.usage, key,
                ))  # fmt: skip
                if timestamp is not None:
                    activity.append(timestamp)
        position = data.find(_USAGE, end)
    stamps = [stamp for stamp in map(canonical_iso, activity) if stamp is not None]
    found.activity_at = max(stamps) if stamps else None
    found.requests = counted(requests)
    return found


def _learn_head(data: bytes, session: SessionFacts) -> None:
    """What the reader learns of the session from its lines (claude._learn_session): its id
    and parent from the path, its cwd and start from the first lines that have them, a parent
    named by the first line with an ``agentId`` that names another session."""
    start = 0
    learn_claude_session({}, session)
    while start < len(data) and (session.cwd is None or session.created_at is None):
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end + 1
        line = data[start:end]
        for value in storable_values(line, b"\\u" in line):
            learn_claude_session(value, session)
        start = end
    if session.parent_session_id is not None:
        return  # (a subagent's, named by its folder)
    position = data.find(_AGENT_ID)
    while position >= 0 and session.parent_session_id is None:
        start = data.rfind(b"\n", 0, position) + 1
        end = data.find(b"\n", position)
        end = len(data) if end < 0 else end
        line = data[start:end]
        try:
            values: list[dict[str, Any]] = []
            decoded = _AGENT_DECODER.decode(line)
            if decoded.agentId is not msgspec.UNSET:
                values = [{"agentId": decoded.agentId, "sessionId": decoded.sessionId}]
        except msgspec.DecodeError:
            values = storable_values(line, b"\\u" in line)
        for value in values:
            learn_claude_session(value, session)
        position = data.find(_AGENT_ID, end)
