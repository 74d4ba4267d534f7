"""Factory Droid sessions (``~/.factory/sessions/<project slug>/<session id>.jsonl``, next to
``<session id>.settings.json``).

Line 1 is ``{"type": "session_start", id, title, sessionTitle, cwd, version}`` (``version`` is
Droid's own release, not a format version); then ``{"type": "message", id, parentId,
timestamp, message: {role, content}}`` with Anthropic-style content blocks, ``parentId`` the
tree (the first message's parent is the session_start's id, kept as the tree's root). Other
line types are kept as entries of their own type without text.

Usage: the JSONL records none. Droid keeps the session's token totals in the settings file
(``tokenUsage``), a JSON document beside the log, which this reader does not read (a reader
reads one JSONL file): Droid sessions show no usage.
"""

from __future__ import annotations

import os
from typing import Any

from xcsh_store.agents.base import (
    Agent,
    AgentEntry,
    HistoryPrompt,
    SessionFacts,
    anthropic_message,
    record_entry,
    text_of,
)
from xcsh_store.agents.prices.pricing import price_table

START_TYPE = "session_start"


class DroidReader(Agent):
    name = "droid"
    label = "Factory Droid"
    where = (
        "`~/.factory/sessions`: `<project slug>/<session id>.jsonl` (the `.settings.json` beside"
        " it is not read)"
    )
    has_ids = True
    remembers_parents = False
    # Factory's CLI reference: `droid --resume [sessionId]` (alias -r).
    resume = "droid --resume {id}"

    def recognizes(self, value: dict[str, Any]) -> bool:
        return value.get("type") == START_TYPE and isinstance(value.get("id"), str)

    def session_roots(self) -> list[str]:
        return [os.path.join(os.path.expanduser("~"), ".factory", "sessions")]

    def read(self, value: dict[str, Any], session: SessionFacts) -> AgentEntry:
        kind = text_of(value.get("type"))
        entry = record_entry(value, kind)
        entry_id = entry.get("id")
        found = AgentEntry(entry)
        if kind == START_TYPE:
            session.session_id = session.session_id or entry_id
            session.cwd = session.cwd or text_of(value.get("cwd"))
            found.title = text_of(value.get("sessionTitle")) or text_of(value.get("title"))
            found.title_source = "auto" if found.title else None
        elif kind == "message":
            session.created_at = session.created_at or entry.get("timestamp")
            message = value.get("message")
            if type(message) is dict:
                _message(found, message)
        return found

    def history_prompt(self, value: dict[str, Any]) -> HistoryPrompt | None:
        return None


def _message(found: AgentEntry, message: dict[str, Any]) -> None:
    converted = anthropic_message(message.get("role"), message.get("content"))
    if converted is None:
        return
    found.entry.update(type="message", message=converted)
    if converted["role"] == "assistant":
        model = text_of(message.get("model"))
        found.model, found.provider = model, price_table().provider_of(model)


READER = DroidReader()
