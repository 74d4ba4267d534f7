"""Cursor agent transcripts
(``~/.cursor/projects/<project slug>/agent-transcripts/<id>/<id>.jsonl``, a subagent's in
``<id>/subagents/<child id>.jsonl``), written by the IDE's agent and by ``cursor-agent``.

Each line is ``{"role": "user"|"assistant", "message": {"content": ...}}`` with Anthropic-style
blocks or a string; a ``{"type": "turn_ended"}`` line may follow a turn. The transcripts hold
no ids, no timestamps, no model and no usage: entries get ids in file order (each the child of
the one before), the session's times are the file's (its modified time; no creation time),
and Cursor sessions show no model and no usage. The CLI's ``~/.cursor/chats/*/store.db``
(SQLite) is not read. A user turn's prompt is the text of its ``<user_query>`` (the attached
files and links Cursor adds beside it are not); ``[REDACTED]`` blocks (hidden reasoning) add
no text.
"""

from __future__ import annotations

import os
import re
from typing import Any

from xcsh_store.agents.base import (
    Agent,
    AgentEntry,
    HistoryPrompt,
    SessionFacts,
    anthropic_message,
    text_of,
)

SUBAGENTS_DIRNAME = "subagents"
TURN_ENDED = "turn_ended"
REDACTED = "[REDACTED]"
_USER_QUERY = re.compile(r"<user_query>(.*?)</user_query>", re.DOTALL)


class CursorReader(Agent):
    name = "cursor"
    label = "Cursor"
    resume = "cursor-agent --resume {id}"
    where = (
        "`~/.cursor/projects`: `<project slug>/agent-transcripts/<id>/<id>.jsonl`, subagents in"
        " `<id>/subagents/<id>.jsonl` (the CLI's `~/.cursor/chats/*/store.db` is not read)"
    )
    has_ids = False
    remembers_parents = False

    def recognizes(self, value: dict[str, Any]) -> bool:
        if value.get("type") == TURN_ENDED and len(value) <= 2:
            return True
        return (
            "type" not in value
            and value.get("role") in ("user", "assistant")
            and type(value.get("message")) is dict
        )

    def session_roots(self) -> list[str]:
        return [os.path.join(os.path.expanduser("~"), ".cursor", "projects")]

    def read(self, value: dict[str, Any], session: SessionFacts) -> AgentEntry:
        if session.session_id is None:
            session.session_id = os.path.basename(session.path).removesuffix(".jsonl")
            folder = os.path.dirname(session.path)
            if os.path.basename(folder) == SUBAGENTS_DIRNAME:
                parent_folder = os.path.dirname(folder)
                parent_id = os.path.basename(parent_folder)
                session.parent_session_id = parent_id
                session.parent_session = os.path.join(parent_folder, parent_id + ".jsonl")
        kind = text_of(value.get("type"))
        found = AgentEntry({"type": kind or "unknown"})
        message = value.get("message")
        if kind is None and type(message) is dict:
            converted = anthropic_message(value.get("role"), message.get("content"))
            if converted is not None:
                found.entry.update(type="message", message=_as_typed(converted))
        return found

    def history_prompt(self, value: dict[str, Any]) -> HistoryPrompt | None:
        return None


def _as_typed(message: dict[str, Any]) -> dict[str, Any]:
    """A user turn as the user typed it: the text of its ``<user_query>`` (Cursor wraps the
    prompt in it, next to ``<attached_files>`` and ``<external_links>``); an assistant turn
    without the ``[REDACTED]`` blocks that stand for hidden reasoning."""
    content = message["content"]
    if message["role"] == "user":
        queries = [
            found.group(1).strip()
            for block in content
            if block.get("type") == "text"
            for found in _USER_QUERY.finditer(block["text"])
        ]
        if queries:
            return {**message, "content": [{"type": "text", "text": query} for query in queries]}
    elif message["role"] == "assistant":
        kept = [block for block in content if block.get("text") != REDACTED]
        return {**message, "content": kept}
    return message


READER = CursorReader()
