"""Gemini CLI chats in JSONL (``$GEMINI_CLI_HOME/.gemini/tmp/<project>/chats/session-*.jsonl``,
``GEMINI_CLI_HOME`` replacing the home folder; a subagent's chat is
``chats/<parent session id>/<session id>.jsonl``), and the older whole-document chats beside
them (``session-*.json``, written up to about v0.3x; a resumed one is renamed ``.jsonl``).

* A document chat is ``{sessionId, projectHash, startTime, lastUpdated, summary?, kind?,
  directories?, messages: [...]}``: read whole when it changed (Agent.kind_of says
  ``document`` for it), record 0 the metadata (as line 1 of a JSONL chat), record N its Nth
  message, read as a JSONL message record is. Such a chat keeps a tool's result only inside
  its call (``toolCalls[].result``, genai parts) unless the next message is a ``user`` one of
  ``functionResponse`` parts: then that message is the result, as in JSONL; else each call
  with a result is a record of its own after its message (locator ``N * 1000 + call``), a
  tool result entry ``<message id>/<call>``.

* Line 1 is the session's metadata (``sessionId``, ``projectHash``, ``startTime``,
  ``lastUpdated``, ``kind``, ``summary``, ``directories``); records without ``type`` that say
  ``$set`` update it (``summary`` titles the session).
* Message records (``id``, ``timestamp``, ``type`` ``user``/``gemini``/``info``/``error``/
  ``warning``, ``content`` as a string or genai parts) name no parent: each continues from the
  one before. A record whose id was seen before replaces that one (the index keeps the later
  line) and keeps its place in the tree.
* ``{"$rewindTo": id}`` drops that message and every later one: what follows branches from the
  message's parent. The rewind is an entry of its own (``$rewindTo:<id>:<n>``, ``n`` the count
  of ids before it, so that two rewinds to one message are two entries), a child of that
  parent, so the tree keeps the dropped messages as the branch left behind. (Rewinds and
  checkpoints hold no text: their ids may depend on earlier lines, and ``show`` takes every
  entry's id and parent from the index, not from its line alone.)
* ``{"$set": {"messages": [...]}}`` is a checkpoint that replaces everything before it: what
  follows continues from its last message (through a ``checkpoint`` entry). The checkpoint
  adds no text: its messages were records before (a message known only from a checkpoint is
  not searchable; an entry's text comes from its own line alone, and the checkpoint repeats
  the whole conversation).
* Usage is each ``gemini`` message's ``tokens`` (one API call): ``input`` less ``cached`` is
  input, ``cached`` is cache reads, ``output`` plus ``thoughts`` is output (Google bills the
  thinking as output), ``tool`` (tool-use prompt tokens) is input. A replaced record counts
  once (its id is its usage key); rewound messages were paid for and still count.
* The file names no cwd: the first folder of the ``<session_context>`` user record that opens
  the conversation is the session's cwd; that record is context, searchable, not a prompt.
* Gemini CLI records some notices of its own as ``user`` messages: a plan-mode switch ("User
  has manually exited Plan Mode. Switching to …", "Plan approved. Switching to …"), the
  editor's context in IDE mode ("Here is the user's editor context …", "Here is a summary of
  changes in the user's editor context …") and a hook's ``<hook_context>``. They are notices
  (``cli_notice``), searchable, never a prompt or the session's first message.
* A tool call's result is written twice: inside the call and as the next ``user`` record of
  ``functionResponse`` parts; the second is the tool result entry.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Any

import orjson

from xcsh_store.agents.base import (
    Agent,
    AgentEntry,
    HistoryPrompt,
    Record,
    SessionFacts,
    Source,
    folder_from,
    number,
    text_blocks,
    text_of,
)
from xcsh_store.agents.prices.pricing import price_table
from xcsh_store.format.jsonl import read_document

# Gemini CLI's own variable: the folder that stands for the home folder (``.gemini`` below it).
HOME_ENV = "GEMINI_CLI_HOME"
FOLDER_VARIABLES = (HOME_ENV,)
CHATS_DIRNAME = "chats"
REWIND_KEY = "$rewindTo"
SET_KEY = "$set"
MESSAGE_TYPES = frozenset({"user", "gemini", "info", "error", "warning"})
NOTICE_TYPES = frozenset({"info", "error", "warning"})
CONTEXT_TAG = "<session_context>"
# How the notices Gemini CLI sends as user messages begin (approvalModeUtils.ts
# getPlanModeExitMessage, client.ts getIdeContextParts, the hook context of a BeforeAgent hook).
_CLI_NOTICE = re.compile(
    r"(?:User has manually exited Plan Mode|Plan approved)\. Switching to "
    r"|Here is (?:the user's editor context|a summary of changes in the user's editor context)\b"
    r"|<hook_context>"
)
CLI_NOTICE = "cli_notice"
DOCUMENT_SUFFIX = ".json"
# A document chat's record of a call's result: the key that marks it, and the locators each
# message leaves for its calls (record N is at N * CALL_SLOTS, its calls' results after it).
TOOL_RESULT_KEY = "$toolResult"
CALL_SLOTS = 1000
# How the context names the workspace: its folders as a list (current releases), or a sentence
# (older ones).
_WORKSPACE = re.compile(
    r"\*\*Workspace Directories:\*\*\s*\n\s*-\s*(\S[^\n]*)|working in the directory:\s*(\S[^\n]*)"
)


def gemini_dir() -> str:
    """``$GEMINI_CLI_HOME/.gemini``, else ``~/.gemini``."""
    return os.path.join(folder_from(HOME_ENV, "~"), ".gemini")


class GeminiReader(Agent):
    name = "gemini"
    label = "Gemini CLI"
    folder_variables = FOLDER_VARIABLES
    resume = "gemini --resume {id}"
    where = (
        "`$GEMINI_CLI_HOME/.gemini/tmp`, else `~/.gemini/tmp`:"
        " `<project>/chats/session-<time>-<id>.jsonl`; a subagent's `chats/<parent id>/<id>.jsonl`;"
        " older releases' (up to about v0.3x) `chats/session-<time>-<id>.json`, one JSON document"
        " per chat"
    )
    has_ids = True
    remembers_parents = True
    other_kind_sources = True

    def recognizes(self, value: dict[str, Any]) -> bool:
        return (
            "type" not in value
            and isinstance(value.get("sessionId"), str)
            and "projectHash" in value
            and "messages" not in value
        )

    def session_roots(self) -> list[str]:
        return [os.path.join(gemini_dir(), "tmp")]

    def kind_of(self, path: str) -> str:
        return "document" if path.endswith(DOCUMENT_SUFFIX) else "jsonl"

    def is_session_name(self, name: str) -> bool:
        return name.endswith(DOCUMENT_SUFFIX) and not name.startswith(".")

    def sources(self, root: str) -> Iterator[Source]:
        """The document chats below ``root``: ``.json`` files in a ``chats`` folder (or in a
        subagent's folder below one); Gemini CLI keeps other JSON files (logs, checkpoints)
        beside ``chats``."""
        for source in super().sources(root):
            folder = os.path.dirname(source.path)
            if CHATS_DIRNAME in (
                os.path.basename(folder), os.path.basename(os.path.dirname(folder))
            ):  # fmt: skip
                yield source

    def records(self, path: str) -> Iterator[Record]:
        chat = read_document(path)
        if type(chat) is not dict:
            raise ValueError("a Gemini CLI chat document is a JSON object")
        messages = chat.get("messages")
        messages = (
            [item for item in messages if type(item) is dict] if type(messages) is list else []
        )
        yield 0, {key: value for key, value in chat.items() if key != "messages"}
        for position, message in enumerate(messages, 1):
            yield position * CALL_SLOTS, message
            following = messages[position] if position < len(messages) else None
            if following is not None and _is_tool_response(following):
                continue
            calls = message.get("toolCalls") if message.get("type") == "gemini" else None
            for call_number, call in enumerate(calls if type(calls) is list else (), 1):
                if type(call) is dict and "result" in call and call_number < CALL_SLOTS:
                    yield (
                        position * CALL_SLOTS + call_number,
                        {TOOL_RESULT_KEY: call, "message": text_of(message.get("id")),
                         "call": call_number, "timestamp": message.get("timestamp")},
                    )  # fmt: skip

    def read(self, value: dict[str, Any], session: SessionFacts) -> AgentEntry:
        if TOOL_RESULT_KEY in value:
            return _call_result(value, session)
        if SET_KEY in value:
            return _set(value[SET_KEY], session)
        if REWIND_KEY in value:
            return _rewind(text_of(value[REWIND_KEY]), session)
        kind = value.get("type")
        if kind is None and "sessionId" in value:
            return _metadata(value, session)
        entry_id = text_of(value.get("id"))
        found = AgentEntry({"type": kind if isinstance(kind, str) else "unknown"})
        if entry_id is not None:
            found.entry.update(id=entry_id, parentId=_place(entry_id, session))
        timestamp = text_of(value.get("timestamp"))
        if timestamp is not None:
            found.entry["timestamp"] = timestamp
        if kind == "user":
            _user(found, value)
            if session.cwd is None and found.qualifier == "session_context":
                session.cwd = workspace_of(message_texts(value))
        elif kind == "gemini":
            _gemini(found, value, timestamp)
        elif kind in NOTICE_TYPES:
            found.entry.update(
                type="custom_message", customType=kind, content=text_blocks(message_texts(value))
            )
            found.qualifier = kind
        else:
            found.qualifier = "unknown"
        return found

    def history_prompt(self, value: dict[str, Any]) -> HistoryPrompt | None:
        return None  # Gemini CLI keeps its prompts in logs.json, a JSON document


def _is_tool_response(message: dict[str, Any]) -> bool:
    """A ``user`` message made of ``functionResponse`` parts only (a tool's result)."""
    parts = _parts(message.get("content"))
    return (
        message.get("type") == "user"
        and bool(parts)
        and all(type(part) is dict and "functionResponse" in part for part in parts)
    )


def _call_result(value: dict[str, Any], session: SessionFacts) -> AgentEntry:
    """A tool call's result kept inside the call (a document chat's ``toolCalls[].result``)."""
    call = value[TOOL_RESULT_KEY] if type(value[TOOL_RESULT_KEY]) is dict else {}
    found = AgentEntry({"type": "message"})
    message_id = text_of(value.get("message"))
    if message_id is not None:
        entry_id = f"{message_id}/{value.get('call')}"
        found.entry.update(id=entry_id, parentId=_place(entry_id, session))
    timestamp = text_of(call.get("timestamp")) or text_of(value.get("timestamp"))
    if timestamp is not None:
        found.entry["timestamp"] = timestamp
    responses = [
        part["functionResponse"]
        for part in _parts(call.get("result"))
        if type(part) is dict and type(part.get("functionResponse")) is dict
    ]
    texts = [_response_text(response) for response in responses]
    if not responses:
        texts = message_texts(call, "result")
    found.entry["message"] = {
        "role": "toolResult",
        "toolName": text_of(call.get("name")),
        "toolCallId": text_of(call.get("id")),
        "isError": call.get("status") == "error",
        "content": text_blocks(text for text in texts if text),
    }
    return found


def _place(entry_id: str, session: SessionFacts) -> str | None:
    """The parent of a message record: the one it replaces had, else the entry before it."""
    if entry_id in session.parents:
        return session.parents[entry_id]
    parent = session.leaf
    session.parents[entry_id] = parent
    session.leaf = entry_id
    return parent


def _metadata(value: dict[str, Any], session: SessionFacts) -> AgentEntry:
    if session.session_id is None:
        session.session_id = text_of(value.get("sessionId"))
        session.created_at = text_of(value.get("startTime"))
        folder = os.path.dirname(session.path)
        if (
            os.path.basename(folder) != CHATS_DIRNAME
            and os.path.basename(os.path.dirname(folder)) == CHATS_DIRNAME
        ):
            session.parent_session_id = os.path.basename(folder)
        directories = value.get("directories")
        if type(directories) is list and directories:
            session.cwd = text_of(directories[0])
    found = AgentEntry({"type": "session_metadata", "timestamp": text_of(value.get("startTime"))})
    found.qualifier = text_of(value.get("kind"))
    _title(found, value)
    return found


def _title(found: AgentEntry, fields: dict[str, Any]) -> None:
    found.title = text_of(fields.get("summary"))
    found.title_source = "auto" if found.title else None


def _set(fields: Any, session: SessionFacts) -> AgentEntry:
    found = AgentEntry({"type": SET_KEY}, qualifier="metadata")
    if type(fields) is not dict:
        return found
    _title(found, fields)
    messages = fields.get("messages")
    if type(messages) is not list:
        return found
    ids = [text_of(message.get("id")) for message in messages if type(message) is dict]
    last = next((entry_id for entry_id in reversed(ids) if entry_id is not None), None)
    found.entry = {"type": "checkpoint"}
    found.qualifier = "checkpoint"
    if last is not None:
        checkpoint = f"{SET_KEY}:{last}:{len(session.parents)}"
        found.entry.update(id=checkpoint, parentId=last)
        session.parents[checkpoint] = last
        session.leaf = checkpoint
    return found


def _rewind(target: str | None, session: SessionFacts) -> AgentEntry:
    found = AgentEntry({"type": REWIND_KEY}, qualifier="rewind")
    if target is None:
        return found
    rewind = f"{REWIND_KEY}:{target}:{len(session.parents)}"
    # (A message the file never held: what follows starts a tree of its own.)
    parent = session.parents.get(target)
    found.entry.update(id=rewind, parentId=parent)
    session.parents[rewind] = parent
    session.leaf = rewind
    return found


def _parts(content: Any) -> list[Any]:
    return content if type(content) is list else [content]


def message_texts(message: dict[str, Any], key: str = "content") -> list[str]:
    """The text of a message's content: a string, or its ``text`` parts."""
    texts = []
    for part in _parts(message.get(key)):
        if isinstance(part, str):
            texts.append(part)
        elif type(part) is dict and isinstance(part.get("text"), str):
            texts.append(part["text"])
    return [text for text in texts if text]


def _user(found: AgentEntry, value: dict[str, Any]) -> None:
    parts = _parts(value.get("content"))
    responses = [
        part["functionResponse"]
        for part in parts
        if type(part) is dict and type(part.get("functionResponse")) is dict
    ]
    if responses and len(responses) == len(parts):
        first = responses[0]
        message = {
            "role": "toolResult",
            "toolName": text_of(first.get("name")),
            "toolCallId": text_of(first.get("id")),
            "content": text_blocks(_response_text(response) for response in responses),
        }
        found.entry.update(type="message", message=message)
        return
    texts = message_texts(value)
    first = texts[0].lstrip() if texts else ""
    written = "session_context" if first.startswith(CONTEXT_TAG) else None
    if written is None and _CLI_NOTICE.match(first):
        written = CLI_NOTICE
    if written is not None:
        # The context Gemini CLI puts before the first prompt, or a notice of its own: both
        # searchable, neither a prompt.
        found.entry.update(type="custom_message", customType=written, content=text_blocks(texts))
        found.qualifier = written
        return
    shown = message_texts(value, "displayContent") if "displayContent" in value else []
    found.entry.update(
        type="message", message={"role": "user", "content": text_blocks(shown or texts)}
    )


def workspace_of(texts: list[str]) -> str | None:
    """The first workspace folder a ``<session_context>`` names (the session's cwd)."""
    for text in texts:
        found = _WORKSPACE.search(text)
        if found is not None:
            return (found.group(1) or found.group(2)).strip().rstrip(".")
    return None


def _response_text(response: dict[str, Any]) -> str:
    """A functionResponse's ``response``: its ``output`` (or ``error``), else its JSON."""
    body = response.get("response")
    if type(body) is dict:
        for key in ("output", "error"):
            if isinstance(body.get(key), str):
                return body[key]
    return orjson.dumps(body).decode() if body is not None else ""


def _gemini(found: AgentEntry, value: dict[str, Any], timestamp: str | None) -> None:
    blocks: list[dict[str, Any]] = []
    for thought in value.get("thoughts") or ():
        if type(thought) is dict:
            said = [text_of(thought.get("subject")), text_of(thought.get("description"))]
            text = ": ".join(part for part in said if part)
            if text:
                blocks.append({"type": "thinking", "thinking": text})
    blocks += text_blocks(message_texts(value))
    blocks += [tool_call(call) for call in value.get("toolCalls") or () if type(call) is dict]
    model = text_of(value.get("model"))
    found.entry.update(type="message", message={"role": "assistant", "content": blocks})
    found.model, found.provider = model, price_table().provider_of(model)
    tokens = value.get("tokens")
    if type(tokens) is dict and "id" in found.entry:
        found.usage = gemini_usage(tokens, model, timestamp)
        found.usage_key = f"gemini:{found.entry['id']}"


def gemini_usage(tokens: dict[str, Any], model: str | None, timestamp: str | None) -> tuple:
    """(input, output, cache read, cache write, premium requests, cost) of one API call's
    ``tokens``."""
    cached = number(tokens.get("cached"))
    figures = (
        max(number(tokens.get("input")) - cached, 0) + number(tokens.get("tool")),
        number(tokens.get("output")) + number(tokens.get("thoughts")),
        cached,
        0,
    )
    return (*figures, 0, price_table().tokens_cost(model, timestamp, *figures))


READER = GeminiReader()


def tool_call(call: dict[str, Any]) -> dict[str, Any]:
    """A Gemini API function call (``id``, ``name``, ``args``; Qwen Code's too) as a block."""
    return {
        "type": "toolCall",
        "id": text_of(call.get("id")),
        "name": call.get("name"),
        "arguments": call.get("args"),
    }
