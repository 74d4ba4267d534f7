"""Claude Code transcripts (``~/.claude/projects/<project>/<session>.jsonl``): no header line;
each ``user``/``assistant``/``system`` line has ``uuid`` and ``parentUuid`` (the tree), and
``sessionId``, ``cwd``, ``timestamp``.

* A ``compact_boundary`` line has ``parentUuid: null``; its ``logicalParentUuid`` is the edge
  kept, so the tree stays whole across a compaction. The ``isCompactSummary`` user line after it
  is the summary the model saw from then on: a ``compaction`` entry.
* ``isSidechain`` lines (a Task's conversation, inline in 1.0.x files, and every line of a
  subagent file ``<session>/subagents/agent-<id>.jsonl``) are qualified ``sidechain``.
* One API response is written as several ``assistant`` lines sharing ``message.id`` (one
  content block each), each repeating ``usage``, the earlier ones partial in 1.0.x: their usage
  key is ``message.id`` + ``requestId``, and the last line's usage is what counts.
* ``ai-title`` and ``custom-title`` lines title their session (the last one wins). A
  ``summary`` line (``summary``, ``leafUuid``) is the summary of the conversation that ends at
  ``leafUuid``, most often another file's (a resumed conversation's file opens with the
  summaries of those it continues): it titles the session that holds that entry
  (index/write/summaries.py), not its own.
* A user line is what the user typed: a slash command written as ``<command-name>`` markup is
  ``/name args``; output, caveats and reminders Claude Code put in the user's turn are meta
  entries (typed_prompt).
* Every other line (``progress``, ``file-history-snapshot``, ``queue-operation``, ``attachment``,
  types yet unknown) is an entry of its own type without text.
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
    number,
    text_blocks,
    text_of,
)
from xcsh_store.agents.prices.pricing import price_table
from xcsh_store.format.entries import NAMED_TITLE_SOURCE
from xcsh_store.homes import agent_home

# Types only Claude Code writes as the first line of a file (a user or assistant line also
# has uuid and sessionId, which is what recognizes() checks first).
_OWN_TYPES = frozenset(
    {
        "summary", "file-history-snapshot", "queue-operation", "progress", "attachment",
        "ai-title", "custom-title", "last-prompt", "permission-mode", "mode", "system",
        "user", "assistant",
    }
)  # fmt: skip
# Title lines: the key holding the title, and who set it.
_TITLES = {
    "ai-title": ("aiTitle", "auto"),
    "custom-title": ("customTitle", NAMED_TITLE_SOURCE),
}
SUBAGENT_PREFIX = "agent-"
# Claude Code's folder: $CLAUDE_CONFIG_DIR, else ~/.claude; sessions in projects/, the prompts
# typed in history.jsonl.
CONFIG_DIR_ENV = "CLAUDE_CONFIG_DIR"


def claude_dir() -> str:
    return agent_home(CONFIG_DIR_ENV, ".claude")


class ClaudeReader(Agent):
    name = "claude"
    label = "Claude Code"
    has_ids = True
    folder_variables = (CONFIG_DIR_ENV,)
    # Its first objects are of many types: narrower readers are tried first.
    order = 1000
    resume = "claude --resume {id}"
    where = (
        "`$CLAUDE_CONFIG_DIR/projects`, else `~/.claude/projects`: `<project>/<session id>.jsonl`;"
        " subagents in `<session id>/subagents/agent-<id>.jsonl` (older ones `agent-<id>.jsonl`"
        " beside it)"
    )

    def session_roots(self) -> list[str]:
        return [os.path.join(claude_dir(), "projects")]

    def history_files(self) -> list[str]:
        return [os.path.join(claude_dir(), "history.jsonl")]

    def recognizes(self, value: dict[str, Any]) -> bool:
        if "payload" in value:
            return False
        if isinstance(value.get("uuid"), str) and isinstance(value.get("sessionId"), str):
            return True
        return value.get("type") in _OWN_TYPES

    def read(self, value: dict[str, Any], session: SessionFacts) -> AgentEntry:
        _learn_session(value, session)
        kind = value.get("type")
        kind = kind if isinstance(kind, str) else None
        entry: dict[str, Any] = {"type": kind}
        uuid = text_of(value.get("uuid"))
        if uuid is not None:
            entry["id"] = uuid
            parent = value.get("parentUuid")
            if parent is None and kind == "system":
                parent = value.get("logicalParentUuid")
            entry["parentId"] = text_of(parent)
        timestamp = text_of(value.get("timestamp"))
        if timestamp is not None:
            entry["timestamp"] = timestamp
        found = AgentEntry(entry)
        if value.get("isSidechain") is True:
            found.qualifier = "sidechain"
        message = value.get("message")
        if kind in ("user", "assistant") and type(message) is dict:
            if kind == "assistant":
                _assistant(found, value, message)
            else:
                _user(found, value, message)
        elif kind == "system":
            found.qualifier = text_of(value.get("subtype")) or found.qualifier
        elif kind in _TITLES:
            key, source = _TITLES[kind]
            found.title = text_of(value.get(key))
            found.title_source = source if found.title else None
        elif kind == "summary":
            leaf, summary = text_of(value.get("leafUuid")), text_of(value.get("summary"))
            found.leaf_summary = (leaf, summary) if leaf and summary else None
        return found

    def history_prompt(self, value: dict[str, Any]) -> HistoryPrompt | None:
        """``{"display", "timestamp" (ms), "project", "sessionId"?}``."""
        prompt, timestamp = text_of(value.get("display")), value.get("timestamp")
        if prompt is None or isinstance(timestamp, bool) or not isinstance(timestamp, int | float):
            return None
        return HistoryPrompt(
            prompt, timestamp / 1000, text_of(value.get("project")), text_of(value.get("sessionId"))
        )


def _learn_session(value: dict[str, Any], session: SessionFacts) -> None:
    if session.session_id is None:
        # Claude Code names each file by its session id (a subagent's by its agent id), and
        # the name is known before any line: a sync that reads the file in parts agrees.
        session.session_id = os.path.basename(session.path).removesuffix(".jsonl")
        folder = os.path.dirname(session.path)
        if (
            session.session_id.startswith(SUBAGENT_PREFIX)
            and os.path.basename(folder) == "subagents"
        ):
            parent_folder = os.path.dirname(folder)
            session.parent_session_id = os.path.basename(parent_folder)
            session.parent_session = parent_folder + ".jsonl"
    if session.parent_session_id is None and "agentId" in value:
        named = text_of(value.get("sessionId"))
        if named is not None and named != session.session_id:
            session.parent_session_id = named  # an older agent-*.jsonl beside its parent
    if session.cwd is None:
        session.cwd = text_of(value.get("cwd"))
    if session.created_at is None:
        session.created_at = text_of(value.get("timestamp"))


def _assistant(found: AgentEntry, value: dict[str, Any], message: dict[str, Any]) -> None:
    content = message.get("content")
    blocks: list[dict[str, Any]] = []
    for block in content if type(content) is list else [content]:
        if isinstance(block, str):
            blocks.append({"type": "text", "text": block})
        elif type(block) is dict:
            kind = block.get("type")
            if kind == "text" or kind == "thinking":
                text = block.get(kind)
                if isinstance(text, str):
                    blocks.append({"type": kind, kind: text})
            elif kind == "tool_use":
                blocks.append(
                    {"type": "toolCall", "id": text_of(block.get("id")), "name": block.get("name"),
                     "arguments": block.get("input")}
                )  # fmt: skip
    model = text_of(message.get("model"))
    found.entry.update(type="message", message={"role": "assistant", "content": blocks})
    # Claude Code also runs other providers' models (through their Anthropic-compatible APIs,
    # or a proxy): the provider is the one the model's name tells, none when it tells none.
    found.model, found.provider = model, price_table().provider_of(model)
    usage = message.get("usage")
    if type(usage) is dict:
        found.usage = claude_usage(usage, model, text_of(value.get("timestamp")))
        message_id = text_of(message.get("id"))
        if message_id is not None:
            found.usage_key = f"{message_id}:{value.get('requestId') or ''}"


def claude_usage(
    usage: dict[str, Any], model: str | None, timestamp: str | None
) -> tuple[Any, ...]:
    """(input, output, cache read, cache write, premium requests, cost) of a usage object.

    ``cache_creation`` splits the cache writes by lifetime: ``ephemeral_1h_input_tokens`` are
    billed at the 1-hour rate (2x input), the rest at the 5-minute one (1.25x).
    """
    figures = (
        number(usage.get("input_tokens")),
        number(usage.get("output_tokens")),
        number(usage.get("cache_read_input_tokens")),
        number(usage.get("cache_creation_input_tokens")),
    )
    split = usage.get("cache_creation")
    one_hour = number(split.get("ephemeral_1h_input_tokens")) if type(split) is dict else 0
    cost = price_table().tokens_cost(model, timestamp, *figures, min(one_hour, figures[3]))
    return (*figures, 0, cost)


def _user(found: AgentEntry, value: dict[str, Any], message: dict[str, Any]) -> None:
    content = message.get("content")
    blocks: list[Any] = content if type(content) is list else [content]
    results = [
        block for block in blocks if type(block) is dict and block.get("type") == "tool_result"
    ]
    if results and len(results) == len(blocks):
        texts = []
        for block in results:
            texts += _texts(block.get("content"))
        result: dict[str, Any] = {"role": "toolResult", "content": text_blocks(texts)}
        if len(results) == 1 and isinstance(call := results[0].get("tool_use_id"), str):
            result["toolCallId"] = call  # (the call it answers names the tool)
        if any(block.get("is_error") is True for block in results):
            result["isError"] = True
        found.entry.update(type="message", message=result)
        return
    texts = []
    for block in blocks:
        texts += _texts(
            block.get("content")
            if type(block) is dict and block.get("type") == "tool_result"
            else [block]
        )
    typed = None if value.get("isMeta") is True else typed_prompt(texts)
    if value.get("isCompactSummary") is True:
        found.entry.update(type="compaction", summary="\n".join(texts))
    elif typed is None:
        # Text the agent put in the user's turn (command output, caveats, reminders): not a
        # prompt, but searchable.
        found.entry.update(type="custom_message", customType="meta", content=text_blocks(texts))
        found.qualifier = found.qualifier or "meta"
    else:
        found.entry.update(type="message", message={"role": "user", "content": text_blocks(typed)})


# How Claude Code writes what the user typed. A slash command: ``<command-name>/review
# </command-name>`` with ``<command-message>`` and ``<command-args>``, in either order; a shell
# command typed after ``!``: ``<bash-input>``.
_COMMAND_NAME = re.compile(r"<command-name>(.*?)</command-name>", re.DOTALL)
_COMMAND_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.DOTALL)
_BASH_INPUT = re.compile(r"<bash-input>(.*?)</bash-input>", re.DOTALL)
# What it writes into the user's turn that the user did not type: a local command's output, the
# output of a ``!`` command, a background task's notice, a hook's output.
_INJECTED = re.compile(
    r"\s*<(local-command-std(?:out|err)|local-command-caveat|bash-std(?:out|err)"
    r"|task-notification|user-prompt-submit-hook)>"
)
# Reminders it adds to a prompt (files opened in the IDE, the todo list).
_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.DOTALL)


def typed_prompt(texts: list[str]) -> list[str] | None:
    """The text blocks of a user line as the user typed them: a slash command as ``/name
    args`` (not its markup), a shell command as ``!command``, a prompt without the reminders
    added to it; None for a line the user typed none of."""
    joined = "\n".join(texts)
    command = _COMMAND_NAME.search(joined)
    if command is not None:
        name = command.group(1).strip()
        arguments = _COMMAND_ARGS.search(joined)
        typed = f"{'' if name.startswith('/') else '/'}{name}"
        rest = arguments.group(1).strip() if arguments is not None else ""
        return [f"{typed} {rest}" if rest else typed]
    shell = _BASH_INPUT.search(joined)
    if shell is not None:
        return [f"!{shell.group(1)}"]
    if _INJECTED.match(joined):
        return None
    if "<system-reminder>" not in joined:
        return texts
    kept = [without for text in texts if (without := _REMINDER.sub("", text).strip())]
    return kept or None


def _texts(content: Any) -> list[str]:
    """The strings of a content value: a string, or its ``text`` blocks."""
    if isinstance(content, str):
        return [content]
    if type(content) is not list:
        return []
    texts = []
    for block in content:
        if isinstance(block, str):
            texts.append(block)
        elif (
            type(block) is dict
            and block.get("type") == "text"
            and isinstance(block.get("text"), str)
        ):
            texts.append(block["text"])
    return texts


READER = ClaudeReader()
