"""Qwen Code sessions (``$QWEN_HOME/projects/<sanitised cwd>/chats/<session id>.jsonl``,
``$QWEN_HOME`` defaulting to ``~/.qwen``: Qwen Code's Storage.getGlobalQwenDir).

Qwen Code is a Gemini CLI fork whose lines look like Claude Code's (``uuid``, ``parentUuid``:
the tree; ``sessionId``, ``timestamp``, ``cwd``, ``version``, ``gitBranch``) with Gemini
content: ``message`` is ``{role: "user"|"model", parts: [...]}``.

* ``user`` lines are prompts: ``systemPayload.displayText`` (what the user typed) when there,
  else the text parts (which may add hook context); a ``notification`` subtype is a notice.
* ``assistant`` lines are answers: text parts, ``thought: true`` parts as thinking,
  ``functionCall`` parts as tool calls; ``model`` names the model.
* ``tool_result`` lines hold ``functionResponse`` parts: the results, paired by call id.
* A ``system`` line of subtype ``chat_compression`` is a compaction: its
  ``systemPayload.compressedHistory`` is what the model sees from then on (its summary). One of
  subtype ``custom_title`` titles the session (``systemPayload.customTitle``; the last one
  wins, as Qwen Code reads the last one): set by ``/rename`` (``titleSource`` ``manual`` or
  none), or by Qwen Code's own title model (``auto``). Other ``system`` lines
  (``ui_telemetry``, ``attribution_snapshot``, ...) add no text; their subtype qualifies them.
* Usage is each assistant line's ``usageMetadata``: ``promptTokenCount`` less
  ``cachedContentTokenCount`` is input, the cached count is cache reads,
  ``candidatesTokenCount`` plus ``thoughtsTokenCount`` is output. The ``ui_telemetry``
  ``api_response`` events repeat those figures and are not counted again.
"""

from __future__ import annotations

import os
from typing import Any

import orjson

from xcsh_store.agents.base import (
    Agent,
    AgentEntry,
    HistoryPrompt,
    SessionFacts,
    folder_from,
    number,
    record_entry,
    text_blocks,
    text_of,
)
from xcsh_store.agents.gemini import tool_call
from xcsh_store.agents.prices.pricing import price_table
from xcsh_store.format.entries import NAMED_TITLE_SOURCE

HOME_ENV = "QWEN_HOME"
COMPRESSION = "chat_compression"
CUSTOM_TITLE = "custom_title"
FOLDER_VARIABLES = (HOME_ENV,)


def qwen_dir() -> str:
    """``$QWEN_HOME``, else ``~/.qwen``."""
    return folder_from(HOME_ENV, "~/.qwen")


class QwenReader(Agent):
    name = "qwen"
    label = "Qwen Code"
    folder_variables = FOLDER_VARIABLES
    resume = "qwen --resume {id}"
    where = (
        "`$QWEN_HOME/projects`, else `~/.qwen/projects`: `<sanitised cwd>/chats/<session id>.jsonl`"
    )
    has_ids = True
    remembers_parents = False

    def recognizes(self, value: dict[str, Any]) -> bool:
        if not (isinstance(value.get("uuid"), str) and isinstance(value.get("sessionId"), str)):
            return False
        message = value.get("message")
        return (
            (type(message) is dict and type(message.get("parts")) is list)
            or "systemPayload" in value
            or "usageMetadata" in value
            or value.get("type") == "tool_result"
        )

    def session_roots(self) -> list[str]:
        return [os.path.join(qwen_dir(), "projects")]

    def read(self, value: dict[str, Any], session: SessionFacts) -> AgentEntry:
        if session.session_id is None:
            session.session_id = text_of(value.get("sessionId"))
            session.created_at = text_of(value.get("timestamp"))
        session.cwd = session.cwd or text_of(value.get("cwd"))
        kind = text_of(value.get("type"))
        entry = record_entry(value, kind, "uuid", "parentUuid")
        found = AgentEntry(entry, qualifier=text_of(value.get("subtype")))
        message = value.get("message")
        parts = message.get("parts") if type(message) is dict else None
        parts = [part for part in parts if type(part) is dict] if type(parts) is list else []
        if kind == "user":
            _user(found, value, parts)
        elif kind == "assistant":
            _assistant(found, value, parts, entry.get("timestamp"))
        elif kind == "tool_result":
            entry.update(type="message", message=_results(parts))
        elif found.qualifier == COMPRESSION:
            _compression(found, value.get("systemPayload"))
        elif found.qualifier == CUSTOM_TITLE:
            _custom_title(found, value.get("systemPayload"))
        return found

    def history_prompt(self, value: dict[str, Any]) -> HistoryPrompt | None:
        return None  # Qwen Code keeps no prompt history file of its own


