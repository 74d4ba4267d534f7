"""GitHub Copilot CLI session logs: ``$COPILOT_HOME/session-state/<session id>/events.jsonl``
(current) or ``session-state/<session id>.jsonl`` (older), ``$COPILOT_HOME`` defaulting to
``~/.copilot``.

Each line is an event ``{type, data, id, timestamp, parentId}``; ``parentId`` is the tree. An
event without an id (some writers leave them out) continues from the one before,
with an id in file order.

* ``session.start`` (``data.version`` 1, the only format version known here; another is kept
  as an unknown entry with a warning, and the events after it are read as far as they look
  like version 1's) gives the session id, the start, the cwd (``context.cwd``) and the model;
  ``session.model_change`` and ``session.resume`` change the model.
* ``user.message`` is the prompt (``content``, what the user typed; ``transformedContent``
  adds what the CLI expanded). ``assistant.message`` is the answer: ``content``,
  ``reasoningText`` as thinking, ``toolRequests`` as tool calls (``arguments`` an object or a
  JSON string). ``tool.execution_complete`` is the result, paired by ``toolCallId``;
  ``assistant.reasoning`` is thinking. Events of a subagent carry ``parentToolCallId``: they
  are qualified ``subagent``.
* ``session.info``, ``session.error``, ``session.warning``, ``system.notification`` and
  ``abort`` are notices, searchable; ``system.message`` (the system prompt) is not.
* Usage exists only as the totals of ``session.shutdown``: ``modelMetrics.<model>.usage``
  summed over the models (else ``tokenDetails``; input there includes the cache reads, as
  ccusage reads it) and ``totalPremiumRequests``, counted on that event, under
  ``currentModel`` (one entry holds one model: a run of several models is priced as its last).
  Each run of the CLI writes its own shutdown with the totals of that run;
  ``outputTokens`` of each message and ``session.usage_checkpoint`` are parts of those totals
  and are not counted again.
"""

from __future__ import annotations

import contextlib
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
    text_blocks,
    text_of,
    unknown_entry,
    unknown_version,
)
from xcsh_store.agents.prices.pricing import price_table

HOME_ENV = "COPILOT_HOME"
FOLDER_VARIABLES = (HOME_ENV,)
SESSIONS_DIRNAME = "session-state"
KNOWN_VERSIONS = (1,)
NOTICES = frozenset(
    {"session.info", "session.error", "session.warning", "system.notification", "abort"}
)
_NOTICE_KEYS = ("message", "content", "reason")


def copilot_dir() -> str:
    """``$COPILOT_HOME``, else ``~/.copilot``."""
    return folder_from(HOME_ENV, "~/.copilot")


class CopilotReader(Agent):
    name = "copilot"
    label = "GitHub Copilot CLI"
    folder_variables = FOLDER_VARIABLES
    resume = "copilot --resume {id}"
    where = (
        "`$COPILOT_HOME/session-state`, else `~/.copilot/session-state`:"
        " `<session id>/events.jsonl`, older `<session id>.jsonl`"
    )
    has_ids = True
    remembers_parents = False
    project_folders = False

    def recognizes(self, value: dict[str, Any]) -> bool:
        kind = value.get("type")
        return (
            isinstance(kind, str)
            and kind.startswith("session.")
            and type(value.get("data")) is dict
        )

    def session_roots(self) -> list[str]:
        return [os.path.join(copilot_dir(), SESSIONS_DIRNAME)]

    def read(self, value: dict[str, Any], session: SessionFacts) -> AgentEntry:
        kind = text_of(value.get("type"))
        data = value.get("data")
        data = data if type(data) is dict else {}
        if kind == "session.start" and session.session_id is None:
            _start(data, value, session)
            version = data.get("version")
            if version is not None and version not in KNOWN_VERSIONS:
                found = unknown_entry(value, kind)
                unknown_version(found, session.path, "GitHub Copilot CLI", version)
                return found
        found = AgentEntry({"type": kind or "unknown"})
        timestamp = text_of(value.get("timestamp"))
        if timestamp is not None:
            found.entry["timestamp"] = timestamp
        _place(found, value)
        if "parentToolCallId" in data and data["parentToolCallId"] is not None:
            found.qualifier = "subagent"
        _event(found, kind, data, timestamp, session)
        return found

    def history_prompt(self, value: dict[str, Any]) -> HistoryPrompt | None:
        return None  # Copilot CLI keeps no prompt history file of its own


