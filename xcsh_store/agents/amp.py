"""Amp (Sourcegraph) threads: one JSON document per thread,
``${AMP_DATA_DIR:-~/.local/share/amp}/threads/T-<uuid>.json`` (``AMP_DATA_DIR`` is ccusage's
variable for it), ``{v?, id, created, title, cwd?, env?, messages: [...], usageLedger?}``, or
that object wrapped as ``{"thread": {...}}`` (a thread as Amp's API gives it).

A document agent (Agent.kind): the thread is read whole when it changed; record 0 is the
thread itself (id, title, creation time, cwd), record N its Nth message, the locator the index
reads it again by. Threads have no entry ids: the messages are a chain in order.

* ``created`` is an ISO time or milliseconds since the epoch; so is a message's ``created`` /
  ``createdAt`` (or its ``usage.timestamp``). A thread without ``created`` started at its first
  message's time (none of either: its start is unknown). The cwd is the thread's ``cwd``, else
  the first ``env.trees[]`` / ``env.initial.trees[]`` that names a ``cwd`` or a ``file://``
  ``uri`` (percent-decoded; a tree that names only a ``displayName`` gives none).
* Roles ``user``/``human`` are the user's, ``assistant``/``agent`` the assistant's. Content is a
  ``text`` string, or blocks as Anthropic's: ``text``, ``thinking``, ``tool_use`` (a tool call)
  and ``tool_result``; a user message of tool results only is a tool result.
* An assistant message's ``usage`` (``model``, ``inputTokens``, ``outputTokens``,
  ``cacheReadInputTokens``, ``cacheCreationInputTokens``) is its tokens; Amp records credits,
  not dollars, so the cost is the index's estimate from list prices. ``usageLedger`` (older
  threads' per-message ledger) is not read: where a message has no ``usage`` its tokens are not
  known.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote, urlsplit

from xcsh_store.agents.base import (
    Agent,
    AgentEntry,
    Record,
    SessionFacts,
    number,
    text_blocks,
    text_of,
)
from xcsh_store.agents.prices.pricing import price_table
from xcsh_store.format.jsonl import read_document
from xcsh_store.homes import agent_home
from xcsh_store.times import iso_from_millis

DATA_DIR_ENV = "AMP_DATA_DIR"
_THREAD = "amp-thread"
_USER_ROLES = ("user", "human")
_ASSISTANT_ROLES = ("assistant", "agent")


def amp_dir() -> str:
    return agent_home(DATA_DIR_ENV, ".local", "share", "amp")


class AmpReader(Agent):
    name = "amp"
    label = "Amp"
    kind = "document"
    has_ids = False
    folder_variables = (DATA_DIR_ENV,)
    resume = "amp threads continue {id}"
    where = (
        "`$AMP_DATA_DIR/threads`, else `~/.local/share/amp/threads`: `T-<uuid>.json`, one JSON"
        " document per thread"
    )

    def session_roots(self) -> list[str]:
        return [os.path.join(amp_dir(), "threads")]

    def is_session_name(self, name: str) -> bool:
        return name.endswith(".json") and not name.startswith(".")

    def records(self, path: str) -> Iterator[Record]:
        thread = read_document(path)
        if type(thread) is not dict:
            raise ValueError("an Amp thread is a JSON object")
        if type(thread.get("thread")) is dict and "messages" not in thread:
            thread = thread["thread"]
        yield (
            0,
            {
                "type": _THREAD,
                "id": thread.get("id"),
                "title": thread.get("title"),
                "created": thread.get("created"),
                "cwd": _cwd(thread),
            },
        )
        messages = thread.get("messages")
        for position, message in enumerate(messages if type(messages) is list else (), 1):
            if type(message) is dict:
                yield position, message

    def read(self, value: dict[str, Any], session: SessionFacts) -> AgentEntry:
        if value.get("type") == _THREAD:
            return _thread(value, session)
        role = value.get("role")
        timestamp = _time(value.get("created") or value.get("createdAt"))
        usage = value.get("usage")
        if timestamp is None and type(usage) is dict:
            timestamp = _time(usage.get("timestamp"))
        if session.created_at is None:
            session.created_at = timestamp
        entry: dict[str, Any] = {"type": "message", "timestamp": timestamp}
        found = AgentEntry(entry)
        blocks = _blocks(value)
        if role in _USER_ROLES:
            results = [block for block in blocks if block["type"] == "toolResult"]
            if results and len(results) == len(blocks):
                texts = [block["text"] for block in results]
                entry["message"] = {"role": "toolResult", "content": text_blocks(texts)}
            else:
                texts = [block["text"] for block in blocks if "text" in block]
                entry["message"] = {"role": "user", "content": text_blocks(texts)}
        elif role in _ASSISTANT_ROLES:
            kept = [block for block in blocks if block["type"] != "toolResult"]
            entry["message"] = {"role": "assistant", "content": kept}
            if type(usage) is dict:
                _usage(found, usage, timestamp)
        else:
            entry["type"] = "amp-message"
            found.qualifier = text_of(role)
        return found


def _thread(value: dict[str, Any], session: SessionFacts) -> AgentEntry:
    created = _time(value.get("created"))
    session.session_id = text_of(value.get("id")) or session.session_id
    session.cwd = text_of(value.get("cwd"))
    session.created_at = created
    found = AgentEntry({"type": "session_meta", "timestamp": created})
    found.title = text_of(value.get("title"))
    found.title_source = "auto" if found.title else None
    return found


def _cwd(thread: dict[str, Any]) -> str | None:
    cwd = _folder(thread.get("cwd"))
    if cwd is not None:
        return cwd
    env = thread.get("env")
    if type(env) is not dict:
        return None
    for holder in (env, env.get("initial")):
        trees = holder.get("trees") if type(holder) is dict else None
        for tree in trees if type(trees) is list else ():
            if type(tree) is dict:
                cwd = _folder(tree.get("cwd")) or _folder(tree.get("uri"))
                if cwd is not None:
                    return cwd
    return None


def _folder(value: Any) -> str | None:
    """A folder as a path, or a ``file://`` URI made one (percent-decoded); None for a URI of
    another scheme (a remote workspace has no folder here)."""
    text = text_of(value)
    if text is None or "://" not in text:
        return text
    parsed = urlsplit(text)
    if parsed.scheme != "file":
        return None
    return unquote(parsed.path) or None


def _time(value: Any) -> str | None:
    """An ISO time as written, or one from milliseconds since the epoch."""
    if isinstance(value, str) and value:
        return value
    return iso_from_millis(value)


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    """The message's content as blocks of the xcsh model (a tool result as
    ``{"type": "toolResult", "text"}``, unwrapped by the caller)."""
    content = message.get("content")
    if content is None:
        content = message.get("text")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    blocks: list[dict[str, Any]] = []
    for block in content if type(content) is list else ():
        if isinstance(block, str):
            blocks.append({"type": "text", "text": block})
            continue
        if type(block) is not dict:
            continue
        kind = block.get("type")
        if kind in ("text", "thinking") and isinstance(block.get(kind), str):
            blocks.append({"type": kind, kind: block[kind]})
        elif kind == "tool_use":
            blocks.append(
                {"type": "toolCall", "name": block.get("name"), "arguments": block.get("input")}
            )
        elif kind == "tool_result":
            blocks.append({"type": "toolResult", "text": "\n".join(_texts(block.get("content")))})
    return blocks


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    blocks = content if type(content) is list else []
    return [
        block["text"]
        for block in blocks
        if type(block) is dict and isinstance(block.get("text"), str)
    ]


def _usage(found: AgentEntry, usage: dict[str, Any], timestamp: str | None) -> None:
    model = text_of(usage.get("model"))
    figures = (
        number(usage.get("inputTokens")),
        number(usage.get("outputTokens")),
        number(usage.get("cacheReadInputTokens")),
        number(usage.get("cacheCreationInputTokens")),
    )
    table = price_table()
    found.model, found.provider = model, table.provider_of(model)
    found.usage = (*figures, 0, table.tokens_cost(model, timestamp, *figures))


READER = AmpReader()
