"""Lines of the JSONL agents' formats for the tests: a Gemini CLI chat of given records, and
hypothesis strategies of each format's files (Gemini CLI, GitHub Copilot CLI, Qwen Code,
Factory Droid, Cursor) in the shapes their readers must count alike however they are read
(records written again, rewinds, checkpoints, events without ids)."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import strategies as st


def chat_bytes(records: list[dict[str, Any]]) -> bytes:
    """A Gemini CLI JSONL chat: its metadata line, then ``records``."""
    meta = {"sessionId": "g1", "projectHash": "ab", "startTime": "2026-01-01T00:00:00.000Z"}
    return b"".join(orjson.dumps(record) + b"\n" for record in [meta, *records])


def record(entry_id: str, kind: str, text: str, **more: Any) -> dict[str, Any]:
    """A Gemini CLI message record."""
    return {"id": entry_id, "timestamp": "2026-01-01T00:00:01.000Z", "type": kind,
            "content": text, **more}  # fmt: skip


def tokens_of(output: int) -> dict[str, int]:
    """A ``gemini`` record's ``tokens`` (one API call) of ``output`` output tokens."""
    return {"input": 100, "output": output, "cached": 40, "thoughts": 5, "tool": 0}


WORDS = ("alpha", "bravo", "charlie", "delta", "echo")


@st.composite
def gemini_records(draw: st.DrawFn) -> bytes:
    """A Gemini chat: messages (some written again by id), rewinds to any earlier message,
    checkpoints, titles."""
    records: list[dict[str, Any]] = []
    ids: list[str] = []
    for number in range(draw(st.integers(1, 20))):
        kind = draw(st.sampled_from(["user", "gemini", "gemini", "again", "rewind", "set", "info"]))
        if kind == "again" and ids:
            records.append(record(draw(st.sampled_from(ids)), "gemini", draw(st.sampled_from(
                WORDS)), tokens=tokens_of(number)))  # fmt: skip
        elif kind == "rewind" and ids:
            records.append({"$rewindTo": draw(st.sampled_from(ids))})
        elif kind == "set":
            kept = draw(st.lists(st.sampled_from(ids), max_size=3)) if ids else []
            messages = [record(entry_id, "user", "kept") for entry_id in kept]
            records.append({"$set": {"summary": draw(st.sampled_from(WORDS)),
                                     **({"messages": messages} if messages else {})}})  # fmt: skip
        else:
            entry_id = f"m{number}"
            ids.append(entry_id)
            more = {"tokens": tokens_of(number)} if kind == "gemini" else {}
            text = draw(st.sampled_from(WORDS))
            records.append(record(entry_id, "user" if kind == "again" else kind, text, **more))
    return chat_bytes(records)


@st.composite
def copilot_events(draw: st.DrawFn) -> bytes:
    """Copilot events, with or without ids (a chain then), shutdowns with totals."""
    with_ids = draw(st.booleans())
    events: list[dict[str, Any]] = [
        {"type": "session.start", "data": {"sessionId": "c", "version": 1,
                                           "selectedModel": "gpt-5-mini"}}
    ]  # fmt: skip
    for _ in range(draw(st.integers(0, 15))):
        kind = draw(st.sampled_from(["user.message", "assistant.message",
                                     "tool.execution_complete", "session.shutdown",
                                     "session.model_change", "session.info"]))  # fmt: skip
        data: dict[str, Any] = {"content": draw(st.sampled_from(WORDS))}
        if kind == "session.shutdown":
            data = {
                "totalPremiumRequests": draw(st.integers(0, 3)),
                "currentModel": "gpt-5",
                "tokenDetails": {"input": {"tokenCount": 10}, "output": {"tokenCount": 2}},
            }
        elif kind == "session.model_change":
            data = {"newModel": draw(st.sampled_from(["gpt-5", "claude-sonnet-4.5"]))}
        events.append({"type": kind, "data": data})  # fmt: skip
    if with_ids:
        for number, event in enumerate(events):
            event.update(id=f"e{number}", parentId=f"e{number - 1}" if number else None)
    return b"".join(orjson.dumps(event) + b"\n" for event in events)


@st.composite
def qwen_lines(draw: st.DrawFn) -> bytes:
    lines = []
    for number in range(draw(st.integers(1, 12))):
        kind = draw(st.sampled_from(["user", "assistant", "tool_result", "system"]))
        line: dict[str, Any] = {
            "uuid": f"q{number}", "parentUuid": f"q{number - 1}" if number else None,
            "sessionId": "q", "timestamp": "2026-01-01T00:00:00.000Z", "type": kind,
            "cwd": "/w", "message": {"role": "model" if kind == "assistant" else "user",
                                     "parts": [{"text": draw(st.sampled_from(WORDS))}]},
        }  # fmt: skip
        if kind == "assistant":
            line["usageMetadata"] = {"promptTokenCount": 9, "candidatesTokenCount": number,
                                     "cachedContentTokenCount": 2}  # fmt: skip
        lines.append(line)
    return b"".join(orjson.dumps(line) + b"\n" for line in lines)


@st.composite
def droid_lines(draw: st.DrawFn) -> bytes:
    lines: list[dict[str, Any]] = [{"type": "session_start", "id": "d", "title": "t", "cwd": "/"}]
    for number in range(draw(st.integers(0, 10))):
        role = draw(st.sampled_from(["user", "assistant"]))
        lines.append({"type": "message", "id": f"d{number}",
                      "parentId": f"d{number - 1}" if number else "d",
                      "message": {"role": role, "content": [
                          {"type": "text", "text": draw(st.sampled_from(WORDS))}]}})  # fmt: skip
    return b"".join(orjson.dumps(line) + b"\n" for line in lines)


@st.composite
def cursor_lines(draw: st.DrawFn) -> bytes:
    lines: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(1, 10))):
        if draw(st.integers(0, 4)) == 0:
            lines.append({"type": "turn_ended", "status": "success"})
            continue
        lines.append({"role": draw(st.sampled_from(["user", "assistant"])),
                      "message": {"content": draw(st.sampled_from(WORDS))}})  # fmt: skip
    return b"".join(orjson.dumps(line) + b"\n" for line in lines)


FORMATS = {
    "gemini": gemini_records,
    "copilot": copilot_events,
    "qwen": qwen_lines,
    "droid": droid_lines,
    "cursor": cursor_lines,
}