def _texts(parts: list[dict[str, Any]], thought: bool = False) -> list[str]:
    return [
        part["text"]
        for part in parts
        if isinstance(part.get("text"), str)
        and part["text"]
        and bool(part.get("thought")) == thought
    ]


def _user(found: AgentEntry, value: dict[str, Any], parts: list[dict[str, Any]]) -> None:
    payload = value.get("systemPayload")
    shown = text_of(payload.get("displayText")) if type(payload) is dict else None
    texts = [shown] if shown is not None else _texts(parts)
    if found.qualifier == "notification":
        found.entry.update(
            type="custom_message", customType="notification", content=text_blocks(texts)
        )
        return
    found.entry.update(type="message", message={"role": "user", "content": text_blocks(texts)})


def _assistant(
    found: AgentEntry, value: dict[str, Any], parts: list[dict[str, Any]], timestamp: str | None
) -> None:
    blocks: list[dict[str, Any]] = [
        {"type": "thinking", "thinking": text} for text in _texts(parts, thought=True)
    ]
    blocks += text_blocks(_texts(parts))
    calls = [part.get("functionCall") for part in parts]
    blocks += [tool_call(call) for call in calls if type(call) is dict]
    model = text_of(value.get("model"))
    found.entry.update(type="message", message={"role": "assistant", "content": blocks})
    found.model, found.provider = model, price_table().provider_of(model)
    usage = value.get("usageMetadata")
    if type(usage) is dict:
        found.usage = qwen_usage(usage, model, timestamp)
        found.usage_key = f"qwen:{found.entry.get('id')}"


def qwen_usage(usage: dict[str, Any], model: str | None, timestamp: str | None) -> tuple:
    """(input, output, cache read, cache write, premium requests, cost) of an assistant line's
    ``usageMetadata``."""
    cached = number(usage.get("cachedContentTokenCount"))
    figures = (
        max(number(usage.get("promptTokenCount")) - cached, 0),
        number(usage.get("candidatesTokenCount")) + number(usage.get("thoughtsTokenCount")),
        cached,
        0,
    )
    return (*figures, 0, price_table().tokens_cost(model, timestamp, *figures))


def _compression(found: AgentEntry, payload: Any) -> None:
    """A ``chat_compression`` record: the history the model sees from then on
    (``compressedHistory``, most often one summary) is the compaction's summary."""
    history = payload.get("compressedHistory") if type(payload) is dict else None
    texts = [
        text
        for content in (history if type(history) is list else ())
        if type(content) is dict and type(content.get("parts")) is list
        for text in _texts([part for part in content["parts"] if type(part) is dict])
    ]
    found.entry.update(type="compaction", summary="\n".join(texts))


def _custom_title(found: AgentEntry, payload: Any) -> None:
    payload = payload if type(payload) is dict else {}
    found.title = text_of(payload.get("customTitle"))
    if found.title is not None:
        found.title_source = "auto" if payload.get("titleSource") == "auto" else NAMED_TITLE_SOURCE


def _results(parts: list[dict[str, Any]]) -> dict[str, Any]:
    responses = [
        part["functionResponse"] for part in parts if type(part.get("functionResponse")) is dict
    ]
    first = responses[0] if responses else {}
    texts = []
    for response in responses:
        body = response.get("response")
        if type(body) is dict and any(
            isinstance(body.get(key), str) for key in ("output", "error")
        ):
            texts.append(body["output"] if isinstance(body.get("output"), str) else body["error"])
        elif body is not None:
            texts.append(orjson.dumps(body).decode())
    return {
        "role": "toolResult",
        "toolCallId": text_of(first.get("id")),
        "toolName": text_of(first.get("name")),
        "content": text_blocks(texts),
    }


READER = QwenReader()