def _start(data: dict[str, Any], value: dict[str, Any], session: SessionFacts) -> None:
    session.session_id = text_of(data.get("sessionId"))
    session.created_at = text_of(data.get("startTime")) or text_of(value.get("timestamp"))
    context = data.get("context")
    if type(context) is dict:
        session.cwd = text_of(context.get("cwd"))
    session.model = text_of(data.get("selectedModel")) or session.model


def _place(found: AgentEntry, value: dict[str, Any]) -> None:
    """The event's id and parent: its own, else one in file order, after the event before."""
    entry_id = text_of(value.get("id"))
    if entry_id is None:
        found.chained = True
    else:
        found.entry.update(id=entry_id, parentId=text_of(value.get("parentId")))


def _event(
    found: AgentEntry,
    kind: str | None,
    data: dict[str, Any],
    timestamp: str | None,
    session: SessionFacts,
) -> None:
    entry = found.entry
    if kind == "user.message":
        text = text_of(data.get("content")) or text_of(data.get("transformedContent")) or ""
        entry.update(type="message", message={"role": "user", "content": text_blocks([text])})
    elif kind == "assistant.message":
        blocks: list[dict[str, Any]] = []
        reasoning = text_of(data.get("reasoningText"))
        if reasoning is not None:
            blocks.append({"type": "thinking", "thinking": reasoning})
        blocks += text_blocks(filter(None, [text_of(data.get("content"))]))
        for request in data.get("toolRequests") or ():
            if type(request) is dict:
                blocks.append(_tool_call(request))
        model = text_of(data.get("model")) or session.model
        entry.update(type="message", message={"role": "assistant", "content": blocks})
        found.model, found.provider = model, price_table().provider_of(model)
    elif kind == "assistant.reasoning":
        thinking = [{"type": "thinking", "thinking": text_of(data.get("content")) or ""}]
        entry.update(type="message", message={"role": "assistant", "content": thinking})
    elif kind == "tool.execution_complete":
        entry.update(type="message", message=_tool_result(data))
    elif kind in ("session.start", "session.model_change", "session.resume"):
        # The model in the row too: a resumed read picks it up from the last row naming one.
        session.model = (
            text_of(data.get("newModel")) or text_of(data.get("selectedModel")) or session.model
        )
        found.model, found.provider = session.model, price_table().provider_of(session.model)
    elif kind in NOTICES:
        texts = [notice for key in _NOTICE_KEYS if (notice := text_of(data.get(key)))]
        entry.update(type="custom_message", customType=kind, content=text_blocks(texts[:1]))
        found.qualifier = found.qualifier or kind
    elif kind == "session.shutdown":
        _shutdown(found, data, timestamp, session)


def _tool_call(request: dict[str, Any]) -> dict[str, Any]:
    arguments = request.get("arguments")
    if isinstance(arguments, str):
        with contextlib.suppress(orjson.JSONDecodeError):
            arguments = orjson.loads(arguments)
    return {
        "type": "toolCall", "id": text_of(request.get("toolCallId")),
        "name": request.get("name"), "arguments": arguments,
    }  # fmt: skip


def _tool_result(data: dict[str, Any]) -> dict[str, Any]:
    result = data.get("result")
    if type(result) is dict:
        result = result.get("content") or result.get("detailedContent")
    return {
        "role": "toolResult",
        "toolCallId": text_of(data.get("toolCallId")),
        "toolName": text_of(data.get("toolName")),
        "isError": data.get("success") is False,
        "content": text_blocks(filter(None, [text_of(result)])),
    }


def _shutdown(
    found: AgentEntry, data: dict[str, Any], timestamp: str | None, session: SessionFacts
) -> None:
    metrics = data.get("modelMetrics")
    used = [
        metric["usage"]
        for metric in (metrics.values() if type(metrics) is dict else ())
        if type(metric) is dict and type(metric.get("usage")) is dict
    ]
    if used:
        keys = ("inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens")
        totals = [sum(number(usage.get(key)) for usage in used) for key in keys]
    else:
        details = data.get("tokenDetails")
        details = details if type(details) is dict else {}
        keys = ("input", "output", "cache_read", "cache_write")
        totals = [
            number(detail.get("tokenCount")) if type(detail := details.get(key)) is dict else 0
            for key in keys
        ]
    # Input counts the cached part too (as ccusage reads it): input less cache reads is input.
    figures = (max(totals[0] - totals[2], 0), totals[1], totals[2], totals[3])
    model = session.model = text_of(data.get("currentModel")) or session.model
    cost = price_table().tokens_cost(model, timestamp, *figures)
    found.model, found.provider = model, price_table().provider_of(model)
    found.usage = (*figures, number(data.get("totalPremiumRequests")), cost)


READER = CopilotReader()
