"""The lean read of a Codex rollout: the session_meta, turn_context and token_count lines (a
byte search for each type), the last decoded into msgspec structs of the few fields usage
needs; the model of each turn comes from the turn_context line before its token_count lines,
the session from the first session_meta (a fork's copies of its parent's come after)."""

from __future__ import annotations

import functools
import re
from typing import Any

import msgspec
import orjson

from xcsh_store.agents import AgentEntry, SessionFacts
from xcsh_store.agents.base import text_of
from xcsh_store.agents.codex import READER as CODEX
from xcsh_store.agents.codex import _learn_session as learn_codex_session
from xcsh_store.agents.codex import _token_count as codex_token_count
from xcsh_store.index.model.facts import storable_values
from xcsh_store.index.write.build import agent_entry_id, agent_entry_id_prefix
from xcsh_store.index.write.lean.found import (
    SEQS_PER_BYTE,
    UsageRead,
    UsageRequest,
    counted,
    line_end,
)
from xcsh_store.times import canonical_iso

_CODEX_NEEDLES = (b'"session_meta"', b'"turn_context"', b'"token_count"')


class _CodexTokens(msgspec.Struct):
    input_tokens: int = 0
    cached_input_tokens: int = 0
    cache_write_input_tokens: int = 0
    output_tokens: int = 0


class _CodexInfo(msgspec.Struct):
    last_token_usage: _CodexTokens | None = None
    total_token_usage: dict[str, Any] | None = None


class _CodexPayload(msgspec.Struct):
    type: str | None = None
    info: _CodexInfo | None = None
    model: Any = None  # (turn_context's)


class _CodexLine(msgspec.Struct):
    type: str | None = None
    timestamp: str | None = None
    payload: _CodexPayload | None = None


_CODEX_DECODER = msgspec.json.Decoder(_CodexLine)


def line_starts(data: bytes, needles: tuple[bytes, ...]) -> list[int]:
    """Where the lines that hold any of ``needles`` begin, in order (each once).

    Needles that all begin with a quote (JSON strings): one pass of a regular expression of
    them all, from each line found on from its end (on the 102 MB Codex tree, Codex's three
    0.055 CPU-s against 0.091 for a ``bytes.find`` pass per needle, Copilot CLI's four 0.037
    against 0.095). Else a ``bytes.find`` pass per needle: a needle that may begin with any
    letter makes the expression try at every such letter (Gemini CLI's two: 0.62 against
    0.08)."""
    if len(needles) > 1 and all(needle.startswith(b'"') for needle in needles):
        search = _needles_pattern(needles).search
        starts = []
        found = search(data)
        while found is not None:
            starts.append(data.rfind(b"\n", 0, found.start()) + 1)
            end = data.find(b"\n", found.end())
            found = None if end < 0 else search(data, end)
        return starts
    found_starts: set[int] = set()
    for needle in needles:
        position = data.find(needle)
        while position >= 0:
            found_starts.add(data.rfind(b"\n", 0, position) + 1)
            end = data.find(b"\n", position)
            position = -1 if end < 0 else data.find(needle, end)
    return sorted(found_starts)


@functools.cache
def _needles_pattern(needles: tuple[bytes, ...]) -> re.Pattern[bytes]:
    return re.compile(b"|".join(map(re.escape, needles)))


def read_codex(path: str, data: bytes, first: dict[str, Any]) -> UsageRead:
    """The requests of a Codex file whose first object is ``first``, as the Codex reader reads
    them (codex.py)."""
    found = UsageRead(CODEX, SessionFacts(path))
    session = found.session
    if "payload" not in first:
        # The envelope-less shape of older rollouts (what CodexReader.recognizes): its first
        # line names the session; none of its lines of that shape holds usage.
        learn_codex_session(first, text_of(first.get("timestamp")), session)
    activity: list[str] = []
    id_prefix = agent_entry_id_prefix(path)
    for start in line_starts(data, _CODEX_NEEDLES):
        end = line_end(data, start, start)
        if end is None:
            break
        line = data[start:end]
        seq = start * SEQS_PER_BYTE
        try:
            decoded = _CODEX_DECODER.decode(line)
        except msgspec.DecodeError:
            decoded = None
        if decoded is not None and decoded.payload is not None:
            kind, payload = decoded.type, decoded.payload
            if kind == "event_msg" and payload.type == "token_count":
                request = _codex_request(decoded.timestamp, payload.info, session, seq, id_prefix)
                if request is not None:
                    found.requests.append(request)
                    activity.append(request.timestamp or "")
                continue
            model = payload.model
            if kind == "turn_context" and (
                model is None or (type(model) is str and b"\\u" not in line)
            ):
                # (A \u escape may be a lone surrogate, which the full read's parse mends.)
                session.model = model or session.model
                continue
        # session_meta (or a shape the structs do not expect): the reader's own code, on the
        # full read's parse.
        for part, value in enumerate(storable_values(line, b"\\u" in line)):
            _codex_value(value, seq + part, found, activity)
    if session.created_at:
        activity.append(session.created_at)
    stamps = [stamp for stamp in map(canonical_iso, activity) if stamp]
    found.activity_at = max(stamps) if stamps else None
    found.requests = counted(found.requests)
    return found


def _codex_value(value: dict[str, Any], seq: int, found: UsageRead, activity: list[str]) -> None:
    """One object of a line, as CodexReader.read reads it (what usage needs of it)."""
    payload = value.get("payload")
    if type(payload) is not dict:
        return
    kind = value.get("type")
    timestamp = text_of(value.get("timestamp"))
    session = found.session
    if kind == "session_meta":
        learn_codex_session(payload, timestamp, session)
    elif kind == "turn_context":
        session.model = text_of(payload.get("model")) or session.model
    elif kind == "event_msg" and payload.get("type") == "token_count":
        entry = AgentEntry({})
        codex_token_count(entry, payload, timestamp, session)
        if entry.usage is not None:
            figures = (entry.usage[0], entry.usage[1], entry.usage[2], entry.usage[3])
            entry_id = agent_entry_id(session.path, seq)
            found.requests.append(
                UsageRequest(seq, entry_id, timestamp, entry.model, figures, entry.usage_key)
            )
            activity.append(timestamp or "")


def _codex_request(
    timestamp: str | None, info: _CodexInfo | None, session: SessionFacts, seq: int,
    id_prefix: str,
) -> UsageRequest | None:  # fmt: skip
    """A token_count event's request (codex._token_count, from the typed decoding)."""
    timestamp = text_of(timestamp)
    replay = session.replay_second
    if replay is not None and timestamp is not None and timestamp[:19] <= replay:
        return None
    last = None if info is None else info.last_token_usage
    if info is None or last is None:
        return None
    cached, written = last.cached_input_tokens, last.cache_write_input_tokens
    figures = (
        max(last.input_tokens - cached - written, 0), last.output_tokens, cached, written
    )  # fmt: skip
    if not any(figures):
        return None
    total = info.total_token_usage
    key = None
    if total is not None:
        key = "total:" + orjson.dumps(total, option=orjson.OPT_SORT_KEYS).decode()
    # (An id unlike any other file's, as the full read gives: usage_entries takes entries of
    # the same id and time for copies.)
    return UsageRequest(seq, f"{id_prefix}{seq:x}", timestamp, session.model, figures, key)
